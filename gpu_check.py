"""temporary: first look at the full model on the GPU"""
import time, torch, statistics, sys, traceback, os
import model as M
torch.backends.cuda.matmul.allow_tf32 = True
cfg = M.configs['pi05']
def batch(B, L=64, cams=2):
    g = torch.Generator().manual_seed(0)
    lens = torch.randint(45, 60, (B,), generator=g)
    b = dict(images=torch.randint(0, 256, (B, cams, 3, 224, 224), dtype=torch.uint8, generator=g),
             image_mask=torch.ones(B, cams, dtype=torch.bool),
             tokens=torch.randint(1, 1000, (B, L), generator=g) * (torch.arange(L) < lens[:, None]),
             token_mask=torch.arange(L) < lens[:, None], actions=torch.randn(B, 50, 32, generator=g))
    return {k: v.cuda() for k, v in b.items()}
def run(name, B, attn, compile=False, recompute='none', param_dtype=None, steps=5, vision=False, prof=False):
    torch._dynamo.reset(); torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    m = M.build('pi05', device='cuda', attn=attn)
    if param_dtype: m.set_param_dtype(param_dtype)
    m.set_recompute(recompute)
    if compile: m.compile_layers(vision=vision)
    o = torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=1e-5, fused=True)
    b = batch(B)
    ts = []
    def step():
        loss = m(b); loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); o.step(); o.zero_grad(set_to_none=True)
        return loss
    for i in range(2 + steps):
        e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
        e0.record(); loss = step(); e1.record()
        if i == 1: torch.cuda.synchronize(); setup = time.time() - t0
        if i >= 2: ts.append((e0, e1))
    torch.cuda.synchronize()
    ms = statistics.median(a.elapsed_time(b) for a, b in ts)
    fl = m.estimate_flops(b)
    print(f"{name}: B={B} {ms:.1f} ms/step {B/ms*1e3:.1f} samples/s {fl/ms/1e9:.0f} TFLOP/s peak {torch.cuda.max_memory_allocated()/2**30:.1f} GiB setup {setup:.0f}s loss {loss.item():.4f}", flush=True)
    if prof:
        from torch.profiler import profile, ProfilerActivity, record_function
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            with record_function('## fwd'):
                loss = m(b)
            with record_function('## bwd'):
                loss.backward()
            with record_function('## opt'):
                torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); o.step(); o.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
        p.export_chrome_trace(os.environ.get('OUT', '.') + '/trace.json')
        print(p.key_averages().table(sort_by='self_device_time_total', row_limit=40, max_name_column_width=100))
    del m, o
for args in [('flex compiled default vit', 32, 'flex', True, 'vit', None, 5, False, True),
             ('flex compiled no recompute', 32, 'flex', True, 'none'),
             ('flex compiled vit + compiled vision', 32, 'flex', True, 'vit', None, 5, True),
             ('flex compiled bf16 params', 32, 'flex', True, 'vit', torch.bfloat16),
             ('sdpa compiled', 32, 'sdpa', True, 'vit')]:
    try:
        run(*args)
    except Exception as e:
        traceback.print_exc(); print('FAILED', args[0], flush=True)
