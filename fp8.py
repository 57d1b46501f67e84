"""
FP8 training for Pi0.5 with torchao float8 (tensorwise scaling), traced into the compiled layers (no graph breaks).

Which Linear layers run in fp8 is decided in two stages:
  1. static rules (`fp8_filter`): precision-sensitive modules keep their precision, frozen/never-run and small or
     misaligned layers are skipped;
  2. trace validation: `python bench.py --fp8_validate=True` profiles one bf16 and one fp8 training step of the real
     model (train.py's train_step), this file maps every GEMM kernel back to its Linear by shape (`gemm_groups`,
     `attribute`) and keeps only the layers that got faster, written to fp8_keep.txt (`keep_list_lines`).

    import fp8
    fp8.convert_to_fp8(model, keep_list='fp8_keep.txt')   # before recompute and compile; prints what it did
    with fp8.fp8_disabled(model):                         # evaluation / sample_actions in plain bf16
        actions = model.sample_actions(batch)
    python fp8.py                                         # the converted/skipped table of the real pi05 model

Float8Linear keeps the `weight`/`bias` parameters of the Linear it replaces (same objects, fp32 master weights stay
fp32), so state_dict keys and checkpoints are unchanged. With a bf16 input and an fp32 weight it casts both to fp8
with one scale each, returns bf16, and the weight gradient lands in fp32 (test_fp8.py checks all of this).
"""
import contextlib
import fnmatch
import os
import re
import sys
from collections import namedtuple
from dataclasses import replace

import torch
import torch.nn as nn
from torchao.float8 import Float8LinearConfig, convert_to_float8_training
from torchao.float8.float8_linear import Float8Linear

import model as modeling

# Linears whose larger dim is under 2048 are skipped: their GEMMs are too small for the casts to pay. In pi05 that
# is the 36 expert k/v projections (1024 -> 256); applied to the smaller dim it would drop far more layers.
MIN_DIM = 2048

