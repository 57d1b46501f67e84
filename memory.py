"""
The memory a training step needs, by component, and the automatic fit of micro-batch and recompute to a GPU.

    plan = memory_plan(conf, cfg, micro_batch=32, recompute='vit')     # GiB: weights, grads, moments, ema, ...
    B, grad_accum, recompute, plan = plan_fit(conf, cfg, gpu_gib=79.1)  # the fastest setting that fits

conf holds train.py's keys param_dtype, lora, ema, fp8, micro_batch and grad_accum; cfg is the model config. The
weights' bytes come from the model built on the meta device; the activations from the constants below, measured on
the H200 for pi05 and scaled to the layout and model; which unit a recompute spec covers, from the model
(model.recompute_unit_kinds). train.py --fit=True and bench.py --fit=True use it; test_train.py checks it against
its measurements.
"""
import json
import os
from collections import Counter

import torch

import model as M

GIB = 2 ** 30
# Per sample, for pi05 at 576 prefix tokens (2 cameras x 256 patches + 64 prompt slots) and 50 actions: the
# activations (GiB) a unit kind stores when none of its units is recomputed, and the ms that recomputing all of them
# adds. memory_table.json holds the kinds `python bench.py --recompute_table=True` measures (MEASURED_KINDS) and
# says where its numbers come from; the rest are fitted to the same runs: 'rest' is what stays stored with every
# unit recomputed (the layers' inputs, embeddings, heads), 'layers' what a whole joint layer stores beyond its parts,
# and a step's ms per sample without recompute, per micro-step and per step (optimizer, clip) make the speed model
# plan_fit ranks settings by.
MEASURED_KINDS = ('vit', 'vlm_mlp', 'attn', 'expert_mlp')
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'memory_table.json')
try:
    with open(TABLE) as _f:
        _table = json.load(_f)
except (OSError, ValueError) as _err:
    raise SystemExit(f'{TABLE}: {_err}; restore it (git checkout memory_table.json) or measure it again: '
                     f'python bench.py --recompute_table=True') from None
ACT_GIB = dict(_table['act_gib'], layers=0.137, rest=0.041)
# sample and micro fitted (step kept) to the H200's step times without recompute at micro-batch 32 x 1 (533 ms,
# docs/logs/bench_2026-12-01.log) and 8 x 4 (657 ms, docs/logs/fit_2026-12-01.log): a micro-step costs ~42 ms beyond its
# samples (small GEMMs, launches), which makes 8 x 4 slow. The five 80 GB settings an H100 ran (chosen by the earlier
# model, micro=10) measure in the order this model ranks them (docs/logs/fit_2026-12-05_h100.log; test_train.py checks it).
# LoRA: a sample costs 0.53x (no weight gradients for the frozen base) and a micro-step 96 ms more (its many small
# adapter kernels), fitted to the H200's LoRA 8 x 4 step with ViT + attention recompute (874 ms, docs/logs/fit_2026-12-01.log)
# and an H100's LoRA 32 x 1 without recompute (468 ms, docs/logs/bench_2026-12-05_h100_lora.log) taken as 1.110x the H200's
# time (the H100's full-training 32 x 1 step with ViT + attention recompute, 632 ms, over this model's 570 ms for
# it on the H200: a ratio through the model, not two measurements). An H100 ran LoRA 32 x 1 with full recompute at 600 ms
# (the model, not fitted to it: 602 at that ratio)
# and 8 x 4 with ViT + attention at 1053 (docs/logs/fit_2026-12-05_h100_lora32.log, fit_2026-12-05_h100_48_24.log).
MS = dict(_table['ms'], sample=13.75, layers=2.8, micro=42.0, step=50.0, lora=0.53, lora_micro=96.0)
# LoRA's activations are charged as full training's. Measured on an H100: 32 x 1 without recompute peaked at 68.0 GiB,
# as full training's account says (docs/logs/bench_2026-12-05_h100_lora.log; that row ran after another had run out of
# memory in the same process, so it may hold some of its memory: taken as the safe reading); 8 x 4 with ViT +
# attention recompute peaked at 22.0, 1.7 GiB below the account (docs/logs/fit_2026-12-05_h100_48_24.log).
LORA_MLP_RECOMPUTE = 0.1705  # GiB per sample (pi05 layout) LoRA holds beyond that whenever the Gemma MLP is recomputed
                             # (only recomputing all of it was measured): 32 x 1 with full recompute peaked at 19.9 GiB
                             # where the account without this said 14.8, and
                             # 32 x 1 with ViT + MLP (+ attention) recompute ran out of memory under a 24 GB cap (an
                             # H100, docs/logs/fit_2026-12-05_h100_lora32.log). Why is not known: full training with the
                             # MLP recomputed matches the account (52.6 GiB, and 64.4 against 65.9 with EMA).
