"""
FP8 training for Pi0.5 with torchao float8 (tensorwise scaling), case study section 7.2.

Which Linear layers run in fp8 is decided in two stages:
  1. static rules (`fp8_filter`): precision-sensitive modules keep their precision, frozen/never-run and small or
     misaligned layers are skipped;
  2. trace validation (`python fp8.py --validate`): one bf16 and one fp8 training step of the real model are profiled,
     every GEMM kernel is mapped back to its module by shape, and only the layers that get faster are written to
     fp8_keep.txt, which `convert_to_fp8(model, keep_list='fp8_keep.txt')` then honours.

    import fp8
    fp8.convert_to_fp8(model, keep_list='fp8_keep.txt')   # before recompute and compile; prints what it did
    with fp8.fp8_disabled(model):                         # evaluation / sample_actions in plain bf16
        actions = model.sample_actions(batch)

    python fp8.py --validate [--batch=32]                 # GPU, ~4-6 min (2 compiles): bf16 vs fp8 GEMM time per module
                                                          #   group -> fp8_keep.txt
    python fp8.py --compare --steps=500 [--out=out_fp8]   # GPU, ~3-4 min: bf16 vs fp8 loss curves (csv, png); pi05
                                                          #   widths, depth 4, vit_depth 4, micro-batch 16
    python fp8.py --table                                 # CPU: the converted/skipped table of the real pi05 model

Float8Linear keeps the `weight`/`bias` parameters of the Linear it replaces (same objects, fp32 master weights stay
fp32), so state_dict keys and checkpoints are unchanged. With a bf16 input and an fp32 weight it casts both to fp8
with one scale each, returns bf16, and the weight gradient lands in fp32 (test_fp8.py checks all of this).
"""
import argparse
import contextlib
import fnmatch
import os
import re
import struct
import time
import zlib
from collections import namedtuple
from dataclasses import replace

import torch
import torch.nn as nn
from torchao.float8 import Float8LinearConfig, convert_to_float8_training
from torchao.float8.float8_linear import Float8Linear

import model as modeling

HERE = os.path.dirname(os.path.abspath(__file__))
KEEP_FILE = os.path.join(HERE, 'fp8_keep.txt')

# case study 7.2: fp8-min-dim=2048. It drops 36 layers of pi05 there, which are the 18 expert k_proj + v_proj
# (1024 -> 256): the threshold applies to the larger of in/out features. Applied to the smaller one it would also
# drop the whole expert and the vlm k/v (162 layers), contradicting the case study's 216 converted layers.
MIN_DIM = 2048

# precision-sensitive modules keep their precision (case study 7.2); fnmatch patterns over module FQNs
KEEP_PRECISION = [
    ('vision.*', 'vision tower'),
    ('projector', 'multi-modal projector'),
    ('action_in_proj', 'action/time projection'),
    ('action_out_proj', 'action/time projection'),
    ('time_mlp_*', 'action/time projection'),
    ('*.dense', 'adaRMS modulation'),
]

Decision = namedtuple('Decision', 'fqn in_features out_features convert reason')

# -----------------------------------------------------------------------------
# which layers


def read_keep_list(path):
    """One FQN (or fnmatch pattern) per line; '#' starts a comment."""
    with open(path) as f:
        lines = (line.split('#', 1)[0].strip() for line in f)
        return {line for line in lines if line}


def _as_keep_set(keep_list):
    if keep_list is None or isinstance(keep_list, (set, frozenset)):
        return keep_list
    if isinstance(keep_list, (str, os.PathLike)):
        return read_keep_list(keep_list)
    return set(keep_list)


def fp8_filter(name, module, min_dim=MIN_DIM, keep=None):
    """(convert?, reason) for one module. keep: None, or a set of FQNs / fnmatch patterns; when given, only the
    modules that pass the static rules *and* appear in it are converted."""
    if not isinstance(module, nn.Linear):
        return False, 'not a Linear'
    if isinstance(module, Float8Linear):
        return False, 'already fp8'
    for pattern, reason in KEEP_PRECISION:
        if fnmatch.fnmatchcase(name, pattern):
            return False, reason
    if not any(p.requires_grad for p in module.parameters()):  # the last layer's prefix q/o/mlp (skip_unused)
        return False, 'never runs in training (frozen)'
    if module.in_features % 16 or module.out_features % 16:  # _scaled_mm needs K and N multiples of 16
        return False, 'dims not multiples of 16'
    if max(module.in_features, module.out_features) < min_dim:
        return False, f'small: in and out < {min_dim}'
    if keep is not None and not any(fnmatch.fnmatchcase(name, p) for p in keep):
        return False, 'not in keep-list'
    return True, 'fp8'