KEEP_PRECISION = [  # precision-sensitive modules keep their precision; fnmatch patterns over module names
    ('vision.*', 'vision tower'),
    ('projector', 'multi-modal projector'),
    ('action_in.*', 'action/time projection'),
    ('action_out.*', 'action/time projection'),
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
        return False, "no gradient (the last layer's unused prefix work)"
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
            convert, reason = (True, 'fp8 (converted before)') if isinstance(m, Float8Linear) else fp8_filter(name, m, min_dim, keep)
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


def rows_aligned(cfg, batch_size, prompt_slots, cameras):
    """The weight-gradient GEMM contracts over tokens, and CUDA's _scaled_mm needs that dimension to be a multiple
    of 16: the expert sees B*H tokens, the prefix B*(cameras*patches + prompt slots) for every prompt slot count the
    batches can have (an int, or all of them). If not, convert with pad_inner_dim=True (torchao zero-pads the fp8
    operands)."""
    slots = [prompt_slots] if isinstance(prompt_slots, int) else list(prompt_slots)
    return (batch_size * cfg.action_horizon) % 16 == 0 and all(
        (batch_size * (cameras * cfg.patches + n)) % 16 == 0 for n in slots)


def convert_to_fp8(model, min_dim=MIN_DIM, keep_list=None, pad_inner_dim=False, verbose=True):
    """Swap the selected Linears for torchao Float8Linear in place; returns the per-module decisions (and prints
    them grouped). Call before recompute and compile: a compiled layer would keep tracing the old modules.
    pad_inner_dim: needed on CUDA when the token counts are not multiples of 16 (see rows_aligned)."""
    compiled = [n for n, m in model.named_modules() if getattr(m, '_compiled_call_impl', None) is not None]
    if compiled or getattr(model, 'recomputed', None):
        raise RuntimeError(f'convert_to_fp8 must run before recompute and compile; already wrapped: '
                           f'{(compiled or model.recomputed)[:3]}')
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
# trace validation: GEMMs of a profiled training step mapped back to Linears by shape

GEMM_OP = re.compile(r'^aten::(mm|addmm|bmm|baddbmm|_scaled_mm\w*)$')
PHASES = {'train_step.forward': 'fwd', 'train_step.backward': 'bwd'}  # record_function ranges of train.train_step
Gemm = namedtuple('Gemm', 'phase shape us kernel')


def linear_rows(model, batch):
    """Rows (tokens) each Linear sees in a forward of this batch, from forward hooks on an eager no-grad pass.
    Hooks do not survive compile, which is why the profile is mapped by shape instead."""
    rows, hooks = {}, []
    for name, m in model.named_modules():
        if isinstance(m, nn.Linear):
            hooks.append(m.register_forward_hook(
                lambda m, inp, out, name=name: rows.__setitem__(name, inp[0].numel() // inp[0].shape[-1])))
    attn, model.attn = model.attn, modeling.uncompiled_attn(model.attn)
    try:
        with torch.no_grad():
            model(batch)
    finally:
        model.attn = attn
        for h in hooks:
            h.remove()
    return rows


def gemm_events(prof, device='cuda'):
    """Leaf GEMM ops of a torch.profiler profile (recorded with record_shapes=True) with their phase (from the
    forward/backward ranges of train_step), shape (M, K, N) and kernel time in us (CPU time on the CPU)."""
    events = prof.events()
    ranges = [(e.time_range.start, e.time_range.end, PHASES[e.name]) for e in events if e.name in PHASES]
    out = []
    for e in events:
        if not GEMM_OP.match(e.name) or any(GEMM_OP.match(c.name) for c in e.cpu_children):
            continue
        first = 1 if e.name.endswith('addmm') else 0  # addmm/baddbmm: (bias, mat1, mat2); others: (mat1, mat2, ...)
        a, b = (list(e.input_shapes) + [[], [], []])[first:first + 2]
        if len(a) < 2 or len(b) < 2:
            continue
        shape = (a[-2], a[-1], b[-1]) if len(a) == 2 else tuple(a[:-1]) + (a[-1], b[-1])  # 3-d: batched
        us = e.cpu_time_total if device == 'cpu' else (sum(k.duration for k in e.kernels) or e.device_time_total)
        phase = next((p for s, end, p in ranges if s <= e.time_range.start <= end), 'other')
        out.append(Gemm(phase, shape, us, e.kernels[0].name if device != 'cpu' and e.kernels else e.name))
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
            other = 'bwd' if g.phase == 'fwd' else 'fwd'
            key = sig_to_group.get((g.phase, *g.shape)) or sig_to_group.get((other, *g.shape)) or 'unmatched'
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


def keep_list_lines(bf16_us, fp8_us, groups, static, min_speedup=1.0):
    """Per GEMM group: bf16 vs fp8 time and the decision; the statically convertible Linears of groups that got
    at least min_speedup faster are kept. Returns (kept FQNs, table rows (label, n, n convertible, bf16 ms, fp8 ms,
    speed-up, decision))."""
    keep, table = [], []
    for key in sorted(set(bf16_us) | set(fp8_us), key=lambda k: -bf16_us.get(k, 0)):
        b, f = bf16_us.get(key, 0) / 1e3, fp8_us.get(key, 0) / 1e3
        fqns = groups.get(key, [])
        cand = [n for n in fqns if static.get(n) and static[n].convert]
        speedup = b / f if f else float('inf')
        decision = ('bf16 (static rules)' if fqns else '-') if not cand else 'keep fp8' if speedup >= min_speedup else 'drop (not faster)'
        keep += cand if decision == 'keep fp8' else []
        table.append((group_label(fqns) if fqns else key, len(fqns), len(cand), b, f, speedup, decision))
    return sorted(keep, key=natural_key), table


if __name__ == '__main__':  # python fp8.py [config] [keep-list]: the static decisions for a model config
    if {'-h', '--help'} & set(sys.argv[1:]) or (len(sys.argv) > 1 and sys.argv[1] not in modeling.configs):
        raise SystemExit(f"usage: python fp8.py [model_name: one of {', '.join(modeling.configs)}] [keep-list file]\n"
                         "prints which Linear layers fp8=True converts and which it skips, and why")
    with torch.device('meta'):
        m = modeling.Pi05(modeling.configs[sys.argv[1] if len(sys.argv) > 1 else 'pi05'])
    print(format_table(decisions(m, keep_list=sys.argv[2] if len(sys.argv) > 2 else None)))
