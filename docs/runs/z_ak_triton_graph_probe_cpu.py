"""CPU probe (issue 17): what inductor generates around pi05::decode_attention in a whole-step denoising graph, against
the grouped attention, at pi05's head layout (8 query heads, one K/V head, head dim 256, 50 actions), bf16, fused
projections, batch 1. The kernel cannot run on a CPU, so the 'triton' run stops at its first call; only the generated
code is read (counts of the whole-step graph's kernels and extern calls; session 20's output in
docs/logs/triton_graph_probe_2026-12-06_cpu.txt):
    TORCH_LOGS=output_code python docs/runs/z_ak_triton_graph_probe_cpu.py grouped > grouped.txt 2>&1
    TORCH_LOGS=output_code python docs/runs/z_ak_triton_graph_probe_cpu.py triton > triton.txt 2>&1
"""
import os
import sys
from dataclasses import replace

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))

import decode_attn  # noqa: E402
import model as M  # noqa: E402
import test_equivalence as T  # noqa: E402

impl = sys.argv[1]
decode_attn.usable = lambda q: True  # pretend the kernel can run: only the generated code is looked at
cfg = replace(T.CFG, heads=8, kv_heads=1, head_dim=256, action_horizon=50, image_size=56)
m = T.make_model(cfg=cfg)
m.compute_dtype = torch.bfloat16
m.set_param_dtype(torch.bfloat16, inference=True).eval().requires_grad_(False)
M.fuse_projections(m)
b = T.make_batch(cfg, B=1)
x0 = torch.randn(1, cfg.action_horizon, cfg.action_dim)
M.compile_inference(m, whole_step=True)
try:
    with torch.no_grad():
        m.sample_actions(b, noise=x0, denoise_attn=impl)
except Exception as e:
    print('RUN FAILED (expected for triton on CPU):', type(e).__name__, str(e)[:200])