def decisions(model, min_dim=MIN_DIM, keep_list=None):
    keep = _as_keep_set(keep_list)
    out = []
    for name, m in model.named_modules():
        if isinstance(m, nn.Linear):
            convert, reason = fp8_filter(name, m, min_dim, keep)
            if isinstance(m, Float8Linear):
                convert, reason = True, 'fp8 (converted before)'
            out.append(Decision(name, m.in_features, m.out_features, convert, reason))
    return out


def converted_fqns(model):
    return sorted((n for n, m in model.named_modules() if isinstance(m, Float8Linear)), key=natural_key)


def natural_key(s):
    return [int(t) if t.isdigit() else t for t in re.split(r'(\d+)', s)]


NUM = re.compile(r'(?<=\.)\d+(?=\.)|^\d+(?=\.)')  # a layer index between dots


def _pattern(fqn):
    """layers.5.vlm.mlp.gate_proj -> ('layers.*.vlm.mlp.gate_proj', 5); no index -> (fqn, None)"""
    m = NUM.search(fqn)
    return NUM.sub('*', fqn), (int(m.group()) if m else None)


def _ranges(nums):
    """[0, 1, 2, 5] -> '0-2,5'"""
    out = []
    for n in sorted(set(nums)):
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return ','.join(str(a) if a == b else f'{a}-{b}' for a, b in out)


def format_table(table):
    """Group decisions by FQN pattern (layer index -> *), shape and reason, so the real model's 456 Linears fit
    on a screen: one row per group with its count and layer indices; converted groups first."""
    groups = {}
    for d in table:
        pat, i = _pattern(d.fqn)
        groups.setdefault((d.convert, pat, d.in_features, d.out_features, d.reason), []).append(i)
    rows = [('fp8' if conv else 'skip', pat, f'{i}x{o}', str(len(idx)), _ranges(k for k in idx if k is not None), reason)
            for (conv, pat, i, o, reason), idx in groups.items()]
    rows.sort(key=lambda r: (r[0] != 'fp8', r[5] if r[0] != 'fp8' else '', natural_key(r[1])))
    head = ('', 'module', 'in x out', 'n', 'layers', 'reason')
    widths = [max(len(r[c]) for r in rows + [head]) for c in range(len(head))]
    fmt = lambda r: '  '.join(s.ljust(w) for s, w in zip(r, widths)).rstrip()
    skipped = {}
    for d in table:
        if not d.convert:
            skipped[d.reason] = skipped.get(d.reason, 0) + 1
    summary = (f'fp8: {sum(d.convert for d in table)} of {len(table)} Linear layers converted; skipped: '
               + ', '.join(f'{n} {r}' for r, n in sorted(skipped.items(), key=lambda x: -x[1])))
    return '\n'.join([fmt(head)] + [fmt(r) for r in rows] + [summary])


# -----------------------------------------------------------------------------
# conversion and switching off


def fp8_config(pad_inner_dim=False):
    config = Float8LinearConfig.from_recipe_name('tensorwise')  # dynamic per-tensor scales, e4m3 fwd / e5m2 grads
    return replace(config, pad_inner_dim=pad_inner_dim)


def rows_aligned(cfg, batch_size, prompt_slots=64, cameras=2):
    """The weight-gradient GEMM contracts over tokens, and CUDA's _scaled_mm needs that dimension to be a multiple
    of 16: the expert sees B*50 tokens (so B a multiple of 8), the prefix B*(cameras*256 + prompt slots). If not,
    convert with pad_inner_dim=True (torchao zero-pads the fp8 operands)."""
    prefix = cameras * cfg.patches + prompt_slots
    return (batch_size * cfg.action_horizon) % 16 == 0 and (batch_size * prefix) % 16 == 0


