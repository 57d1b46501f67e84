"""Issue 17 probe (prepared 2026-12-06, session 21): can a Triton GEMM for few rows stream the action expert's weights
faster than cuBLAS? At batch 1 each denoising layer-step multiplies 50 rows by four weight matrices (q/k/v fused
1024->2560, o 2048->1024, gate/up fused 1024->8192, down 4096->1024; 34.6 MB of bf16) in 27 us on an H100 (kernel list
of 2026-12-06), 1.3 TB/s against the 3.35 TB/s the memory gives: nvjet's tiles leave SMs idle (o: 48 tiles of 24x64)
or need a second kernel (down: split-K plus cublasLt's reduce).

The kernel here splits N into BLOCK_N tiles and K into SPLIT parts, so ~130 programs each stream their slice of W
once; with SPLIT > 1 every program stores its fp32 partial and the last program of a tile to finish (an atomic
counter) sums the partials in split order (so the result does not depend on which finished first) and writes bf16.
Each configuration is checked against F.linear (fp32 accumulation both; max error relative to the largest output)
and replayed twice (bit-identical), then timed as the model runs it: 18 calls with 18 different weight matrices
(one per expert layer, so weights come from memory, not L2) captured in one CUDA graph, replay time / 18.
    python docs/runs/z_al_skinny_gemm.py          # < 2.5 min (25 s per shape at 50 rows, 8 at 400); cuBLAS first
"""
import itertools
import os
import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def skinny_kernel(X, W, Y, Part, Count, M, N, K, sxm, swn, sym, k_per_split,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT: tl.constexpr):
    pn, ps, pm = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pm * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pn * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_ok = rm < M
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k0 = ps * k_per_split
    for k in range(k0, k0 + k_per_split, BLOCK_K):
        x = tl.load(X + rm[:, None] * sxm + (k + rk)[None, :], mask=m_ok[:, None], other=0.0)
        w = tl.load(W + rn[:, None] * swn + (k + rk)[None, :])                       # (BLOCK_N, BLOCK_K)
        acc = tl.dot(x, tl.trans(w), acc)
    out = Y + rm[:, None] * sym + rn[None, :]
    if SPLIT == 1:
        tl.store(out, acc.to(Y.dtype.element_ty), mask=m_ok[:, None])
    else:
        tile = pm * tl.num_programs(0) + pn
        part = (Part + tile * SPLIT * BLOCK_M * BLOCK_N + tl.arange(0, BLOCK_M)[:, None] * BLOCK_N
                + tl.arange(0, BLOCK_N)[None, :])
        tl.store(part + ps * BLOCK_M * BLOCK_N, acc)
        done = tl.atomic_add(Count + tile, 1, sem='acq_rel')
        if done == SPLIT - 1:  # the last split of this tile to finish sums them all, in split order
            total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for s in range(SPLIT):
                total += tl.load(part + s * BLOCK_M * BLOCK_N, cache_modifier='.cg')
            tl.store(out, total.to(Y.dtype.element_ty), mask=m_ok[:, None])
            tl.atomic_xchg(Count + tile, 0)  # ready for the next call (a CUDA graph replays it)


_ws = {}


