"""Issues 18 and 17: pi05's attention at its own shapes, timed alone on the GPU (prepared 2026-12-06 session 17; A and B
ran in session 18 on an H100, docs/logs/attention_shapes_2026-12-06_h100.txt; C added after that, not run yet; ~1 min). Training's profile gives cuDNN attention (Gemma's and SigLIP's, forward and backward) 47.7 ms
of a 533 ms step (docs/logs/bench_2026-12-01.log): about 175 TFLOP/s on the dense count (docs/performance.md), well
under half of what flash kernels reach at head dim 256. Is it the key count (512 image + 64 prompt + 50 action tokens = 626, not a multiple of 8), the
additive mask (B, 1, T, T), or GQA with one K/V head?
    python docs/runs/z_t_attention_shapes.py
A. sdpa forward and forward + backward at micro-batch 32, 8 query heads over 1 K/V head, head dim 256, bf16, for T =
   626 / 632 / 640 (the extra tokens masked prompt padding), with the model's mask (flex_mask.additive_mask), with no
   mask, and with K/V repeated to 8 heads; the busiest kernel of each. SigLIP's shape (64 images x 256 patches, 16
   heads of 72) for scale.
B. The grouped denoising attention's two products at batch 1 (400 stacked query rows, head dim 256) for 626 against
   632 keys: the cuBLAS kernel each gets (model.prefix_cache now pads to a multiple of 8)."""
import os, sys, time
import torch
import torch.nn.functional as F
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import flex_mask

torch.manual_seed(0)
DRY = int(os.environ.get('DRY', '1'))  # DRY=16: a CPU check of the script itself at 1/16 the batch
dev, bf = ('cpu' if DRY > 1 else 'cuda'), torch.bfloat16