def convert_to_fp8(model, min_dim=MIN_DIM, keep_list=None, pad_inner_dim=False, verbose=True):
    """Swap the selected Linears for torchao Float8Linear in place; returns the per-module decisions (and prints
    them grouped). Call before recompute and compile: a compiled layer would keep tracing the old modules.
    pad_inner_dim: needed on CUDA when the token counts are not multiples of 16 (see rows_aligned)."""
    compiled = [n for n, m in model.named_modules() if getattr(m, '_compiled_call_impl', None) is not None]
    if compiled or getattr(model, 'compiled', None):
        raise RuntimeError(f'convert_to_fp8 must run before compile; already compiled: {(compiled or ["model.compiled"])[:3]}')
    keep = _as_keep_set(keep_list)
    if keep is not None:
        names = {n for n, _ in model.named_modules()}
        unmatched = [p for p in keep if p not in names and not any(fnmatch.fnmatchcase(n, p) for n in names)]
        if unmatched and verbose:  # e.g. a pi05 keep-list used on a shallower model
            print(f'fp8: {len(unmatched)} keep-list entries match no module here (e.g. {sorted(unmatched, key=natural_key)[0]})')
    table = decisions(model, min_dim, keep)
    want = {d.fqn for d in table if d.convert}
    convert_to_float8_training(model, config=fp8_config(pad_inner_dim),
                               module_filter_fn=lambda m, fqn: fqn in want and not isinstance(m, Float8Linear))
    got = set(converted_fqns(model))
    assert got == want, f'fp8 conversion mismatch: missing {sorted(want - got)[:5]}, extra {sorted(got - want)[:5]}'
    if verbose:
        print(format_table(table))
    return table


@contextlib.contextmanager
def fp8_disabled(model):
    """Run the converted layers as the model's own bf16 Linear (same parameters) inside the block, e.g. for
    evaluation and sample_actions. Swapping the class keeps module identity, so compiled layers just recompile."""
    swapped = [m for m in model.modules() if type(m) is Float8Linear]
    for m in swapped:
        m.__class__ = modeling.Linear
    try:
        yield model
    finally:
        for m in swapped:
            m.__class__ = Float8Linear


# -----------------------------------------------------------------------------
# synthetic LIBERO-shaped batches (2 cameras x 256 patches, ~64 prompt tokens, 50 actions)