MAX_MICRO = 32   # the largest micro-batch the activations were measured at (memory_table.json), with and without LoRA
TRANSIENT = {'float32': 0.37, 'bfloat16': 0.05}  # on top, as a share of the weights' bytes: the bf16 casts of fp32
                                                 # weights in flight, workspaces (fit of the same measurements)
FIT_RECOMPUTE = ['none', 'vit', 'vit,layers.*.attn', 'vit,layers.*.vlm.mlp', 'vit,layers.*.vlm.mlp,layers.*.attn', 'full']


def recomputed(cfg, spec, nested=True):
    """{kind: share of that kind's units recomputed} for any recompute spec model.apply_recompute accepts (e.g.
    'layers.0.attn' is 1/depth of 'attn'). nested: a part of a recomputed whole layer counts as recomputed (what it
    stores); else only the units the spec names (what they cost)."""
    kinds = M.recompute_unit_kinds(cfg)
    chosen = set(M.resolve_recompute(cfg, spec))
    whole = {n for n in chosen if kinds[n] == 'layers'} if nested else set()
    covered = {n for n in kinds if n in chosen or any(n.startswith(w + '.') for w in whole)}
    total, done = Counter(kinds.values()), Counter(kinds[n] for n in covered)
    return {k: done[k] / total[k] for k in total}


def state_bytes(conf, cfg):
    """Bytes of weights, of the trainable ones (their gradients take as much, their AdamW moments twice that) and
    of an EMA copy, from the model built on the meta device with the config's dtype and LoRA settings."""
    with torch.device('meta'):
        m = M.Pi05(cfg)
        if conf['param_dtype'] == 'bfloat16':
            m.set_param_dtype(torch.bfloat16)
        if conf['lora']:
            M.apply_lora(m)
    weights = sum(p.numel() * p.element_size() for p in m.parameters())
    trainable = sum(p.numel() * p.element_size() for p in m.parameters() if p.requires_grad)
    return weights, trainable, 4 * sum(p.numel() for p in m.parameters()) if conf['ema'] else 0


def memory_plan(conf, cfg, micro_batch, recompute, cameras=2, prompt_slots=64, grad_accum=1, states=None):
    """Predicted peak GiB of a training step, by component: weights, gradients, AdamW moments, EMA, activations of
    micro_batch samples (ACT_GIB scaled to this layout and model), transient. The peak is the larger of a micro-step's
    backward (its activations, plus the gradients of earlier micro-steps when grad_accum > 1) and the optimizer step
    (gradients, no activations). states: state_bytes(conf, cfg), when the caller has it already."""
    weights, trainable, ema = states or state_bytes(conf, cfg)
    ref = M.configs['pi05']
    tokens = (cameras * cfg.patches + prompt_slots) / (2 * ref.patches + 64)   # Gemma-side activations scale with
    size = (cfg.width * cfg.depth) / (ref.width * ref.depth)                  # prefix tokens and width x depth,
    vit = cameras / 2 * cfg.patches / ref.patches * (cfg.vit_width * cfg.vit_depth) / (ref.vit_width * ref.vit_depth)
    share = recomputed(cfg, recompute)
    per_sample = ACT_GIB['rest'] * tokens * size + sum(
        ACT_GIB[k] * (vit if k == 'vit' else tokens * size) * (1 - share[k]) for k in share)
    if conf['fp8']:  # fp8 Linears store fp8 copies of their inputs: 0.47 GiB less per sample at micro-batch 32 (bench)
        per_sample -= 0.47 * tokens * size * (1 - share['vlm_mlp'])
    if conf['lora'] and share['vlm_mlp']:
        per_sample += LORA_MLP_RECOMPUTE * tokens * size
    plan = dict(weights=weights / GIB, grads=trainable / GIB, moments=2 * trainable / GIB, ema=ema / GIB,
                activations=micro_batch * per_sample, transient=TRANSIENT[conf['param_dtype']] * weights / GIB)
    states = plan['weights'] + plan['moments'] + plan['ema'] + plan['transient']
    plan['peak'] = max(states + plan['activations'] + (plan['grads'] if grad_accum > 1 else 0), states + plan['grads'])
    return plan


