"""The fused-clip trick measured alone (docs/logs/clip_2026-12-01.log): pi05's trainable fp32 parameters with random
gradients, the clip folded into fused AdamW's grad_scale vs fused AdamW + clip_grad_norm_ vs foreach AdamW. GPU.

    PYTHONPATH=. python docs/runs/clip_bench.py
"""
import statistics, torch, model as M
torch.manual_seed(0)
raw = M.build('pi05', 'cuda', compute_dtype=torch.bfloat16)
params = [p for p in raw.parameters() if p.requires_grad]
print(f'{sum(p.numel() for p in params) / 1e9:.3f} B trainable fp32 params')
def run(name, fused, fold, iters=15):
    opt = torch.optim.AdamW(params, lr=1e-5, betas=(0.9, 0.95), eps=1e-8, weight_decay=1e-10, fused=fused or None)
    times = []
    for i in range(iters + 3):
        for p in params:
            p.grad = torch.randn_like(p) * 1e-3
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        if fold:
            gnorm = torch.nn.utils.get_total_norm([p.grad for p in params])
            opt.grad_scale = 1.0 / (1.0 / (gnorm + 1e-6)).clamp(max=1.0)
            opt.found_inf = (~torch.isfinite(gnorm)).float()
        else:
            torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        b.record()
        torch.cuda.synchronize()
        if i >= 3:
            times.append(a.elapsed_time(b))
        opt.zero_grad(set_to_none=True)
    print(f'{name}: median {statistics.median(times):.2f} ms, min {min(times):.2f}, max {max(times):.2f} (clip + AdamW step)', flush=True)
    del opt
    torch.cuda.empty_cache()
run('fused AdamW, clip folded into grad_scale', True, True)
run('fused AdamW + clip_grad_norm_', True, False)
run('fused AdamW, clip folded into grad_scale (again)', True, True)
run('fused AdamW + clip_grad_norm_ (again)', True, False)
run('foreach AdamW + clip_grad_norm_', False, False)