def synthetic_batch(cfg, B, prompt_len=64, device='cpu', generator=None):
    g = dict(device=device, generator=generator)
    S, H, A = cfg.image_size, cfg.action_horizon, cfg.action_dim
    lengths = torch.randint(prompt_len // 2, prompt_len + 1, (B,), **g)
    lengths[0] = prompt_len  # one full prompt, so trim_batch keeps a fixed length
    return {
        'images': torch.randint(0, 256, (B, 2, 3, S, S), dtype=torch.uint8, **g),
        'image_mask': torch.ones(B, 2, dtype=torch.bool, device=device),
        'tokens': torch.randint(1, cfg.vocab, (B, prompt_len), **g),
        'token_mask': torch.arange(prompt_len, device=device) < lengths[:, None],
        'actions': torch.randn(B, H, A, **g),
    }


# -----------------------------------------------------------------------------
# --validate: GEMM kernels of one profiled step mapped back to modules by shape

GEMM_OP = re.compile(r'^aten::(mm|addmm|bmm|baddbmm|_scaled_mm\w*)$')
Gemm = namedtuple('Gemm', 'phase shape us kernel')


def linear_rows(model, batch):
    """Rows (tokens) each Linear sees in a forward of this batch, from forward hooks on an eager no-grad pass.
    Hooks do not survive compile, which is why the profile is mapped by shape instead."""
    rows, hooks = {}, []
    for name, m in model.named_modules():
        if isinstance(m, nn.Linear):
            hooks.append(m.register_forward_hook(
                lambda m, inp, out, name=name: rows.__setitem__(name, inp[0].numel() // inp[0].shape[-1])))
    attn, model.attn = model.attn, ('sdpa' if model.attn == 'flex' else model.attn)  # no BlockMask compile
    try:
        with torch.no_grad():
            model(batch)
    finally:
        model.attn = attn
        for h in hooks:
            h.remove()
    return rows


def gemm_events(prof, device='cuda'):
    """Leaf GEMM ops of a profile with their phase ('fwd' / 'bwd', from record_function ranges around forward and
    backward), shape (M, K, N) and kernel time in us (CPU time when profiling on the CPU)."""
    events = prof.events()
    ranges = [(e.time_range.start, e.time_range.end, e.name.split('.')[-1])
              for e in events if e.name in ('fp8.fwd', 'fp8.bwd')]
    out = []
    for e in events:
        if not GEMM_OP.match(e.name) or any(GEMM_OP.match(c.name) for c in e.cpu_children):
            continue
        first = 1 if e.name.endswith('addmm') else 0  # addmm/baddbmm: (bias, mat1, mat2); others: (mat1, mat2, ...)
        a, b = (list(e.input_shapes) + [[], [], []])[first:first + 2]
        if len(a) < 2 or len(b) < 2:
            continue
        shape = (a[-2], a[-1], b[-1]) if len(a) == 2 else tuple(a[:-1]) + (a[-1], b[-1])  # 3-d: batched
        if device == 'cpu':
            us = e.cpu_time_total
        else:
            us = sum(k.duration for k in e.kernels) or e.device_time_total
        t = e.time_range.start
        phase = next((p for s, end, p in ranges if s <= t <= end), 'other')
        kernel = e.kernels[0].name if device != 'cpu' and e.kernels else e.name
        out.append(Gemm(phase, shape, us, kernel))
    return out


def gemm_groups(model, rows):
    """Every GEMM signature (phase, M, K, N) a Linear with `rows` input rows produces: forward (rows, in, out),
    input grad (rows, out, in), weight grad (out, rows, in) or (in, rows, out). Linears that share a signature
    cannot be told apart by a trace, so they are merged into one group (union-find).
    Returns {signature: group id}, {group id: [fqn, ...]}."""
    lin = {n: m for n, m in model.named_modules() if isinstance(m, nn.Linear) and n in rows}
    parent = {n: n for n in lin}

    def find(n):
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    owner = {}
    for n, m in lin.items():
        r, i, o = rows[n], m.in_features, m.out_features
        for sig in (('fwd', r, i, o), ('bwd', r, o, i), ('bwd', o, r, i), ('bwd', i, r, o)):
            if sig in owner:
                parent[find(n)] = find(owner[sig])
            else:
                owner[sig] = n
    groups = {}
    for n in lin:
        groups.setdefault(find(n), []).append(n)
    return {sig: find(n) for sig, n in owner.items()}, groups


def attribute(gemms, sig_to_group):
    """Sum GEMM time per group; a GEMM that matches no Linear in its phase (recompute replays forward GEMMs in
    backward) tries the other phase, and what still matches nothing is 'batched (attention)' or 'unmatched'."""
    times, counts = {}, {}
    for g in gemms:
        if len(g.shape) != 3 or g.phase == 'other':
            key = 'batched (attention)' if len(g.shape) != 3 else 'outside fwd/bwd'
        else:
            m, k, n = g.shape
            other = 'bwd' if g.phase == 'fwd' else 'fwd'
            key = sig_to_group.get((g.phase, m, k, n)) or sig_to_group.get((other, m, k, n)) or 'unmatched'
        times[key] = times.get(key, 0.0) + g.us
        counts[key] = counts.get(key, 0) + 1
    return times, counts


def group_label(fqns):
    """['layers.0.vlm.mlp.up_proj', 'layers.3.vlm.mlp.gate_proj'] -> 'layers.*.vlm.mlp.{gate_proj,up_proj}'"""
    by_parent = {}
    for f in fqns:
        parent, _, leaf = _pattern(f)[0].rpartition('.')
        by_parent.setdefault(parent, set()).add(leaf)
    parts = []
    for parent, leaves in sorted(by_parent.items(), key=lambda x: natural_key(x[0])):
        leaf = next(iter(leaves)) if len(leaves) == 1 else '{' + ','.join(sorted(leaves)) + '}'
        parts.append(f'{parent}.{leaf}' if parent else leaf)
    return ' + '.join(parts)


def profile_step(model, batch, steps=2, warmup=2, device='cuda'):
    """Warm up (compile), time `steps` steps, then profile `steps` more. Returns (gemms, total kernel us, ms/step)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    def step():
        with record_function('fp8.fwd'):
            loss = model(batch)
        with record_function('fp8.bwd'):
            loss.backward()
        model.zero_grad(set_to_none=True)

    sync = torch.cuda.synchronize if device == 'cuda' else (lambda: None)
    for _ in range(warmup):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    ms = (time.perf_counter() - t0) / steps * 1e3
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == 'cuda' else [])
    with profile(activities=acts, record_shapes=True) as prof:
        for _ in range(steps):
            step()
        sync()
    gemms = gemm_events(prof, device)
    if device == 'cuda':
        # kernels only: the fp8.fwd / fp8.bwd ranges also appear on the GPU timeline and would be counted twice
        total = sum(e.time_range.elapsed_us() for e in prof.events()
                    if e.device_type == torch.autograd.DeviceType.CUDA and not e.name.startswith('fp8.'))
    else:
        total = sum(e.self_cpu_time_total for e in prof.events())
    if gemms and not any(g.us for g in gemms):
        print('warning: GEMM ops found but no kernel time attributed to them; check the profiler version')
    scale = 1.0 / steps
    return [g._replace(us=g.us * scale) for g in gemms], total * scale, ms


def free_memory():
    import gc
    torch._dynamo.reset()  # compiled code holds the old modules
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def validate(args):
    dev = args.device
    overrides = {k: v for k, v in (('depth', args.depth), ('vit_depth', args.vit_depth)) if v}
    desc = args.config + ''.join(f' {k}={v}' for k, v in overrides.items())
    device_name = torch.cuda.get_device_name() if dev == 'cuda' else dev

    def fresh_model():
        torch.manual_seed(0)
        return modeling.build(args.config, device=dev, attn='flex' if dev == 'cuda' else 'eager', **overrides)

    model = fresh_model()
    cfg = model.cfg
    batch = synthetic_batch(cfg, args.batch, args.prompt_len, dev, torch.Generator(dev).manual_seed(0))
    rows = linear_rows(model, batch)
    sig_to_group, groups = gemm_groups(model, rows)
    static = {d.fqn: d for d in decisions(model, args.min_dim)}
    pad = dev == 'cuda' and not rows_aligned(cfg, args.batch, args.prompt_len)
    print(f'{device_name} | torch {torch.__version__} | {desc} | batch {args.batch} | '
          f'tokens {tuple(batch["tokens"].shape)} | {len(groups)} shape groups{" | pad_inner_dim" if pad else ""}')

    def run(label):
        if args.recompute != 'none':
            model.set_recompute(args.recompute)
        model.compile_layers(vision=bool(args.compile_vision), backend=args.backend)
        t0 = time.perf_counter()
        gemms, total, ms = profile_step(model, batch, steps=args.profile_steps, device=dev)
        times, counts = attribute(gemms, sig_to_group)
        gemm_us = sum(g.us for g in gemms)
        unmatched = counts.get('unmatched', 0)
        print(f'{label}: {ms:.1f} ms/step, {args.batch / ms * 1e3:.1f} samples/s | GEMM {gemm_us / 1e3:.1f} ms of '
              f'{total / 1e3:.1f} ms kernel time = {100 * gemm_us / max(total, 1):.0f}% '
              f'({100 * gemm_us / 1e3 / ms:.0f}% of the step) | {len(gemms)} GEMMs, {unmatched} unmatched | '
              f'{time.perf_counter() - t0:.0f} s incl. compile')
        if unmatched:  # shapes no Linear explains: worth a look before trusting the table
            odd = sorted({(g.phase, g.shape, g.kernel[:60]) for g in gemms if len(g.shape) == 3 and
                          (g.phase, *g.shape) not in sig_to_group and
                          (('bwd' if g.phase == 'fwd' else 'fwd'), *g.shape) not in sig_to_group})
            print('  unmatched GEMMs (phase, M K N, kernel):', odd[:8])
        return times, counts, gemm_us, total, ms

    bf16 = run('bf16')
    del model  # a fresh, uncompiled model for fp8 (convert_to_fp8 refuses compiled modules)
    free_memory()
    model = fresh_model()
    convert_to_fp8(model, args.min_dim, pad_inner_dim=pad)
    fp8 = run('fp8 ')

    # per group: bf16 vs fp8 GEMM time; keep the statically convertible layers of groups that got faster
    keep, lines = [], []
    keys = sorted(set(bf16[0]) | set(fp8[0]), key=lambda k: -bf16[0].get(k, 0))
    labels = {k: group_label(groups[k]) if k in groups else k for k in keys}
    w = max(len(v) for v in labels.values())
    print(f'{"GEMM group (Linears that share GEMM shapes)":<{w}} {"n":>4} {"fp8":>4} {"bf16 ms":>8} {"fp8 ms":>8} {"x":>6}  decision')
    for key in keys:
        b, f8 = bf16[0].get(key, 0) / 1e3, fp8[0].get(key, 0) / 1e3
        fqns = groups.get(key, [])
        cand = [n for n in fqns if static.get(n) and static[n].convert]
        speedup = b / f8 if f8 else float('inf')
        if not cand:
            decision = 'bf16 (static rules)' if fqns else '-'
        elif speedup >= args.min_speedup:
            decision = 'keep fp8'
            keep += cand
        else:
            decision = 'drop (not faster)'
        print(f'{labels[key]:<{w}} {len(fqns):>4} {len(cand):>4} {b:8.2f} {f8:8.2f} {speedup:6.2f}  {decision}')
        if cand:
            lines.append(f'# {labels[key]}: bf16 {b:.2f} ms, fp8 {f8:.2f} ms, {speedup:.2f}x -> {decision}')
    print(f'GEMM share of kernel time: bf16 {100 * bf16[2] / bf16[3]:.0f}% -> fp8 {100 * fp8[2] / fp8[3]:.0f}% | '
          f'GEMM {bf16[2] / 1e3:.1f} -> {fp8[2] / 1e3:.1f} ms | step {bf16[4]:.1f} -> {fp8[4]:.1f} ms '
          f'({bf16[4] / fp8[4]:.3f}x) | keep {len(keep)} layers')
    with open(args.keep_out, 'w') as f:
        f.write(f'# fp8 keep-list written by `python fp8.py --validate` on {time.strftime("%Y-%m-%d")}: '
                f'{device_name}, torch {torch.__version__}, {desc}, '
                f'batch {args.batch}, min_dim {args.min_dim}\n')
        f.write(f'# GEMM share {100 * bf16[2] / bf16[3]:.0f}% -> {100 * fp8[2] / fp8[3]:.0f}%, '
                f'step {bf16[4]:.1f} -> {fp8[4]:.1f} ms\n')
        f.write('\n'.join(lines) + '\n')
        f.write('\n'.join(sorted(keep, key=natural_key)) + '\n')
    print(f'wrote {len(keep)} FQNs to {args.keep_out}')


# -----------------------------------------------------------------------------
# --compare: bf16 vs fp8 loss curves from the same init on the same batches


def task_pool(cfg, n, prompt_len, device, seed=0):
    """n fixed (images, prompt, smooth action trajectory) samples: learnable, so the loss keeps moving."""
    g = torch.Generator(device).manual_seed(seed)
    pool = synthetic_batch(cfg, n, prompt_len, device, g)
    walk = torch.randn(n, cfg.action_horizon, cfg.action_dim, device=device, generator=g).cumsum(1)
    pool['actions'] = walk / walk.std(dim=(1,), keepdim=True).clamp_min(1e-3)
    return pool


def train_curve(model, pool, args, label):
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.95), weight_decay=1e-10,
                            fused=torch.cuda.is_available())
    dev = pool['actions'].device
    losses = torch.zeros(args.steps, device=dev)
    n = pool['actions'].shape[0]
    t0 = time.perf_counter()
    for i in range(args.steps):
        g = torch.Generator(dev).manual_seed(1_000_003 * args.seed + i)  # same samples, noise and time in both runs
        idx = torch.randint(0, n, (args.batch,), device=dev, generator=g)
        batch = {k: v[idx] for k, v in pool.items()}  # untrimmed: one shape, no recompiles, no host sync
        for group in opt.param_groups:
            group['lr'] = args.lr * min(1.0, (i + 1) / args.warmup)
        loss = model(batch, generator=g)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses[i] = loss.detach()
        if i == 0:
            first = time.perf_counter() - t0
            t1 = time.perf_counter()
    if dev.type == 'cuda':
        torch.cuda.synchronize()
    steady = (time.perf_counter() - t1) / max(args.steps - 1, 1) * 1e3
    print(f'{label}: first step {first:.0f} s (compile included when compiled), then {steady:.1f} ms/step, '
          f'loss {losses[:10].mean():.4f} -> {losses[-10:].mean():.4f}')
    return losses.cpu().double().numpy()


def compare(args):
    import numpy as np
    dev = 'cuda' if torch.cuda.is_available() else 'cpu'
    t_start = time.perf_counter()
    torch.manual_seed(args.seed)
    compile_ = dev == 'cuda' and bool(args.compile)
    attn = 'flex' if compile_ else 'sdpa' if dev == 'cuda' else 'eager'  # flex attention wants compile
    model = modeling.build(args.config, device=dev, attn=attn, depth=args.depth, vit_depth=args.vit_depth)
    init = {k: v.clone() for k, v in model.state_dict().items()}
    pool = task_pool(model.cfg, args.pool, args.prompt_len, dev, args.seed)
    print(f'{torch.cuda.get_device_name() if dev == "cuda" else "cpu"} | torch {torch.__version__} | {args.config} '
          f'depth {args.depth} vit_depth {args.vit_depth} | batch {args.batch} | {args.steps} steps | lr {args.lr} | '
          f'{"compiled layers" if compile_ else "eager"}')

    if compile_:
        model.compile_layers()
    bf16 = train_curve(model, pool, args, 'bf16')

    del model  # a fresh, uncompiled model for fp8 (convert_to_fp8 refuses compiled modules)
    free_memory()
    model = modeling.build(args.config, device=dev, attn=attn, depth=args.depth, vit_depth=args.vit_depth)
    model.load_state_dict(init)  # the same initial weights
    keep = args.keep_list or None
    if keep and not os.path.exists(keep):
        print(f'no keep-list at {keep}: static rules only')
        keep = None
    pad = dev == 'cuda' and not rows_aligned(model.cfg, args.batch, args.prompt_len)
    table = convert_to_fp8(model, args.min_dim, keep_list=keep, pad_inner_dim=pad)
    if not any(d.convert for d in table):
        print('warning: no layer converted, the two runs are both bf16')
    if compile_:
        model.compile_layers()
    fp8 = train_curve(model, pool, args, 'fp8 ')

    pearson = float(np.corrcoef(bf16, fp8)[0, 1])
    rel = float(np.mean(np.abs(fp8 - bf16) / np.abs(bf16)))
    os.makedirs(args.out, exist_ok=True)
    csv = os.path.join(args.out, 'fp8_vs_bf16_loss.csv')
    with open(csv, 'w') as f:
        f.write('step,bf16,fp8\n')
        f.writelines(f'{i},{a:.6f},{b:.6f}\n' for i, (a, b) in enumerate(zip(bf16, fp8)))
    png = plot_losses(os.path.join(args.out, 'fp8_vs_bf16_loss.png'), {'bf16': bf16, 'fp8': fp8})
    ok = 'meets' if pearson >= 0.9997 and rel <= 0.005 else 'misses'
    print(f'loss fp8 vs bf16 over {args.steps} steps | pearson {pearson:.5f} | mean rel err {100 * rel:.3f}% | '
          f'{ok} the target (pearson >= 0.9997, rel err <= 0.5%, docs/targets.md) | '
          f'{csv} | {png} | {time.perf_counter() - t_start:.0f} s total')
    return pearson, rel


# -----------------------------------------------------------------------------
# a PNG without matplotlib (the GPU machine may not have it)

COLORS = [(31, 119, 180), (214, 39, 40), (44, 160, 44)]


def write_png(path, rgb):
    """rgb: uint8 array (H, W, 3). PNG = signature, IHDR, zlib'd rows each prefixed by filter byte 0, IEND."""
    h, w, _ = rgb.shape
    raw = b''.join(b'\x00' + rgb[y].tobytes() for y in range(h))
    chunk = lambda tag, data: struct.pack('>I', len(data)) + tag + data + struct.pack('>I', zlib.crc32(tag + data))
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0))
                + chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b''))
    return path


