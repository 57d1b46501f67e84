"""The action expert's projections at batch 1 as one Triton kernel, for serving (GraphedSampler(small_gemm=True)).

In a denoising step at batch 1 the expert multiplies 50 rows by each of its weight matrices, so a projection is a
read of the weights with a little arithmetic on the side. cuBLAS tiles the 50 rows and the outputs so that some
projections run on a third of the GPU's SMs (o_proj: 48 tiles of 24 x 64) or need a second kernel to add up a split
over K (down_proj). Here one program takes BLOCK_N outputs for all rows (up to 64) over one of SPLIT parts of K, so
that the programs (config(): about as many as the GPU has SMs, where N and K allow) each stream their slice of the
weights once. With SPLIT > 1 each program stores its fp32 partial sum, and the last program of an output tile to
finish (an atomic counter) adds the partials up in split order, so the result does not depend on which program
finished first, and writes it in the input's dtype. Products in bf16 with fp32 sums, as cuBLAS; only the order of
the sums differs. One stream at a time: the counters are shared by every call on a device.
Opt-in: on one H100 (2026-12-06) it took 0.3 ms off a batch-1 call (gate/up and down_proj through it; alone it did
not beat cuBLAS at q/k/v and o_proj, which CONFIGS leaves to cuBLAS); its GPU tests pass. Hinting the next
projection's weight into L2 from inside the kernel was tried (docs/logs/small_gemm_l2_hints.patch) and only slowed
these GEMMs down: they wait on their own latency, not on memory.

    python docs/runs/z_al_skinny_gemm.py      # the kernel against cuBLAS at pi05's expert shapes, configurations swept
    python bench.py --infer=True --infer_variants=step,small    # serve.py's default without and with it
"""
import os

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # the CPU build of torch comes without triton; F.linear then serves
    triton = None

MAX_ROWS = 64  # one block of rows: batch 1 (50 action rows); more rows go to cuBLAS
CONFIGS = {(2560, 1024): None, (1024, 2048): None, (8192, 1024): (64, 128, 1, 4), (1024, 4096): (32, 256, 4, 4)}   # (N, K) -> (BLOCK_N, BLOCK_K, SPLIT, NUM_STAGES) or None (cuBLAS), as docs/runs/z_al_skinny_gemm.py
               # --write records its sweep's fastest; other shapes: config()'s rule
PROGRAMS = 132  # config()'s split count aims at about this many programs (an H100 or H200 has 132 SMs)
COUNTERS = 4096  # output tiles one call may have (N / BLOCK_N)
INTERPRET = os.environ.get('TRITON_INTERPRET') == '1'  # Triton's own switch: its kernels run on the CPU (tests)


