"""2026-12-07 (issue 18): why the training step's GEMMs run below the bf16 matmul probe, shape by shape.

The default row's forward and backward run once on the meta device under a dispatch mode that records every matmul
(aten.mm / addmm: shapes, strides, bias); the attention products (bmm on meta, cuDNN on the GPU) are left out. On a
GPU each distinct GEMM is then timed alone in bf16 with the recorded strides (`--reps` calls back to back between
two CUDA events, the median of five such runs), and
the table lists, per GEMM, how much of the step's GEMM time it takes and how much more than at the probe's rate
(train.measure_matmul_tflops, 8192^3). On the CPU it prints the list of shapes only.

    PYTHONPATH=. python docs/runs/z_bl_gemm_shapes.py --out=gemm_shapes.md     # any GPU, ~1 min
    PYTHONPATH=. python docs/runs/z_bl_gemm_shapes.py                          # CPU: the shapes and FLOPs
"""
import argparse
import collections
import statistics

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import bench
import model as M

p = argparse.ArgumentParser()
p.add_argument('--row', default='default', help="bench.py row whose step's GEMMs are listed")
p.add_argument('--reps', type=int, default=20)
p.add_argument('--out', default='')
a = p.parse_args()
aten = torch.ops.aten


class Record(TorchDispatchMode):
    """Counts every mm / addmm by (shape, strides of both operands, has bias)."""
    def __init__(self):
        super().__init__()
        self.seen = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in (aten.mm.default, aten.addmm.default):
            x, w = args[-2:] if func == aten.addmm.default else args[:2]
            self.seen[(tuple(x.shape), x.stride(), tuple(w.shape), w.stride(), func == aten.addmm.default)] += 1
        return func(*args, **(kwargs or {}))


def stack_of(m, k, n):
    """Which part of pi05 a GEMM (m x k @ k x n) belongs to, from its token counts (18432 Gemma prefix tokens,
    16384 SigLIP tokens, which is also Gemma's MLP width, 1600 action tokens, 32 samples for the time
    conditioning: the expert's adaRMS Dense layers and the time MLP), and whether it is a weight gradient (the
    contraction runs over the tokens). The counts are pi05's at micro-batch 32 with bench.py's batches: another
    model or row gets labels by these numbers only where they happen to match."""
    if k == 18432:
        return 'Gemma 2B weight grad'
    if m == 18432:
        return 'Gemma 2B'
    if k == 16384:
        return 'SigLIP weight grad'
    if m == 16384:
        return 'SigLIP'
    if k in (1600, 32) and m != 1600:
        return 'expert weight grad' if k == 1600 else 'adaRMS / time weight grad'
    return 'expert' if m == 1600 else 'adaRMS / time' if m == 32 else f'rows {m}'


named = bench.named_rows()
label, settings = named[a.row]
settings = dict(settings, compile=False, compile_vision=False)  # eager: every matmul goes through the dispatcher
batches = bench.row_batches(M.configs[bench.model_name], bench.prompt_lengths())
model, raw, opt, conf, steps, wrist, _ = bench.setup_row(settings, batches, 'meta')
mb = steps[0][0]
rec = Record()
with rec:
    noise = torch.zeros(mb['actions'].shape, device='meta')
    loss = model(mb, noise=noise, time=torch.zeros(mb['actions'].shape[0], device='meta'), loss_dims=conf['loss_dims'])
    loss.backward()
gemms = [(key, n, 2 * key[0][0] * key[0][1] * key[2][1]) for key, n in rec.seen.items()]
total_flop = sum(n * f for _, n, f in gemms)
print(f'{label}: {sum(n for _, n, _ in gemms)} GEMMs, {len(gemms)} distinct, {total_flop / 1e12:.1f} TFLOP a step')

# fused projections: each group of GEMMs that read the same input, per layer, forward + input grad + weight grad,
# as separate GEMMs and as one GEMM over the concatenated weights; (name, layers, rows, in, [outs], bias)
FUSIONS = [('SigLIP q|k|v', 27, 16384, 1152, [1152] * 3, True),
           ('Gemma 2B q|k|v', 17, 18432, 2048, [2048, 256, 256], False),
           ('Gemma 2B gate|up', 17, 18432, 2048, [16384] * 2, False),
           ('expert q|k|v', 18, 1600, 1024, [2048, 256, 256], False),
           ('expert gate|up', 18, 1600, 1024, [4096] * 2, False)]