def skinny_linear(x, w, BLOCK_M=64, BLOCK_N=64, BLOCK_K=128, SPLIT=1, num_warps=4, num_stages=3):
    M, K = x.shape
    N = w.shape[0]
    grid = (N // BLOCK_N, SPLIT, triton.cdiv(M, BLOCK_M))
    tiles = grid[0] * grid[2]
    key = (x.device, tiles, SPLIT, BLOCK_M, BLOCK_N)
    if key not in _ws:
        _ws[key] = (torch.empty(tiles * SPLIT * BLOCK_M * BLOCK_N if SPLIT > 1 else 1, device=x.device,
                                dtype=torch.float32), torch.zeros(tiles, device=x.device, dtype=torch.int32))
    part, count = _ws[key]
    y = torch.empty(M, N, device=x.device, dtype=x.dtype)
    skinny_kernel[grid](x, w, y, part, count, M, N, K, x.stride(0), w.stride(0), y.stride(0), K // SPLIT,
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, SPLIT=SPLIT,
                        num_warps=num_warps, num_stages=num_stages)
    return y


SHAPES = {'qkv': (2560, 1024), 'o': (1024, 2048), 'gate_up': (8192, 1024), 'down': (1024, 4096)}  # (N, K)
LAYERS = 18


def timed(fn, reps=20):
    """fn runs the 18 calls; captured in a CUDA graph, replayed; us per call."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        g.replay()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1e3 / (reps * LAYERS)


def main():
    torch.manual_seed(0)
    t0 = time.time()
    print(torch.cuda.get_device_name(), 'torch', torch.__version__, 'triton', triton.__version__, flush=True)
    best_all = {}
    for M in (50, 400):
        for name, (N, K) in SHAPES.items():
            x = torch.randn(M, K, device='cuda', dtype=torch.bfloat16)
            ws = [torch.randn(N, K, device='cuda', dtype=torch.bfloat16) / K ** 0.5 for _ in range(LAYERS)]
            ref = torch.nn.functional.linear(x, ws[0]).float()
            outs = [None] * LAYERS

            def cublas():
                for i in range(LAYERS):
                    outs[i] = torch.nn.functional.linear(x, ws[i])
            us = timed(cublas)
            mb = N * K * 2 / 1e6
            print(f'\n## M {M}, {name} (N {N}, K {K}, {mb:.1f} MB of weights)\n| kernel | BLOCK_N | BLOCK_K | SPLIT | '
                  f'stages | programs | us | TB/s | max rel err |\n|---|---|---|---|---|---|---|---|---|', flush=True)
            print(f'| cuBLAS F.linear | | | | | | {us:.2f} | {mb / us:.2f} | |', flush=True)
            best, t_shape = (us, 'cuBLAS'), time.time()
            few = M > 64  # batch 8: a few configurations, for the record
            grid = itertools.product((64, 128) if few else (32, 64, 128), (128,) if few else (64, 128, 256),
                                     (1, 2) if few else (1, 2, 4, 8, 16), (4,))
            for BN, BK, SPLIT, st in grid:
                if time.time() - t_shape > (8 if few else 25):
                    print('(this shape\'s time is up)', flush=True)
                    break
                progs = (N // BN) * SPLIT * ((M + 63) // 64)
                if N % BN or K % (SPLIT * BK) or not (64 <= progs <= 600) or N // BN * SPLIT < 64:
                    continue
                cfg = dict(BLOCK_N=BN, BLOCK_K=BK, SPLIT=SPLIT, num_stages=st)
                try:
                    y = skinny_linear(x, ws[0], **cfg).float()
                    err = ((y - ref).abs().max() / ref.abs().max()).item()

                    def mine():
                        for i in range(LAYERS):
                            outs[i] = skinny_linear(x, ws[i], **cfg)
                    t = timed(mine)
                    a = outs[0].clone()
                    mine()
                    same = torch.equal(a, outs[0])
                except Exception as e:  # out of shared memory and the like
                    print(f'| triton | {BN} | {BK} | {SPLIT} | {st} | {progs} | failed: {type(e).__name__} | | |', flush=True)
                    continue
                flag = '' if err < 2e-2 and same else (' WRONG' if err >= 2e-2 else ' NOT DETERMINISTIC')
                print(f'| triton | {BN} | {BK} | {SPLIT} | {st} | {progs} | {t:.2f} | {mb / t:.2f} | {err:.1e}{flag} |', flush=True)
                if not flag and t < best[0]:
                    best = (t, cfg)
            print(f'BEST M {M} {name}: {best[0]:.2f} us {best[1]} (cuBLAS {us:.2f} us)', flush=True)
            best_all[(M, name)] = (best, us)
    print('\nsummary (us per call):')
    for (M, name), (best, us) in best_all.items():
        print(f'M {M} {name}: cuBLAS {us:.2f}, best {best[0]:.2f} {best[1]}')


if __name__ == '__main__':
    main()