def config(N, K):
    """(BLOCK_N, BLOCK_K, SPLIT, NUM_STAGES) for an (N, K) weight: CONFIGS' entry (swept on an H100), else 64 outputs
    per program and K split into a power of two of 128-wide blocks so that the programs number about PROGRAMS (an
    untimed rule: in the H100 sweep such splits were slower than cuBLAS at pi05's shapes); None: cuBLAS serves."""
    if (N, K) in CONFIGS:
        return CONFIGS[N, K]
    if N % 64 or K % 128:
        return None
    split = 1
    while (N // 64) * split * 2 <= PROGRAMS and K % (split * 2 * 128) == 0:
        split *= 2
    return 64, 128, split, 4


def usable(x, w):
    """Whether the kernel can serve x @ w^T: triton importable, CUDA half-precision tensors (or Triton's
    interpreter on), at most MAX_ROWS rows, a weight shape config() covers, no gradient wanted (no backward)."""
    half = x.dtype in (torch.bfloat16, torch.float16)
    return (triton is not None and ((x.is_cuda and half) or INTERPRET) and w.dim() == 2
            and x.numel() // max(1, x.shape[-1]) <= MAX_ROWS and config(*w.shape) is not None
            and not (torch.is_grad_enabled() and (x.requires_grad or w.requires_grad)))


if triton is not None:
    @triton.jit
    def small_gemm_kernel(X, W, Y, Part, Count, M, N, K, sxm, swn, sym, k_per_split,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT: tl.constexpr):
        """Outputs [pn * BLOCK_N, +BLOCK_N) of all M rows over K's part ps; with SPLIT, the partial goes to Part and
        the tile's last program to finish sums the SPLIT partials in order."""
        pn, ps = tl.program_id(0), tl.program_id(1)
        rm, rn, rk = tl.arange(0, BLOCK_M), pn * BLOCK_N + tl.arange(0, BLOCK_N), tl.arange(0, BLOCK_K)
        m_ok = rm < M
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        k0 = ps * k_per_split
        for k in range(k0, k0 + k_per_split, BLOCK_K):
            x = tl.load(X + rm[:, None] * sxm + (k + rk)[None, :], mask=m_ok[:, None], other=0.0)
            w = tl.load(W + rn[:, None] * swn + (k + rk)[None, :])                                  # (N, K) block
            acc = tl.dot(x, tl.trans(w), acc)
        out = Y + rm[:, None] * sym + rn[None, :]
        if SPLIT == 1:
            tl.store(out, acc.to(Y.dtype.element_ty), mask=m_ok[:, None])
        else:
            part = (Part + pn * SPLIT * BLOCK_M * BLOCK_N + tl.arange(0, BLOCK_M)[:, None] * BLOCK_N
                    + tl.arange(0, BLOCK_N)[None, :])
            tl.store(part + ps * BLOCK_M * BLOCK_N, acc, mask=m_ok[:, None])
            tl.debug_barrier()  # every thread's share of the partial is written before the counter releases it
            done = tl.atomic_add(Count + pn, 1, sem='acq_rel', scope='gpu')  # and sees the other programs' partials
            if done == SPLIT - 1:
                total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
                for s in range(SPLIT):  # in split order, whichever program came last
                    total += tl.load(part + s * BLOCK_M * BLOCK_N, mask=m_ok[:, None], other=0.0,
                                     cache_modifier='.cg')
                tl.store(out, total.to(Y.dtype.element_ty), mask=m_ok[:, None])
                tl.atomic_xchg(Count + pn, 0)  # zero again for the next call (a CUDA graph replays this one)


_counters = {}  # device -> int32 counters, zero between calls (each call's last programs reset theirs)


def launch(x, w, block_n=None, block_k=None, split=None, num_stages=None, part=None):
    """x (..., K) with at most MAX_ROWS rows, w (N, K) -> x @ w^T (..., N) in x's dtype. The block sizes and split
    default to config()'s; part: the fp32 workspace of the partial sums (tests pass one filled with NaN)."""
    if triton is None:
        raise RuntimeError('small_gemm needs triton (pip install triton; the CPU build of torch comes without it)')
    N, K = w.shape
    dn, dk, ds, dst = config(N, K) or (64, 128, 1, 4)
    bn, bk, split, stages = block_n or dn, block_k or dk, split or ds, num_stages or dst
    x2 = x.reshape(-1, K)
    M = x2.shape[0]
    tiles = N // bn
    if M > MAX_ROWS or N % bn or K % (split * bk) or tiles > COUNTERS:
        raise ValueError(f'small_gemm: {M} rows (at most {MAX_ROWS}), N {N} (a multiple of {bn}, at most {COUNTERS} '
                         f'tiles), K {K} (a multiple of {split} x {bk})')
    x2, w = (t if t.stride(-1) == 1 else t.contiguous() for t in (x2, w))
    y = x2.new_empty(M, N)
    counters = _counters.get(x.device)
    if counters is None:  # once per device, never reallocated (CUDA graphs keep its address)
        counters = _counters[x.device] = torch.zeros(COUNTERS, dtype=torch.int32, device=x.device)
    need = tiles * split * MAX_ROWS * bn
    if split == 1:
        part = y
    elif part is None:
        part = x2.new_empty(need, dtype=torch.float32)
    elif part.dtype != torch.float32 or part.numel() < need or part.device != x.device:
        raise ValueError(f'small_gemm: part must be fp32 on {x.device} with at least {need} elements')
    small_gemm_kernel[(tiles, split)](x2, w, y, part, counters, M, N, K, x2.stride(0), w.stride(0), y.stride(0),
                                      K // split, BLOCK_M=MAX_ROWS, BLOCK_N=bn, BLOCK_K=bk, SPLIT=split,
                                      num_warps=4, num_stages=stages)
    return y.view(*x.shape[:-1], N)


@torch.library.custom_op('pi05::small_gemm', mutates_args=())
def linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """launch() as an operator torch.compile keeps whole (its graph calls the kernel; a CUDA graph replays it)."""
    return launch(x, w)


@linear.register_fake
def _(x, w):
    return x.new_empty(*x.shape[:-1], w.shape[0])