def timed(fn, n=20):
    for _ in range(3):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(n // DRY or 1):
        fn()
    sync()
    return (time.perf_counter() - t0) / (n // DRY or 1) * 1e3


def sync():
    if dev == 'cuda':
        torch.cuda.synchronize()


def top_kernel(fn):
    if dev != 'cuda':
        return '-'
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        sync()
    ev = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
    e = max(ev, key=lambda e: e.self_device_time_total, default=None)
    return f'{e.key[:80]} x{e.count}' if e else '-'


def pi05_mask(B, L, H=50, images=512, with_valid=False):
    """the model's additive mask for images, L prompt slots (46-64 valid, the rest padding) and H actions"""
    lens = torch.randint(46, 65, (B,))
    prompt = torch.arange(L)[None] < lens[:, None]
    valid = torch.cat([torch.ones(B, images, dtype=torch.bool), prompt, torch.ones(B, H, dtype=torch.bool)], 1).to(dev)
    mask = flex_mask.additive_mask(valid, images + L, bf)
    return (mask, valid) if with_valid else mask


def part_c():
    """C: A's masked 626-key attention (1 K/V head) as two calls that each need only a key-padding mask."""
    print('\nC. the same attention as two calls (added session 18): the prefix\'s queries over the prefix\'s keys and the 50'
          ' action queries over all keys, each with a key-padding mask (B, 1, 1, keys) in place of the (B, 1, T, T) block'
          ' mask; T = 626, 1 K/V head')
    print('| split | mask | fwd+bwd ms | busiest kernel |\n|---|---|---|---|')
    L, H = 64, 50
    T, Lp = 512 + L + H, 512 + L
    q = torch.randn(B, T, Hq, D, device=dev, dtype=bf).transpose(1, 2).requires_grad_()
    k1 = torch.randn(B, T, 1, D, device=dev, dtype=bf).transpose(1, 2).requires_grad_()
    v1 = torch.randn(B, T, 1, D, device=dev, dtype=bf).transpose(1, 2).requires_grad_()
    do = torch.randn(B, Hq, T, D, device=dev, dtype=bf)
    full, valid = pi05_mask(B, L, with_valid=True)
    keys = full[:, :, -1:, :]  # an action query's row: every valid key visible (B, 1, 1, T)
    sd = lambda q_, k_, v_, m: F.scaled_dot_product_attention(q_, k_, v_, attn_mask=m, scale=D ** -0.5, enable_gqa=True)
    one = lambda: sd(q, k1, v1, full)
    two = lambda m=True: torch.cat([sd(q[:, :, :Lp], k1[:, :, :Lp], v1[:, :, :Lp], keys[..., :Lp] if m else None),
                                    sd(q[:, :, Lp:], k1, v1, keys if m else None)], 2)
    with torch.no_grad():
        ref, got = one().float(), two().float()
        print(f'two calls vs one: max abs diff {(got - ref).abs()[valid[:, None, :].expand_as(ref[..., 0])].max().item():.2e} '
              f'over the valid query rows (a padding query\'s output feeds nothing)', flush=True)
    for name, fn in (('one call', lambda: one().backward(do)), ('two calls', lambda: two().backward(do)),
                     ('two calls, no mask (an upper bound: prompts without padding)', lambda: two(False).backward(do))):
        print(f'| {name} | {"none" if "no mask" in name else "block" if name == "one call" else "key padding"} | '
              f'{timed(fn):.2f} | `{top_kernel(fn)}` |', flush=True)


print(torch.cuda.get_device_name() if dev == 'cuda' else 'CPU dry run', 'torch', torch.__version__, flush=True)
print('A. training attention, micro-batch 32, 8 query heads / 1 K/V head, head dim 256, bf16')
print('| T | mask | K/V heads | forward ms | fwd+bwd ms | fwd+bwd TFLOP/s (dense) | busiest kernel |')
print('|---|---|---|---|---|---|---|')
B, Hq, D = 32 // DRY, 8, 256
for L in (64, 70, 78):
    T = 512 + L + 50
    # as the model passes them: (B, T, heads, D) projections seen as (B, heads, T, D)
    q = torch.randn(B, T, Hq, D, device=dev, dtype=bf).transpose(1, 2).requires_grad_()
    k1 = torch.randn(B, T, 1, D, device=dev, dtype=bf).transpose(1, 2).requires_grad_()
    v1 = torch.randn(B, T, 1, D, device=dev, dtype=bf).transpose(1, 2).requires_grad_()
    k8 = torch.randn(B, T, Hq, D, device=dev, dtype=bf).transpose(1, 2).requires_grad_()  # K/V repeated: 8 heads
    v8 = torch.randn(B, T, Hq, D, device=dev, dtype=bf).transpose(1, 2).requires_grad_()
    mask, do = pi05_mask(B, L), torch.randn(B, Hq, T, D, device=dev, dtype=bf)
    flops = 4 * B * Hq * T * T * D * 3.5  # forward 4BHT^2D, backward 2.5x that
    for name, m in (('pi05 additive', mask), ('none', None)):
        for heads in (1, 8):
            def fwd():
                k, v = (k1, v1) if heads == 1 else (k8, v8)
                return F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=D ** -0.5, enable_gqa=heads == 1)
            def both():
                fwd().backward(do)
            try:
                with torch.no_grad():
                    f = timed(fwd)
                fb = timed(both)
                print(f'| {T} | {name} | {heads} | {f:.2f} | {fb:.2f} | {flops / fb / 1e9:.0f} | `{top_kernel(both)}` |',
                      flush=True)
            except Exception as e:
                print(f'| {T} | {name} | {heads} | failed: {type(e).__name__}: {str(e)[:120]} | | | |', flush=True)
q = torch.randn(64 // DRY, 16, 256, 72, device=dev, dtype=bf, requires_grad=True)
k, v, do = torch.randn_like(q, requires_grad=True), torch.randn_like(q, requires_grad=True), torch.randn_like(q)
both = lambda: F.scaled_dot_product_attention(q, k, v).backward(do)
fb = timed(both)
print(f'SigLIP shape ({64 // DRY} x 16 heads x 256 x 72), no mask: fwd+bwd {fb:.2f} ms, '
      f'{4 * 64 // DRY * 16 * 256 * 256 * 72 * 3.5 / fb / 1e9:.0f} TFLOP/s; `{top_kernel(both)}`', flush=True)
if dev != 'cuda':
    part_c()
    sys.exit()

print('\nB. grouped denoising attention, batch 1: 400 query rows x head dim 256, bf16')
for Tk in (626, 632):
    qg = torch.randn(1, 400, D, device=dev, dtype=bf)
    kk, vv = torch.randn(1, Tk, D, device=dev, dtype=bf), torch.randn(1, Tk, D, device=dev, dtype=bf)
    p = torch.softmax(torch.randn(1, 400, Tk, device=dev), -1).to(bf)
    logits = lambda: torch.bmm(qg, kk.transpose(1, 2), out_dtype=torch.float32)
    pv = lambda: torch.bmm(p, vv)
    print(f'{Tk} keys: q.k^T (fp32 out) {timed(logits, 200) * 1e3:.1f} us `{top_kernel(logits)}`; '
          f'p.v {timed(pv, 200) * 1e3:.1f} us `{top_kernel(pv)}`', flush=True)
try:
    part_c()
except Exception as e:
    print(f'C failed: {type(e).__name__}: {str(e)[:300]}', flush=True)
