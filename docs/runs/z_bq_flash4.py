"""2026-12-08 (issue 18): FlashAttention 4's Hopper kernels (flash_attn.cute, written in the CuTe DSL), reached through
torch's flex_attention with kernel_options={'BACKEND': 'FLASH'}, against the cuDNN sdpa kernel that train.py's
default runs, at pi05's joint-attention shape: micro-batch 32, 8 query heads over 1 K/V head, head dim 256, 512 image
+ 64 prompt slots (46-64 valid) + 50 action tokens = 626 keys, flex_mask's rule. Forward + backward, each compared
with the fp32 eager reference (model.attention 'eager') on the valid query rows; then timed (median of 5 runs of 20).
The wheels (flash-attn-4, nvidia-cutlass-dsl and its CUDA 13 libraries, ~72 MB) are more than one device call may
carry, so they travel in two calls to one warm machine (docs/runs/z_bq_flash4.sh).
    PYTHONPATH=. python docs/runs/z_bq_flash4.py               # GPU with flash_attn.cute importable
    DRY=16 PYTHONPATH=. python docs/runs/z_bq_flash4.py        # CPU: the script itself (eager and sdpa only)
    PYTHONPATH=. python docs/runs/z_bq_flash4.py --ab=ab_out   # train steps in one process: bench.py's sdpa row (fits
        80 GB) A, the same with attn='flex' and the FLASH backend B, with flex's Triton kernels C: A B C A B
    PYTHONPATH=. python docs/runs/z_bq_flash4.py --ab=ab_out --model_name=tiny --steps=1   # CPU: it runs
"""
import os
import statistics
import time
import traceback

import torch

import flex_mask
from model import attention

torch.manual_seed(0)
DRY = int(os.environ.get('DRY', '1'))
dev = 'cpu' if DRY > 1 else 'cuda'
bf = torch.bfloat16
B, Hq, Hkv, Dh, IMG, H = max(32 // DRY, 2), 8, 1, 256, 512 // DRY, 50


def sync():
    if dev == 'cuda':
        torch.cuda.synchronize()


def timed(fn, n=20, reps=5):
    fn(); fn(); sync()
    out = []
    for _ in range(reps if DRY == 1 else 1):
        t0 = time.perf_counter()
        for _ in range(n if DRY == 1 else 1):
            fn()
        sync()
        out.append((time.perf_counter() - t0) / (n if DRY == 1 else 1) * 1e3)
    return statistics.median(out)


def inputs(L):
    lens = torch.randint(46, min(65, L + 1), (B,))
    valid = torch.cat([torch.ones(B, IMG, dtype=torch.bool), torch.arange(L)[None] < lens[:, None],
                       torch.ones(B, H, dtype=torch.bool)], 1).to(dev)
    T = valid.shape[1]
    q = torch.randn(B, T, Hq, Dh, device=dev, dtype=bf)
    k = torch.randn(B, T, Hkv, Dh, device=dev, dtype=bf)
    v = torch.randn(B, T, Hkv, Dh, device=dev, dtype=bf)
    return valid, q, k, v


def compiled_flex(backend):
    from torch.nn.attention.flex_attention import flex_attention
    opts = {'BACKEND': backend}

    @torch.compile(fullgraph=True, dynamic=False)
    def f(q, k, v, bm):
        o = flex_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), block_mask=bm, scale=Dh ** -0.5,
                           enable_gqa=True, kernel_options=opts)
        return o.transpose(1, 2).flatten(2)
    return f