def plot_losses(path, curves):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(9, 5))
        for (name, y), c in zip(curves.items(), COLORS):
            ax.plot(y, color=[v / 255 for v in c], lw=1, label=name, alpha=0.8)
        ax.set_xlabel('step'), ax.set_ylabel('loss'), ax.legend(), fig.tight_layout()
        fig.savefig(path, dpi=100)
        return path
    except ImportError:
        pass
    import numpy as np
    W, H, pad = 900, 500, 40
    img = np.full((H, W, 3), 255, np.uint8)
    ys = np.concatenate(list(curves.values()))
    lo, hi = float(ys.min()), float(ys.max())
    for k in range(5):  # grey gridlines at 0, 25, ..., 100% of the loss range
        img[pad + k * (H - 2 * pad) // 4, pad:W - pad] = 220
    img[pad:H - pad, pad] = img[H - pad, pad:W - pad] = 0

    def polyline(y, color):
        x = np.linspace(pad, W - pad - 1, len(y))
        v = H - pad - (np.asarray(y) - lo) / max(hi - lo, 1e-12) * (H - 2 * pad)
        for x0, x1, y0, y1 in zip(x[:-1], x[1:], v[:-1], v[1:]):
            n = int(max(abs(x1 - x0), abs(y1 - y0))) + 2  # one sample per pixel along the segment
            img[np.linspace(y0, y1, n).round().astype(int).clip(0, H - 1),
                np.linspace(x0, x1, n).round().astype(int).clip(0, W - 1)] = color

    def ema(y, beta=0.9):
        out, m = np.empty(len(y)), y[0]
        for i, v in enumerate(y):
            m = beta * m + (1 - beta) * v
            out[i] = m
        return out

    colors = dict(zip(curves, COLORS))
    for name, y in curves.items():  # raw losses faint, their moving average on top
        polyline(y, [255 - (255 - c) * 2 // 5 for c in colors[name]])
    for j, (name, y) in enumerate(curves.items()):
        polyline(ema(np.asarray(y, float)), colors[name])
        img[pad // 2 - 5:pad // 2 + 5, W - pad - 30 - 20 * j:W - pad - 20 - 20 * j] = colors[name]  # legend square
    print(f'plot: {", ".join(f"{n} = rgb{c}" for n, c in colors.items())} (faint: raw, strong: moving average), '
          f'y from {lo:.4f} to {hi:.4f}')
    return write_png(path, img)


# -----------------------------------------------------------------------------


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument('--validate', action='store_true', help='profile bf16 vs fp8 per module, write the keep-list')
    mode.add_argument('--compare', action='store_true', help='bf16 vs fp8 loss curves')
    mode.add_argument('--table', action='store_true', help='print the static decisions for the real pi05 model')
    p.add_argument('--config', default='pi05')
    p.add_argument('--batch', type=int, default=None, help='micro-batch (validate 32, compare 16)')
    p.add_argument('--prompt_len', type=int, default=64)
    p.add_argument('--min_dim', type=int, default=MIN_DIM)
    p.add_argument('--depth', type=int, default=None, help='validate: full model; compare: 4')
    p.add_argument('--vit_depth', type=int, default=None, help='validate: full model; compare: 4')
    # --validate
    p.add_argument('--profile_steps', type=int, default=2)
    p.add_argument('--recompute', default='none', help="model.set_recompute: 'none' | 'vit' | 'full'")
    p.add_argument('--compile_vision', type=int, default=0)
    p.add_argument('--min_speedup', type=float, default=1.0, help='keep a group when bf16/fp8 GEMM time >= this')
    p.add_argument('--keep_out', default=KEEP_FILE)
    p.add_argument('--device', default='cuda', help='cpu: a smoke test of the tool (CPU times mean little)')
    p.add_argument('--backend', default='inductor', help='torch.compile backend of the layers')
    # --compare
    p.add_argument('--steps', type=int, default=500)
    p.add_argument('--lr', type=float, default=1e-4, help='5e-5 is the fine-tuning lr; 1e-4 moves the loss more')
    p.add_argument('--warmup', type=int, default=20)
    p.add_argument('--pool', type=int, default=64, help='distinct synthetic samples')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--keep_list', default=KEEP_FILE if os.path.exists(KEEP_FILE) else '', help="'' for static rules only")
    p.add_argument('--compile', type=int, default=1, help='0: eager (sdpa attention), no compile time')
    p.add_argument('--out', default='out_fp8')
    args = p.parse_args(argv)
    if args.table:
        with torch.device('meta'):
            m = modeling.Pi05(modeling.configs[args.config])
        print(format_table(decisions(m, args.min_dim, args.keep_list or None)))
    elif args.validate:
        args.batch = args.batch or 32
        validate(args)
    else:
        args.batch, args.depth, args.vit_depth = args.batch or 16, args.depth or 4, args.vit_depth or 4
        compare(args)


if __name__ == '__main__':
    main()
