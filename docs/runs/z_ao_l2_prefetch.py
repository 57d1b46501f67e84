"""Issue 17 probe (prepared 2026-12-06, session 22): do the action expert's batch-1 projections run faster when their
weights are pulled into L2 before the GEMM that reads them?

In the served batch-1 call a denoising layer-step is 14 kernels, ~48 us of kernel time (H100, session 21's kernel list),
of which the four projections take ~28 us for 34.6 MB of weights (10.3 us at 3.35 TB/s): each small GEMM spends most of
its time waiting on DRAM with too few requests in flight. The elementwise and attention kernels between them hardly use
the memory bus. A prefetch hint (`cp.async.bulk.prefetch.L2.global`, or `prefetch.global.L2` per 128-byte line) issued
early lets the bus stream the weights while those kernels run; the GEMM then reads L2. The hint writes nothing, so the
results cannot change (checked: every variant's output equals the plain chain's bit for bit).

A stand-in for one denoising step: 18 layers of pi05's expert shapes (q/k/v 2560x1024, o 1024x2048, gate/up 8192x1024,
down 4096 -> 1024), 50 rows in bf16, eager ops inside one CUDA graph (so more elementwise kernels than the compiled
model has), attention of 8 query heads against 650 cached keys. Variants:
  none      the chain as it is;
  one       one prefetch launch per layer, at its start: this layer's gate/up and down, the next layer's q/k/v and o;
  two       two launches per layer: at its start this layer's gate/up and down, before the MLP the next q/k/v and o;
  two_line  'two' with one prefetch.global.L2 per 128-byte line instead of one bulk prefetch per 4 kB;
  side      'one's bytes read for real by a reduction on a second stream (forked at each layer, joined at the next);
  resident  every layer reads layer 0's weights (34.6 MB, they stay in L2): how fast the chain can go at all;
  small, small_hint, small_resident: the four projections through small_gemm.py's kernel, without hints, with
            next_w (q/k/v warms gate/up, o warms down, gate/up the next layer's q/k/v, down the next o: no extra
            kernel; needs docs/logs/small_gemm_l2_hints.patch, not kept: it fails without), and over layer 0's
            weights alone. small_hint is compared with small (the same sums).
    python docs/runs/z_ao_l2_prefetch.py        # < 1 min on an H100
"""
import os
import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from z_ae_decode_attn import capture  # noqa: E402  (warm-up on a side stream, then one capture)
import small_gemm  # noqa: E402

LAYERS, ROWS, KEYS, HEADS, HEAD_DIM = 18, 50, 650, 8, 256
SHAPES = {'qkv': (2560, 1024), 'o': (1024, 2048), 'gate_up': (8192, 1024), 'down': (1024, 4096)}
CHUNK = 4096  # bytes per bulk prefetch (the asm strings below spell it out)
BLOCK = 128


@triton.jit
def bulk_kernel(Table, n, BLOCK: tl.constexpr):
    i = tl.minimum(tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), n - 1)
    addr = tl.load(Table + i)
    tl.inline_asm_elementwise('cp.async.bulk.prefetch.L2.global [$1], 4096; mov.u32 $0, 0;', '=r,l', [addr],
                              dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def line_kernel(Table, n, BLOCK: tl.constexpr):
    i = tl.minimum(tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), n - 1)
    addr = tl.load(Table + i)[:, None] + (tl.arange(0, 32) * 128).to(tl.int64)[None, :]
    tl.inline_asm_elementwise('prefetch.global.L2 [$1]; mov.u32 $0, 0;', '=r,l', [addr],
                              dtype=tl.int32, is_pure=False, pack=1)


def table(tensors):
    """int64 addresses of every CHUNK bytes of the tensors (each contiguous, its size a multiple of CHUNK)."""
    addrs = []
    for t in tensors:
        n = t.numel() * t.element_size()
        assert t.is_contiguous() and n % CHUNK == 0, (t.shape, n)
        addrs += range(t.data_ptr(), t.data_ptr() + n, CHUNK)
    return torch.tensor(addrs, dtype=torch.int64, device='cuda')


