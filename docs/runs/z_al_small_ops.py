"""Issue 17 probe (prepared 2026-12-06, session 21): small ops of the batch-1 call that its kernel list shows taking
more than their work, each timed against an equivalent formulation, inside a CUDA graph (launches excluded):
1. the fp32 action-out projection (50 x 1024 @ 1024 x 32, once per denoising step): cuBLAS runs sgemm_largek, 19.9 us;
2. SigLIP's fc1 + GELU (512 x 1152 @ 1152 x 4304): inductor runs a copy of the bias (5.0 us) and a beta-add GEMM
   (11.3 us), then the GELU (4.3 us); the bias could ride in the GELU's kernel instead;
3. SigLIP's LayerNorm in fp32 (512 x 1152, bf16 in and out): three kernels (2.4 + 1.6 + 2.1 us) per norm.
Each variant's result is compared with the first's (max abs difference, and relative to the largest value).
    python docs/runs/z_al_small_ops.py            # < 1 min on an H100
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from z_ae_decode_attn import capture  # noqa: E402  (warm-up on a side stream, then one capture)


def graph_us(fn, reps=50, inner=10):
    """us per call of fn, `inner` calls captured in one CUDA graph, replayed `reps` times -> (us, the last output)."""
    last = {}

    def body():
        for _ in range(inner):
            last['out'] = fn()
    g = capture(body)
    g.replay()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        g.replay()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1e3 / (reps * inner), last['out']


def compare(title, variants):
    print(f'\n## {title}\n| variant | us | max abs diff vs first | relative |\n|---|---|---|---|', flush=True)
    first = None
    for name, fn in variants:
        try:
            us, out = graph_us(fn)
        except Exception as e:
            print(f'| {name} | failed: {type(e).__name__}: {str(e)[:200]} | | |', flush=True)
            continue
        out = out.float()
        if first is None:
            first = out
        d = (out - first).abs().max().item()
        print(f'| {name} | {us:.2f} | {d:.2e} | {d / first.abs().max().item():.2e} |', flush=True)


def main():
    torch.manual_seed(0)
    dev = 'cuda'
    torch.backends.cuda.matmul.allow_tf32 = False  # as serve.py runs
    c = lambda f: torch.compile(f, fullgraph=True, dynamic=False)
    print(torch.cuda.get_device_name(), 'torch', torch.__version__, flush=True)

    x = torch.randn(1, 50, 1024, device=dev)
    w, b = torch.randn(32, 1024, device=dev) / 32, torch.randn(32, device=dev)
    compare('fp32 action-out projection, 50 x 1024 -> 32', [
        ('F.linear (cuBLAS)', lambda: F.linear(x, w, b)),
        ('compiled F.linear', c(lambda: F.linear(x, w, b))),
        ('torch.mm(W, x^T)^T + b', lambda: torch.mm(w, x[0].t()).t()[None] + b),
        ('compiled (x[..., None, :] * W).sum(-1) + b', c(lambda: (x[..., None, :] * w).sum(-1) + b)),
        ('torch.baddbmm(b, x, W^T)', lambda: torch.baddbmm(b, x, w.t()[None])),
    ])

    x = torch.randn(2, 256, 1152, device=dev, dtype=torch.bfloat16)
    w, b = (torch.randn(4304, 1152, device=dev, dtype=torch.bfloat16) / 34, torch.randn(4304, device=dev,
            dtype=torch.bfloat16))
    compare("SigLIP fc1 + GELU(tanh), 512 x 1152 -> 4304, bf16, compiled", [
        ('gelu(F.linear(x, W, b)) (model.py)', c(lambda: F.gelu(F.linear(x, w, b), approximate='tanh'))),
        ('gelu(F.linear(x, W) + b)', c(lambda: F.gelu(F.linear(x, w) + b, approximate='tanh'))),
        ('gelu(F.linear(x.view(512, -1), W, b)) (2-D)', c(lambda: F.gelu(F.linear(x.view(512, -1), w, b),
                                                                           approximate='tanh').view(2, 256, -1))),
    ])

    lw, lb = torch.randn(1152, device=dev), torch.randn(1152, device=dev)
    compare('SigLIP LayerNorm, fp32 statistics, 512 x 1152 bf16 in and out, compiled', [
        ('F.layer_norm(x.float()) (model.py)', c(lambda: F.layer_norm(x.float(), (1152,), lw, lb, 1e-6).to(x.dtype))),
        ('eager F.layer_norm(x.float())', lambda: F.layer_norm(x.float(), (1152,), lw, lb, 1e-6).to(x.dtype)),
        ('hand-written mean / var in fp32', c(lambda: ((x.float() - x.float().mean(-1, keepdim=True)) * torch.rsqrt(
            x.float().var(-1, unbiased=False, keepdim=True) + 1e-6) * lw + lb).to(x.dtype))),
    ])


if __name__ == '__main__':
    main()
