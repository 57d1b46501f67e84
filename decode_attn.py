"""The denoising steps' attention as one Triton kernel, for serving on a GPU (sample_actions(denoise_attn='triton')).

In a denoising step 50 action queries per head attend to the cached prefix keys and to the 50 action keys. pi05 has
one K/V head for 8 query heads, so the query heads of a K/V head are stacked as the rows of one matrix (as
model.attention's 'grouped' does with two batched GEMMs): one program takes BLOCK_M of those rows, reads the prefix
keys and then the action keys where they lie (no concatenation), and keeps a running softmax in fp32 (flash
attention's online form), so the products, the softmax and the two concatenations are one kernel instead of six.
At batch 1 that is only 25 programs for a GPU of 132 SMs, so the keys can be split over more programs whose partial
softmaxes a second small kernel combines (flash-decoding). The numbers: bf16 q.k^T summed in fp32, the additive mask
in fp32, p rounded to bf16 for p.v, fp32 sums; the same as 'grouped' up to where the softmax is normalised
(test_equivalence.py compares the two on the GPU, and on the CPU through Triton's interpreter when triton is
installed).

    python bench.py --infer=True --infer_variants=step,triton       # its latency next to the whole-step grouped row
    python docs/runs/z_ae_decode_attn.py                            # the kernel alone, its configurations swept
"""
import os

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # the CPU build of torch comes without triton; 'triton' then runs model.attention's 'grouped'
    triton = None

BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES = 16, 128, 4, 2  # the fastest without key splits (H100, 2026-12-06)
PROGRAMS = 0  # key splits aim at about this many programs (an H100 has 132 SMs); 0: none (splits are untimed)
INTERPRET = os.environ.get('TRITON_INTERPRET') == '1'  # Triton's own switch: its kernels run on the CPU (tests)


def usable(q):
    """Whether the kernel can serve this call: triton importable, a CUDA tensor (or Triton's interpreter on), no
    gradient wanted (a guided real-time-chunking step differentiates through the attention: the kernel has no
    backward)."""
    half = q.dtype in (torch.bfloat16, torch.float16)  # fp32 inputs would get TF32 products, below 'grouped's fp32
    return (triton is not None and ((q.is_cuda and half) or INTERPRET)
            and not (torch.is_grad_enabled() and q.requires_grad))


