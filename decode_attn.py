"""The denoising steps' attention as one Triton kernel, for serving on a GPU (sample_actions(denoise_attn='triton')).

In a denoising step 50 action queries per head attend to the cached prefix keys and to the 50 action keys. pi05 has
one K/V head for 8 query heads, so the query heads of a K/V head are stacked as the rows of one matrix (as
model.attention's 'grouped' does with two batched GEMMs): one program takes BLOCK_M of those rows, reads the prefix
keys and then the action keys where they lie (no concatenation), and keeps a running softmax in fp32 (flash
attention's online form), so the products, the softmax and the two concatenations are one kernel instead of six.
The numbers: bf16 q.k^T summed in fp32, the additive mask added in fp32, p rounded to bf16 for p.v, fp32 sums; the
same as 'grouped' up to where the softmax is normalised (test_equivalence.py compares the two on the GPU, and on
the CPU through Triton's interpreter when triton is installed).

    python bench.py --infer=True --infer_variants=step,triton       # its latency next to the whole-step grouped row
    python docs/runs/z_ae_decode_attn.py                            # the kernel alone, its block sizes swept
"""
import os

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # the CPU build of torch comes without triton; 'triton' then runs model.attention's 'grouped'
    triton = None

BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES = 16, 64, 4, 2  # untimed defaults; docs/runs/z_ae_decode_attn.py sweeps them
INTERPRET = os.environ.get('TRITON_INTERPRET') == '1'  # Triton's own switch: its kernels run on the CPU (tests)


def usable(q):
    """Whether the kernel can serve this call: triton importable, a CUDA tensor (or Triton's interpreter on), no
    gradient wanted (a guided real-time-chunking step differentiates through the attention: the kernel has no
    backward)."""
    return triton is not None and (q.is_cuda or INTERPRET) and not (torch.is_grad_enabled() and q.requires_grad)


if triton is not None:
    @triton.jit
    def _block(acc, m_i, l_i, q, rows_t, row_ok, K, V, Mask, n, T, key0, skt, svt, smq, smk, scale,
               DH: tl.constexpr, BLOCK_N: tl.constexpr):
        """Keys n .. n + BLOCK_N of one key segment (the cached prefix, or the action keys) folded into the running
        softmax."""
        d = tl.arange(0, DH)
        cols = n + tl.arange(0, BLOCK_N)
        col_ok = cols < T
        k = tl.load(K + cols[None, :] * skt + d[:, None], mask=col_ok[None, :], other=0.0)          # (DH, BLOCK_N)
        s = tl.dot(q, k) * scale                                                                    # fp32
        mk = tl.load(Mask + rows_t[:, None] * smq + (key0 + cols)[None, :] * smk,
                     mask=row_ok[:, None] & col_ok[None, :], other=0.0)
        s = tl.where(col_ok[None, :], s + mk, float('-inf'))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + cols[:, None] * svt + d[None, :], mask=col_ok[:, None], other=0.0)          # (BLOCK_N, DH)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        return acc, m_new, l_i

    @triton.jit
    def _decode_kernel(Q, K1, V1, K2, V2, Mask, O, scale, Tq, T1, T2, Hkv,
                       sqb, sqt, sqh, sk1b, sk1t, sk1h, sv1b, sv1t, sv1h, sk2b, sk2t, sk2h, sv2b, sv2t, sv2h,
                       smb, smq, smk, sob, sot, soh,
                       G: tl.constexpr, DH: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        bh = tl.program_id(0)
        b, kvh = bh // Hkv, bh % Hkv
        rows = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)  # stacked rows in (query, head) order
        row_ok = rows < Tq * G
        t, h = rows // G, kvh * G + rows % G
        d = tl.arange(0, DH)
        q = tl.load(Q + b * sqb + t[:, None] * sqt + h[:, None] * sqh + d[None, :], mask=row_ok[:, None], other=0.0)
        m_i = tl.full((BLOCK_M,), float('-inf'), tl.float32)
        l_i = tl.zeros((BLOCK_M,), tl.float32)
        acc = tl.zeros((BLOCK_M, DH), tl.float32)
        Mb = Mask + b * smb
        K1, V1 = K1 + b * sk1b + kvh * sk1h, V1 + b * sv1b + kvh * sv1h
        K2, V2 = K2 + b * sk2b + kvh * sk2h, V2 + b * sv2b + kvh * sv2h
        for n in range(0, T1, BLOCK_N):  # the cached prefix
            acc, m_i, l_i = _block(acc, m_i, l_i, q, t, row_ok, K1, V1, Mb, n, T1, 0, sk1t, sv1t, smq, smk, scale,
                                   DH, BLOCK_N)
        for n in range(0, T2, BLOCK_N):  # the action keys, after the prefix in the mask's key order
            acc, m_i, l_i = _block(acc, m_i, l_i, q, t, row_ok, K2, V2, Mb, n, T2, T1, sk2t, sv2t, smq, smk, scale,
                                   DH, BLOCK_N)
        o = acc / l_i[:, None]
        tl.store(O + b * sob + t[:, None] * sot + h[:, None] * soh + d[None, :], o.to(O.dtype.element_ty),
                 mask=row_ok[:, None])


def launch(q, k1, v1, k2, v2, mask, block_m=None, block_n=None, num_warps=None, num_stages=None):
    """q (B, Tq, Hq, Dh), k1/v1 (B, T1, Hkv, Dh) the cached prefix, k2/v2 (B, T2, Hkv, Dh) the action keys, mask
    additive (B, 1, Tq, T1 + T2) -> (B, Tq, Hq * Dh) in q's dtype. Block sizes default to the module's."""
    B, Tq, Hq, Dh = q.shape
    Hkv = k1.shape[2]
    q, k1, v1, k2, v2 = (x if x.stride(-1) == 1 else x.contiguous() for x in (q, k1, v1, k2, v2))  # rows of Dh
    o = q.new_empty(B, Tq, Hq, Dh)
    bm = block_m or BLOCK_M
    grid = (B * Hkv, triton.cdiv(Tq * (Hq // Hkv), bm))
    _decode_kernel[grid](q, k1, v1, k2, v2, mask, o, Dh ** -0.5, Tq, k1.shape[1], k2.shape[1], Hkv,
                         q.stride(0), q.stride(1), q.stride(2), k1.stride(0), k1.stride(1), k1.stride(2),
                         v1.stride(0), v1.stride(1), v1.stride(2), k2.stride(0), k2.stride(1), k2.stride(2),
                         v2.stride(0), v2.stride(1), v2.stride(2), mask.stride(0), mask.stride(2), mask.stride(3),
                         o.stride(0), o.stride(1), o.stride(2), G=Hq // Hkv, DH=Dh, BLOCK_M=bm,
                         BLOCK_N=block_n or BLOCK_N, num_warps=num_warps or NUM_WARPS,
                         num_stages=num_stages or NUM_STAGES)
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
