"""Issue 17 probe (prepared 2026-12-06, session 21): does small_gemm.py's kernel stream the action expert's weights
faster than cuBLAS? At batch 1 each denoising layer-step multiplies 50 rows by four weight matrices (q/k/v fused
1024->2560, o 2048->1024, gate/up fused 1024->8192, down 4096->1024; 34.6 MB of bf16) in 27 us on an H100 (kernel list
of 2026-12-06), 1.3 TB/s against the 3.35 TB/s the memory gives: nvjet's tiles leave SMs idle (o: 48 tiles of 24x64)
or need a second kernel (down: split-K plus cublasLt's reduce).

Each configuration (outputs per program, K block, K split, pipeline stages) is checked against F.linear (max error
relative to the largest output) and called twice (bit-identical), then timed as the model runs it: 18 calls with 18
different weight matrices (one per expert layer, so the weights come from memory, not L2) captured in one CUDA
graph, replay time / 18. Per shape a CONFIG line gives the fastest ('cublas' where cuBLAS stays faster), in the form
small_gemm.CONFIGS takes; --write puts them into small_gemm.py.
    python docs/runs/z_al_skinny_gemm.py [--write]     # < 2 min on an H100 (25 s per shape)
"""
import itertools
import os
import re
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import small_gemm  # noqa: E402
from z_al_small_ops import graph_us  # noqa: E402

SHAPES = {'qkv': (2560, 1024), 'o': (1024, 2048), 'gate_up': (8192, 1024), 'down': (1024, 4096)}  # (N, K)
LAYERS, ROWS = 18, 50


def timed(fn, reps=20):
    """fn runs the 18 calls; captured in a CUDA graph, replayed; us per call."""
    return graph_us(fn, reps=reps, inner=1)[0] / LAYERS


def main():
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), 'torch', torch.__version__, flush=True)
    chosen = {}
    for name, (N, K) in SHAPES.items():
        x = torch.randn(ROWS, K, device='cuda', dtype=torch.bfloat16)
        ws = [torch.randn(N, K, device='cuda', dtype=torch.bfloat16) / K ** 0.5 for _ in range(LAYERS)]
        ref = torch.nn.functional.linear(x, ws[0]).float()
        outs = [None] * LAYERS

        def cublas():
            for i in range(LAYERS):
                outs[i] = torch.nn.functional.linear(x, ws[i])
        us, mb = timed(cublas), N * K * 2 / 1e6
        print(f'\n## {name}: {ROWS} x {K} @ {K} x {N} ({mb:.1f} MB of weights)\n| kernel | BLOCK_N | BLOCK_K | SPLIT | '
              f'stages | programs | us | TB/s | max rel err |\n|---|---|---|---|---|---|---|---|---|', flush=True)
        print(f'| cuBLAS F.linear | | | | | | {us:.2f} | {mb / us:.2f} | |', flush=True)
        best, t0, tried, cut = (us, None), time.time(), 0, False
        for bn, bk, split, st in itertools.product((64, 128, 32), (128, 256, 64), (1, 2, 4, 8, 16), (4, 3)):
            progs = N // bn * split  # the likeliest first (64 outputs, 128-wide K blocks, 4 stages), in case time is up
            if N % bn or K % (split * bk) or not (64 <= progs <= 600) or (bk == 64 and st == 3):
                continue
            if time.time() - t0 > 25:
                cut = True
                break
            tried += 1
            cfg = dict(block_n=bn, block_k=bk, split=split, num_stages=st)
            try:
                y = small_gemm.launch(x, ws[0], **cfg)
                err = ((y.float() - ref).abs().max() / ref.abs().max()).item()
                same = torch.equal(y, small_gemm.launch(x, ws[0], **cfg))

                def mine():
                    for i in range(LAYERS):
                        outs[i] = small_gemm.launch(x, ws[i], **cfg)
                t = timed(mine)
            except Exception as e:  # out of shared memory and the like
                print(f'| triton | {bn} | {bk} | {split} | {st} | {progs} | failed: {type(e).__name__} | | |', flush=True)
                continue
            flag = '' if err < 2e-2 and same else (' WRONG' if err >= 2e-2 else ' NOT DETERMINISTIC')
            print(f'| triton | {bn} | {bk} | {split} | {st} | {progs} | {t:.2f} | {mb / t:.2f} | {err:.1e}{flag} |',
                  flush=True)
            if not flag and t < best[0]:
                best = (t, (bn, bk, split, st))
        chosen[N, K] = best[1]
        print(f'CONFIG {name} {N} {K} {" ".join(map(str, best[1])) if best[1] else "cublas"}: {best[0]:.2f} us '
              f'against cuBLAS {us:.2f}; {tried} configurations tried{" (time was up: the sweep cut short)" if cut else ""}',
              flush=True)
    print(f'CONFIGS = {chosen!r}', flush=True)
    if '--write' in sys.argv:
        path = small_gemm.__file__
        src = open(path).read()
        src, n = re.subn(r'^CONFIGS = \{.*?\}', f'CONFIGS = {chosen!r}', src, count=1, flags=re.M)
        assert n == 1, 'no CONFIGS line in small_gemm.py'
        open(path, 'w').write(src)
        print(f'written into {path}', flush=True)


if __name__ == '__main__':
    main()