lines = []
if torch.cuda.is_available():
    import train
    probe = train.measure_matmul_tflops()
    gpu = torch.cuda.get_device_name()
    ev = lambda: torch.cuda.Event(enable_timing=True)

    def time_ms(fn):
        for _ in range(3):
            fn()
        times = []
        for _ in range(5):  # reps calls back to back between two events: no launch or sync gap counted per call
            s, e = ev(), ev()
            s.record()
            for _ in range(a.reps):
                fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / a.reps)
        return statistics.median(times)

    def gemm_ms(m, k, n, layout, bias=False):
        """One bf16 GEMM x (m, k) @ w (k, n), each operand row-major ('N') or a row-major tensor's transpose ('T')."""
        x = torch.randn(m, k, device='cuda', dtype=torch.bfloat16) if layout[0] == 'N' else \
            torch.randn(k, m, device='cuda', dtype=torch.bfloat16).t()
        w = torch.randn(k, n, device='cuda', dtype=torch.bfloat16) if layout[1] == 'N' else \
            torch.randn(n, k, device='cuda', dtype=torch.bfloat16).t()
        b = torch.randn(n, device='cuda', dtype=torch.bfloat16) if bias else None
        return time_ms((lambda: torch.addmm(b, x, w)) if bias else (lambda: x @ w))

    rows = []
    for (xs, xst, ws, wst, bias), n, flop in gemms:
        layout = ('T' if xst[0] == 1 and xs[1] > 1 else 'N') + ('T' if wst[0] == 1 and ws[1] > 1 else 'N')
        ms = gemm_ms(xs[0], xs[1], ws[1], layout, bias)
        rows.append((stack_of(xs[0], xs[1], ws[1]), f'{xs[0]} x {xs[1]} x {ws[1]} {layout}{" +bias" if bias else ""}',
                     n, ms, flop / ms / 1e9, n * ms, n * (ms - flop / probe / 1e9)))
    rows.sort(key=lambda r: -r[6])
    t_all = sum(r[5] for r in rows)
    at_probe = total_flop / probe / 1e9
    lines += [f'{gpu}, torch {torch.__version__}, bf16 matmul probe {probe:.0f} TFLOP/s; row {a.row!r} ({label}); '
              f'each GEMM timed alone, {a.reps} calls back to back, median of 5',
              f'all {sum(r[2] for r in rows)} GEMMs alone: {t_all:.1f} ms ({total_flop / t_all / 1e9:.0f} TFLOP/s), '
              f'{at_probe:.1f} ms at the probe rate, {t_all - at_probe:.1f} ms over it', '',
              '| part | M x K x N (layout) | count | ms each | TFLOP/s | ms a step | ms over the probe rate |',
              '|---|---|---|---|---|---|---|']
    lines += [f'| {r[0]} | {r[1]} | {r[2]} | {r[3]:.3f} | {r[4]:.0f} | {r[5]:.1f} | {r[6]:+.1f} |' for r in rows]
    by = collections.defaultdict(lambda: [0.0, 0.0])
    for r in rows:
        by[r[0]][0] += r[5]
        by[r[0]][1] += r[6]
    lines += ['', '| part | ms a step | ms over the probe rate |', '|---|---|---|']
    lines += [f'| {k} | {v[0]:.1f} | {v[1]:+.1f} |' for k, v in sorted(by.items(), key=lambda kv: -kv[1][1])]
    lines += ['', '| projections read from one input (layers) | separate: forward + input grad + weight grad, ms a step '
              '| one GEMM over the concatenated weights | difference |', '|---|---|---|---|']
    for name, layers, m, k, outs, bias in FUSIONS:
        sep = sum(gemm_ms(m, k, n, 'NT', bias) + gemm_ms(m, n, k, 'NN') + gemm_ms(n, m, k, 'TN') for n in outs)
        N = sum(outs)
        one = gemm_ms(m, k, N, 'NT', bias) + gemm_ms(m, N, k, 'NN') + gemm_ms(N, m, k, 'TN')
        lines.append(f'| {name} ({layers}) | {layers * sep:.1f} | {layers * one:.1f} | {layers * (one - sep):+.1f} |')
else:
    for (xs, xst, ws, wst, bias), n, flop in sorted(gemms, key=lambda g: -g[1] * g[2]):
        lines.append(f'{stack_of(xs[0], xs[1], ws[1])}: {xs} {xst} @ {ws} {wst} bias={bias} x{n}: {n * flop / 1e12:.2f} TFLOP')
print('\n'.join(lines))
if a.out:
    with open(a.out, 'w') as f:
        f.write('\n'.join(lines) + '\n')
