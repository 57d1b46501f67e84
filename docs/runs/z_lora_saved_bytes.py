"""Bytes autograd saves for backward per sample, full training against LoRA, for three recompute specs: pi05's widths
at depth 2 (SigLIP depth 2), eager on a CPU, bf16 compute, fp32 master weights, micro-batch 6 minus micro-batch 2
(which cancels what does not grow with the batch). Parameters are not counted. Written 2026-12-05 (session 12) to ask
whether LoRA stores more than memory.py's ACT_LORA = 0.79 of full training once the Gemma MLP is recomputed (LoRA at
micro-batch 32 with it ran out of memory under a 24 GB cap, docs/logs/fit_2026-12-05_h100_48_24.log). Output:
docs/z_lora_saved_bytes.txt. Eager counts, not the compiled graphs' (which save other tensors).
    python docs/runs/z_lora_saved_bytes.py"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import data  # noqa: E402
import model as M  # noqa: E402
import train  # noqa: E402


def saved_mib(lora, spec, B):
    """MiB of distinct non-parameter storages autograd saves in one forward of micro-batch B."""
    torch.manual_seed(0)
    conf = dict(train.default_config(), lora=lora, dtype='bfloat16', recompute=spec, compile=False)
    raw = train.build_model(conf, 'cpu', depth=2, vit_depth=2)
    M.apply_recompute(raw, spec)
    batch = data.random_batch(raw.cfg, B, cameras=2, prompt_slots=64)
    seen, total = {p.untyped_storage().data_ptr() for p in raw.parameters()}, [0]

    def pack(t):
        key = t.untyped_storage().data_ptr()
        if key not in seen:
            seen.add(key)
            total[0] += t.untyped_storage().nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        raw(batch)
    return total[0] / 2 ** 20


for spec in ['vit,layers.*.attn', 'vit,layers.*.vlm.mlp']:
    full, lora = [(saved_mib(l, spec, 6) - saved_mib(l, spec, 2)) / 4 for l in (False, True)]
    print(f'{spec:24s} full {full:6.1f} MiB/sample  lora {lora:6.1f}  ratio {lora / full:.3f}', flush=True)