if triton is not None:
    @triton.jit
    def attend_keys(q, K, V, skt, svt, Mb, smk, col0, lo, hi, row_ok, d, m_i, l_i, acc, scale, BLOCK_N: tl.constexpr):
        """The running softmax (max m_i, sum l_i, unnormalised output acc) carried over keys [lo, hi) of one source, the
        cached prefix (col0 0) or the action keys (col0 T1: the mask's column of their key 0). One source per loop
        keeps one K and one V block per pipeline stage in shared memory."""
        for n in range(lo, hi, BLOCK_N):
            cols = n + tl.arange(0, BLOCK_N)
            ok = cols < hi
            k = tl.load(K + cols[None, :] * skt + d[:, None], mask=ok[None, :], other=0.0)                # (DH, N)
            s = tl.dot(q, k) * scale                                                                     # fp32
            mk = tl.load(Mb + (col0 + cols)[None, :] * smk, mask=row_ok[:, None] & ok[None, :], other=0.0)
            # masked keys (the additive mask's -2.4e38) as -inf, so no logit near the float range's end is scaled
            # or subtracted; m_use keeps a block with no visible key yet from computing -inf - -inf
            s = tl.where(ok[None, :] & (mk > -1e30), s + mk, float('-inf'))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_use = tl.where(m_new == float('-inf'), 0.0, m_new)
            alpha = tl.exp(m_i - m_use)
            p = tl.exp(s - m_use[:, None])
            l_i = l_i * alpha + tl.sum(p, 1)
            v = tl.load(V + cols[:, None] * svt + d[None, :], mask=ok[:, None], other=0.0)                # (N, DH)
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
            m_i = m_new
        return m_i, l_i, acc

    @triton.jit
    def decode_attention_kernel(Q, K1, V1, K2, V2, Mask, O, Part, scale, Tq, T1, T2, Hkv, keys_per_split,
                sqb, sqt, sqh, sk1b, sk1t, sk1h, sv1b, sv1t, sv1h, sk2b, sk2t, sk2h, sv2b, sv2t, sv2h,
                smb, smq, smk, sob, sot, soh,
                G: tl.constexpr, DH: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                SPLIT: tl.constexpr):
        """BLOCK_M stacked rows of one K/V head over one split of the keys (all of them when not SPLIT): key j < T1
        is the cached prefix's j, key T1 + j the action keys' j, as the mask orders them. Not SPLIT: the output.
        SPLIT: the unnormalised output, the running max and the sum for decode_attention_combine, in Part."""
        bh, rb, sp = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        b, kvh = bh // Hkv, bh % Hkv
        rows = rb * BLOCK_M + tl.arange(0, BLOCK_M)  # stacked rows in (query, head) order
        row_ok = rows < Tq * G
        t, h = rows // G, kvh * G + rows % G
        d = tl.arange(0, DH)
        q = tl.load(Q + b * sqb + t[:, None] * sqt + h[:, None] * sqh + d[None, :], mask=row_ok[:, None], other=0.0)
        K1, V1 = K1 + b * sk1b + kvh * sk1h, V1 + b * sv1b + kvh * sv1h
        K2, V2 = K2 + b * sk2b + kvh * sk2h, V2 + b * sv2b + kvh * sv2h
        Mb = Mask + b * smb + t[:, None] * smq
        m_i = tl.full((BLOCK_M,), float('-inf'), tl.float32)
        l_i = tl.zeros((BLOCK_M,), tl.float32)
        acc = tl.zeros((BLOCK_M, DH), tl.float32)
        start = sp * keys_per_split
        stop = tl.minimum(start + keys_per_split, T1 + T2)
        m_i, l_i, acc = attend_keys(q, K1, V1, sk1t, sv1t, Mb, smk, 0, start, tl.minimum(stop, T1), row_ok, d,
                                    m_i, l_i, acc, scale, BLOCK_N)
        m_i, l_i, acc = attend_keys(q, K2, V2, sk2t, sv2t, Mb, smk, T1, tl.maximum(start - T1, 0), stop - T1, row_ok,
                                    d, m_i, l_i, acc, scale, BLOCK_N)
        if SPLIT:  # Part: (splits, B * Hkv, Tq * G, DH + 2) fp32: acc, then m and l
            R = Tq * G
            P = Part + ((sp * tl.num_programs(0) + bh) * R + rows) * (DH + 2)
            tl.store(P[:, None] + d[None, :], acc, mask=row_ok[:, None])
            tl.store(P + DH, m_i, mask=row_ok)
            tl.store(P + DH + 1, l_i, mask=row_ok)
        else:
            o = acc / l_i[:, None]
            tl.store(O + b * sob + t[:, None] * sot + h[:, None] * soh + d[None, :], o.to(O.dtype.element_ty),
                     mask=row_ok[:, None])

    @triton.jit
    def decode_attention_combine(Part, O, splits, Tq, Hkv, BH, sob, sot, soh,
                 G: tl.constexpr, DH: tl.constexpr, BLOCK_M: tl.constexpr):
        """The splits' partial softmaxes of BLOCK_M rows rescaled to their common max and summed."""
        bh, rb = tl.program_id(0), tl.program_id(1)
        b, kvh = bh // Hkv, bh % Hkv
        R = Tq * G
        rows = rb * BLOCK_M + tl.arange(0, BLOCK_M)
        row_ok = rows < R
        t, h = rows // G, kvh * G + rows % G
        d = tl.arange(0, DH)
        m = tl.full((BLOCK_M,), float('-inf'), tl.float32)
        for sp in range(0, splits):
            m = tl.maximum(m, tl.load(Part + ((sp * BH + bh) * R + rows) * (DH + 2) + DH, mask=row_ok, other=0.0))
        m = tl.where(m == float('-inf'), 0.0, m)
        acc = tl.zeros((BLOCK_M, DH), tl.float32)
        l = tl.zeros((BLOCK_M,), tl.float32)
        for sp in range(0, splits):
            P = Part + ((sp * BH + bh) * R + rows) * (DH + 2)
            w = tl.exp(tl.load(P + DH, mask=row_ok, other=float('-inf')) - m)
            l += w * tl.load(P + DH + 1, mask=row_ok, other=0.0)
            acc += w[:, None] * tl.load(P[:, None] + d[None, :], mask=row_ok[:, None], other=0.0)
        o = acc / l[:, None]
        tl.store(O + b * sob + t[:, None] * sot + h[:, None] * soh + d[None, :], o.to(O.dtype.element_ty),
                 mask=row_ok[:, None])