def step_ms(cfg, micro_batch, n_micro, recompute, lora=False):
    """The speed model: ms per optimizer step (MS)."""
    share = recomputed(cfg, recompute, nested=False)
    per = MS['sample'] * (MS['lora'] if lora else 1.0) + sum(MS[k] * share[k] for k in share)
    return n_micro * (micro_batch * per + MS['micro'] + (MS['lora_micro'] if lora else 0.0)) + MS['step']


def fit_candidates(conf, cfg, gpu_gib, cameras=2, prompt_slots=64, margin_gib=1.5):
    """Every (predicted ms per step, micro-batch, grad_accum, recompute, plan) whose predicted peak fits gpu_gib -
    margin_gib (CUDA context, fragmentation), keeping the config's per-process batch micro_batch x grad_accum,
    fastest first by the speed model (bench.py --fit_top=n measures the first n). Micro-batches at most MAX_MICRO,
    where the account was measured."""
    per_gpu = conf['micro_batch'] * conf['grad_accum']
    found, states = [], state_bytes(conf, cfg)
    for B in [b for b in range(min(per_gpu, MAX_MICRO), 0, -1) if per_gpu % b == 0]:
        for rc in FIT_RECOMPUTE:
            plan = memory_plan(conf, cfg, B, rc, cameras, prompt_slots, per_gpu // B, states)
            if plan['peak'] <= gpu_gib - margin_gib:
                found.append((step_ms(cfg, B, per_gpu // B, rc, conf['lora']), B, per_gpu // B, rc, plan))
    return sorted(found, key=lambda c: c[0])  # stable: equal times keep the larger micro-batch, less recompute


def plan_fit(conf, cfg, gpu_gib, cameras=2, prompt_slots=64, margin_gib=1.5):
    """The fastest (micro-batch, grad_accum, recompute) of fit_candidates. Returns (micro_batch, grad_accum,
    recompute, plan) or raises SystemExit naming what to change."""
    found = fit_candidates(conf, cfg, gpu_gib, cameras, prompt_slots, margin_gib)
    if not found:
        per_gpu = conf['micro_batch'] * conf['grad_accum']
        smallest = memory_plan(conf, cfg, 1, 'full', cameras, prompt_slots, per_gpu, state_bytes(conf, cfg))['peak']
        # the first of the lighter setups that fits, as flags (LoRA trains without EMA: train.check_config)
        lighter = (dict(param_dtype='bfloat16'), dict(param_dtype='bfloat16', ema=False),
                   dict(lora=True, ema=False, fp8=False))
        fits = [alt for alt in lighter if any(conf[k] != v for k, v in alt.items())
                and fit_candidates(dict(conf, **alt), cfg, gpu_gib, cameras, prompt_slots, margin_gib)]
        hint = (' '.join(f'--{k}={v}' for k, v in fits[0].items() if conf[k] != v) + ' fits' if fits else
                'neither bf16 weights nor LoRA fit either: use a larger GPU, or several with shard=True (no EMA)')
        raise SystemExit(f"train.py: nothing fits {gpu_gib:.1f} GiB with param_dtype={conf['param_dtype']!r}, "
                         f"ema={conf['ema']}, lora={conf['lora']} (micro-batch 1 with full recompute needs "
                         f"{smallest:.1f} GiB): {hint}")
    _, B, accum, rc, plan = found[0]
    return B, accum, rc, plan


def describe_plan(plan):
    return ', '.join(f'{k} {v:.1f}' for k, v in plan.items() if k != 'peak' and v) + f" -> peak {plan['peak']:.1f} GiB"
