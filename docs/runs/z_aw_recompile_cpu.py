"""Session 26 (2026-12-06), CPU diagnostic for test_grouped_prefix_attention_compiles_at_pi05_heads (failed on an H200
with PDL on by default): the test's call sequence without CUDA (the two direct calls, then each sampler's inputs
cloned and run three times, as GraphedSampler's warm-up and capture do) with dynamo's recompiles logged.
    PYTHONPATH=. python docs/runs/z_aw_recompile_cpu.py 2>&1 | grep -E "===|equal|Recompiling|  - "
Output: docs/logs/recompile_cpu_2026-12-06aw.txt."""
import torch, torch._dynamo, time
from dataclasses import replace
import model as M
from test_equivalence import CFG, make_model, make_batch
torch._logging.set_logs(recompiles=True)
torch.manual_seed(0)
cfg = replace(CFG, heads=8, kv_heads=1, head_dim=256, action_horizon=50, image_size=56)
m = make_model(cfg); m.attn, m.compute_dtype = 'sdpa', torch.bfloat16
b = make_batch(cfg)
m.set_param_dtype(torch.bfloat16).eval().requires_grad_(False)
x0 = torch.randn(3, cfg.action_horizon, cfg.action_dim)
torch._dynamo.reset(); M.compile_inference(m, whole_step=True)
t0=time.time()
print('=== ref'); ref = m.sample_actions(b, noise=x0, denoise_attn='grouped').float()
print('=== got'); got = m.sample_actions(b, noise=x0, denoise_attn='grouped', prefix_attn='grouped').float()
def sampler(prefix_attn):
    static = {k: v.clone() for k, v in b.items()}; n = x0.clone()
    outs = [m.sample_actions(static, noise=n, num_steps=10, denoise_attn='grouped', prefix_attn=prefix_attn).float() for _ in range(3)]
    return outs[-1]
print('=== sampler grouped'); s1 = sampler('grouped')
print('=== sampler sdpa'); s2 = sampler(None)
print('equal', torch.equal(s1, got), torch.equal(s2, ref), time.time()-t0)