def prefetcher(tensors, kernel):
    tab = table(tensors)
    grid = (triton.cdiv(tab.numel(), BLOCK),)
    return lambda: kernel[grid](tab, tab.numel(), BLOCK=BLOCK, num_warps=4)


def main():
    torch.manual_seed(0)
    dev = 'cuda'
    weights = [{k: (torch.randn(*s, device=dev) / s[1] ** 0.5).to(torch.bfloat16) for k, s in SHAPES.items()}
               for _ in range(LAYERS)]
    caches = [(torch.randn(KEYS, HEAD_DIM, device=dev, dtype=torch.bfloat16),
               torch.randn(KEYS, HEAD_DIM, device=dev, dtype=torch.bfloat16)) for _ in range(LAYERS)]
    gate = (torch.rand(1024, device=dev) * 0.1).to(torch.bfloat16)
    x0 = torch.randn(ROWS, 1024, device=dev, dtype=torch.bfloat16)
    mb = sum(w.numel() * 2 for w in weights[0].values()) / 1e6
    print(f'{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; '
          f'{LAYERS} layers, {mb:.1f} MB of projection weights per layer', flush=True)

    def norm(x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)

    def chain(hooks, ws, proj=lambda name, i, x, w: F.linear(x, w)):
        x = x0.clone()
        for i in range(LAYERS):
            w, (kc, vc) = ws[i], caches[i]
            hooks.get('layer', lambda i: None)(i)
            qkv = proj('qkv', i, norm(x), w['qkv'])
            q = qkv[:, :HEADS * HEAD_DIM].reshape(ROWS * HEADS, HEAD_DIM)
            k = torch.cat([kc, qkv[:, 2048:2304]])
            v = torch.cat([vc, qkv[:, 2304:]])
            a = torch.softmax((q @ k.T).float() * HEAD_DIM ** -0.5, -1).to(q.dtype) @ v
            x = x + proj('o', i, a.reshape(ROWS, -1), w['o']) * gate
            hooks.get('mlp', lambda i: None)(i)
            gu = proj('gate_up', i, norm(x), w['gate_up'])
            x = x + proj('down', i, F.gelu(gu[:, :4096], approximate='tanh') * gu[:, 4096:], w['down']) * gate
        return x

    nxt = lambda i: (i + 1) % LAYERS  # noqa: E731  (the last layer warms the first: the graph replays back to back)
    one = [prefetcher([weights[i]['gate_up'], weights[i]['down'], weights[nxt(i)]['qkv'], weights[nxt(i)]['o']],
                      bulk_kernel) for i in range(LAYERS)]
    mlp_b = [prefetcher([weights[i]['gate_up'], weights[i]['down']], bulk_kernel) for i in range(LAYERS)]
    att_b = [prefetcher([weights[nxt(i)]['qkv'], weights[nxt(i)]['o']], bulk_kernel) for i in range(LAYERS)]
    mlp_l = [prefetcher([weights[i]['gate_up'], weights[i]['down']], line_kernel) for i in range(LAYERS)]
    att_l = [prefetcher([weights[nxt(i)]['qkv'], weights[nxt(i)]['o']], line_kernel) for i in range(LAYERS)]

    side = torch.cuda.Stream()
    pending = {}

    def side_read(i):
        if 'ev' in pending:  # join the previous layer's reads before forking again
            torch.cuda.current_stream().wait_event(pending.pop('ev'))
        if i is None:
            return
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for t in (weights[i]['gate_up'], weights[i]['down'], weights[nxt(i)]['qkv'], weights[nxt(i)]['o']):
                pending.setdefault('sink', []).append(t.view(-1)[::16].float().sum())  # one element per 32 B sector
            ev = torch.cuda.Event()
            ev.record(side)
            pending['ev'] = ev
        pending['sink'] = pending['sink'][-8:]

    def side_chain(ws):
        out = chain({'layer': side_read}, ws)
        side_read(None)
        return out

    # small_gemm.py's kernel for all four projections, at the sweep's fastest configuration for each shape
    # (docs/logs/small_gemm_sweep_2026-12-06aj_h100.txt); with hints: each projection warms a later one's weight
    kw = {'qkv': (32, 128, 1, 4), 'o': (32, 128, 4, 4), 'gate_up': (64, 128, 1, 4), 'down': (32, 256, 4, 4)}
    ahead = {'qkv': lambda i: weights[i]['gate_up'], 'o': lambda i: weights[i]['down'],
             'gate_up': lambda i: weights[nxt(i)]['qkv'], 'down': lambda i: weights[nxt(i)]['o']}

    def small(hint):  # hint: needs small_gemm.launch(next_w=), docs/logs/small_gemm_l2_hints.patch (not kept)
        def proj(name, i, x, w):
            bn, bk, split, stages = kw[name]
            extra = {'next_w': ahead[name](i)} if hint else {}
            return small_gemm.launch(x, w, block_n=bn, block_k=bk, split=split, num_stages=stages, **extra)
        return proj

    variants = {
        'none': lambda: chain({}, weights),
        'one': lambda: chain({'layer': lambda i: one[i]()}, weights),
        'two': lambda: chain({'layer': lambda i: mlp_b[i](), 'mlp': lambda i: att_b[i]()}, weights),
        'two_line': lambda: chain({'layer': lambda i: mlp_l[i](), 'mlp': lambda i: att_l[i]()}, weights),
        'side': lambda: side_chain(weights),
        'resident': lambda: chain({}, [weights[0]] * LAYERS),
        'small': lambda: chain({}, weights, small(False)),
        'small_hint': lambda: chain({}, weights, small(True)),
        'small_resident': lambda: chain({}, [weights[0]] * LAYERS, small(False)),
    }
    print('| variant | us per step | us per layer | max abs diff vs none (small_hint: vs small) |\n'
          '|---|---|---|---|', flush=True)
    ref, graphs, ref_small = None, {}, None
    for name, fn in variants.items():
        try:
            out = {}
            g = capture(lambda: out.__setitem__('x', fn()))
            for _ in range(3):
                g.replay()
            torch.cuda.synchronize()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            reps = 100
            a.record()
            for _ in range(reps):
                g.replay()
            b.record()
            torch.cuda.synchronize()
            us = a.elapsed_time(b) * 1e3 / reps
            ref = out['x'].clone() if name == 'none' else ref
            ref_small = out['x'].clone() if name == 'small' else ref_small
            base = ref_small if name == 'small_hint' else ref  # the kernel's sums differ from cuBLAS's in order
            diff = (out['x'].float() - base.float()).abs().max().item()
            print(f'| {name} | {us:.1f} | {us / LAYERS:.2f} | {diff:.3g} |', flush=True)
            graphs[name] = g
        except Exception as e:  # one variant failing must not hide the others
            print(f'| {name} | failed: {type(e).__name__}: {str(e)[:300]} | | |', flush=True)

    for name, pf in (('bulk', one[0]), ('line', mlp_l[0])):  # one launch alone, 34.6 / 25.2 MB of hints
        try:
            g = capture(pf)
            g.replay()
            torch.cuda.synchronize()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(200):
                g.replay()
            b.record()
            torch.cuda.synchronize()
            print(f'prefetch launch alone ({name}): {a.elapsed_time(b) * 1e3 / 200:.2f} us per replay', flush=True)
        except Exception as e:
            print(f'prefetch launch alone ({name}) failed: {type(e).__name__}: {str(e)[:300]}', flush=True)

    from torch.profiler import ProfilerActivity, profile
    for name in ('none', 'two', 'resident', 'small', 'small_hint'):
        if name not in graphs:
            continue
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                graphs[name].replay()
            torch.cuda.synchronize()
        rows = []
        for e in prof.key_averages():
            t = getattr(e, 'device_time_total', None)
            t = e.cuda_time_total if t is None else t
            if e.count and t:
                rows.append((t / 5, e.count // 5, e.key))
        rows.sort(reverse=True)
        total = sum(r[0] for r in rows)
        print(f'\n{name}: {total:.0f} us of kernels per step; the busiest:')
        for t, c, k in rows[:12]:
            print(f'  {t:8.1f} us  {c:4d} x {t / max(c, 1):6.2f}  {k[:90]}')


if __name__ == '__main__':
    main()