def split_keys(T, block_n, splits):
    """-> (splits, keys per split): whole key blocks per split, so a request for more splits than key blocks, or
    one that does not divide them, gives fewer."""
    per_split = triton.cdiv(triton.cdiv(T, splits), block_n) * block_n
    return triton.cdiv(T, per_split), per_split


def launch(q, k1, v1, k2, v2, mask, block_m=None, block_n=None, num_warps=None, num_stages=None, splits=None):
    """q (B, Tq, Hq, Dh), k1/v1 (B, T1, Hkv, Dh) the cached prefix, k2/v2 (B, T2, Hkv, Dh) the action keys, mask
    additive (B, 1, Tq, T1 + T2) -> (B, Tq, Hq * Dh) in q's dtype. Block sizes default to the module's; splits (of
    the keys over more programs, then one more kernel to combine them) to about PROGRAMS programs (0: no splits)."""
    B, Tq, Hq, Dh = q.shape
    Hkv, T = k1.shape[2], k1.shape[1] + k2.shape[1]
    G, bm, bn = Hq // Hkv, block_m or BLOCK_M, block_n or BLOCK_N
    q, k1, v1, k2, v2 = (x if x.stride(-1) == 1 else x.contiguous() for x in (q, k1, v1, k2, v2))  # rows of Dh
    o = q.new_empty(B, Tq, Hq, Dh)
    if splits is None:
        splits = max(1, PROGRAMS // (B * Hkv * triton.cdiv(Tq * G, bm)))
    splits, per_split = split_keys(T, bn, splits)
    part = q.new_empty(splits, B * Hkv, Tq * G, Dh + 2, dtype=torch.float32) if splits > 1 else o
    grid = (B * Hkv, triton.cdiv(Tq * G, bm), splits)
    decode_attention_kernel[grid](
        q, k1, v1, k2, v2, mask, o, part, Dh ** -0.5, Tq, k1.shape[1], k2.shape[1], Hkv, per_split,
        q.stride(0), q.stride(1), q.stride(2), k1.stride(0), k1.stride(1), k1.stride(2),
        v1.stride(0), v1.stride(1), v1.stride(2), k2.stride(0), k2.stride(1), k2.stride(2),
        v2.stride(0), v2.stride(1), v2.stride(2), mask.stride(0), mask.stride(2), mask.stride(3),
        o.stride(0), o.stride(1), o.stride(2), G=G, DH=Dh, BLOCK_M=bm, BLOCK_N=bn, SPLIT=splits > 1,
        num_warps=num_warps or NUM_WARPS, num_stages=num_stages or NUM_STAGES)
    if splits > 1:
        decode_attention_combine[grid[:2]](part, o, splits, Tq, Hkv, B * Hkv, o.stride(0), o.stride(1), o.stride(2),
                                           G=G, DH=Dh, BLOCK_M=bm, num_warps=num_warps or NUM_WARPS)
    return o.view(B, Tq, Hq * Dh)


@torch.library.custom_op('pi05::decode_attention', mutates_args=())
def attention(q: torch.Tensor, k1: torch.Tensor, v1: torch.Tensor, k2: torch.Tensor, v2: torch.Tensor,
              mask: torch.Tensor) -> torch.Tensor:
    """launch() as an operator torch.compile keeps whole (its graph calls the kernel; a CUDA graph replays it)."""
    return launch(q, k1, v1, k2, v2, mask)


@attention.register_fake
def _(q, k1, v1, k2, v2, mask):
    B, Tq, Hq, Dh = q.shape
    return q.new_empty(B, Tq, Hq * Dh)