def run(L, log):
    valid, q, k, v = inputs(L)
    T, prefix = valid.shape[1], IMG + L
    # padded queries' outputs reach nothing in the model (no query sees a padded key), so they get no gradient here
    # and their rows are not compared (flex gives them 0, sdpa and the reference a mean over masked keys)
    go = torch.randn(B, T, Hq * Dh, device=dev, dtype=bf) * valid[:, :, None]

    def fwd_bwd(fn):
        qq, kk, vv = (t.detach().requires_grad_() for t in (q, k, v))
        o = fn(qq, kk, vv)
        o.backward(go)
        return o, qq.grad, kk.grad, vv.grad

    ref_mask = flex_mask.additive_mask(valid, prefix, torch.float32)
    ref = fwd_bwd(lambda a, b, c: attention(a.float(), b.float(), c.float(), ref_mask, 'eager'))
    impls = {'sdpa (cuDNN, additive bf16 mask)': (lambda a, b, c, m=flex_mask.additive_mask(valid, prefix, bf):
                                                 attention(a, b, c, m, 'sdpa'))}
    if dev == 'cuda':
        bm = flex_mask.block_mask(valid, prefix)
        for name, backend in (('flex Triton', 'TRITON'), ('flex FLASH (FA4 CuTe DSL)', 'FLASH')):
            f = compiled_flex(backend)
            impls[name] = lambda a, b, c, f=f: f(a, b, c, bm)
        # the same rule over an int32 validity vector, in case the CuTe DSL mask_mod cannot read a bool tensor
        from torch.nn.attention.flex_attention import create_block_mask
        vi = valid.to(torch.int32)
        bm_i = create_block_mask(lambda b, h, qi, ki: (vi[b, qi] > 0) & (vi[b, ki] > 0) & flex_mask.sees(qi, ki, prefix),
                                 B, None, T, T, device=dev, BLOCK_SIZE=128)
        f = compiled_flex('FLASH')
        impls['flex FLASH, int32 validity'] = lambda a, b, c, f=f: f(a, b, c, bm_i)
    fl = 4 * B * Hq * T * T * Dh * 3.5  # dense forward (2 GEMMs) + backward at 2.5x
    for name, fn in impls.items():
        try:
            t0 = time.perf_counter()
            got = fwd_bwd(fn)
            first = time.perf_counter() - t0
            diffs = []
            for r, g, label in zip(ref, got, ('out', 'dq', 'dk', 'dv')):
                g = g.float().reshape(r.shape)
                d = ((g - r) * valid.view(B, T, *[1] * (r.ndim - 2))).abs().max().item()
                diffs.append(f'{label} {d:.2e}')
            ms = timed(lambda: fwd_bwd(fn))
            log(f'L={L} T={T} | {name}: {ms:.3f} ms fwd+bwd ({fl / ms / 1e9:.0f} TFLOP/s dense), first call '
                f'{first:.1f} s; max |diff| vs fp32 eager: {", ".join(diffs)}')
        except Exception as e:
            log(f'L={L} T={T} | {name}: FAILED {type(e).__name__}: {str(e)[:600]}')
            log(traceback.format_exc()[-1500:])


def ab(out_dir, model_name, steps, order):
    """Train steps of bench.py's sdpa row against the same row with flex attention on the FLASH (B) or Triton (C)
    backend, in one process. model.attention imports flex_attention at each call, so the FLASH rows see a wrapper
    that adds kernel_options (dynamo inlines it and recompiles when the choice changes)."""
    import json
    import torch.nn.attention.flex_attention as fa
    import bench
    orig = fa.flex_attention

    def flash(*a, **k):
        return orig(*a, kernel_options={'BACKEND': 'FLASH'}, **k)
    device, batches, peak, label, base = bench.script_setup('sdpa', model_name, steps, 2, out_dir,
                                                            note=' | B: attn=flex, FLASH; C: attn=flex, Triton')
    rows = {'A': (base, orig), 'B': (dict(base, attn='flex'), flash), 'C': (dict(base, attn='flex'), orig)}
    results = []
    for i, name in enumerate(order):
        settings, fn = rows[name]
        fa.flex_attention = fn
        try:
            r = bench.run_row(f"{name}{i + 1}: sdpa row" + {'A': '', 'B': ' + flex FLASH', 'C': ' + flex Triton'}[name],
                              settings, batches, peak, device)
        except Exception as e:
            print(f'{name}: FAILED {type(e).__name__}: {str(e)[:1500]}', flush=True)
            traceback.print_exc()
            continue
        finally:
            fa.flex_attention = orig
        results.append(r)
        print(json.dumps(r), flush=True)
        with open(os.path.join(out_dir, 'results.json'), 'w') as f:
            json.dump(results, f, indent=1)
    print('\n' + bench.table(results))
    for n in 'ABC':
        ms = [r['ms'] for r in results if r['row'].startswith(n)]
        if ms:
            print(f'{n}: {ms} ms/step, median {statistics.median(ms):.1f}')


if __name__ == '__main__':
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument('--ab', default='', help='an output folder: run the train-step A/B instead of the kernels alone')
    p.add_argument('--model_name', default='pi05')
    p.add_argument('--steps', type=int, default=10)
    p.add_argument('--order', default='ABCAB')
    a = p.parse_args()
    if a.ab:
        ab(a.ab, a.model_name, a.steps, a.order)
        raise SystemExit
    out = os.environ.get('OUT_FILE')

    def log(s):
        print(s, flush=True)
        if out:
            with open(out, 'a') as f:
                f.write(s + '\n')
    log(f'torch {torch.__version__}, device {torch.cuda.get_device_name() if dev == "cuda" else "cpu"}, B={B}')
    try:
        import flash_attn
        log(f'flash_attn {getattr(flash_attn, "__version__", "?")} from {flash_attn.__file__}')
    except Exception as e:
        log(f'flash_attn not importable: {e}')
    for L in (64, 78):  # 626 keys (the default), 640 (a multiple of 128 less the block's end)
        run(L, log)
