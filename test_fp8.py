"""
Tests of fp8.py: which layers convert, fp8 numerics against bf16, compile without graph breaks, the keep-list,
switching fp8 off, and the trace-to-module mapping of the validation (bench.py --fp8_validate). CPU, tiny configs,
well under a minute:

    python -m pytest -q test_fp8.py

GPU-only checks (inductor + real fp8 kernels) are in TestCuda and skip without CUDA.
"""
import copy
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

import data
import fp8
import model as modeling

ROOT = os.path.dirname(os.path.abspath(__file__))
CONVERTED_LIST = os.path.join(ROOT, 'fp8_converted_pi05.txt')


def read_list(path):
    with open(path) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith('#')]


def tiny(seed=0, **kw):
    """The tiny model with the zero-initialised layers (adaRMS Dense, projector) made random, so every Linear gets a
    gradient and the expert's gated branches contribute."""
    torch.manual_seed(seed)
    m = modeling.build('tiny', **kw)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.Linear) and not mod.weight.any():
                mod.weight.normal_(0, mod.in_features ** -0.5)
    return m


def inputs(cfg, B=4, seed=0, device='cpu'):
    g = torch.Generator(device).manual_seed(seed)
    batch = data.random_batch(cfg, B, prompt_slots=16, generator=g, device=device)
    noise = torch.randn(B, cfg.action_horizon, cfg.action_dim, device=device, generator=g)
    return batch, noise, torch.rand(B, device=device, generator=g)


def loss_and_grads(m, batch, noise, t):
    m.zero_grad(set_to_none=True)
    loss = m(batch, noise=noise, time=t)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}


def rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-12)).item()


def scaled_mm_works(device='cpu'):
    try:
        a = torch.ones(16, 16, device=device).to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device=device)
        out = torch._scaled_mm(a, a.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        return bool((out == 16).all()), 'wrong result'
    except (RuntimeError, NotImplementedError) as e:
        return False, str(e).splitlines()[0]


@pytest.fixture(autouse=True)
def _cpu_fp8():
    ok, why = scaled_mm_works()
    if not ok:  # torch 2.13 CPU has it; only an older/odd build would skip here
        pytest.skip(f'torch._scaled_mm with float8_e4m3fn unsupported on CPU: {why}')


# -----------------------------------------------------------------------------
# which layers


def test_pi05_converted_fqns_match_checked_in_list():
    with torch.device('meta'):
        m = modeling.Pi05(modeling.configs['pi05'])
    fp8.convert_to_fp8(m, verbose=False)  # torchao's module swap works on the meta device
    got, want = fp8.converted_fqns(m), read_list(CONVERTED_LIST)
    assert got == want, (f'{len(got)} converted vs {len(want)} listed; only converted: {sorted(set(got) - set(want))[:5]}, '
                         f'only listed: {sorted(set(want) - set(got))[:5]}')
    # static rules: 204 precision-sensitive + 36 small Linears skipped of openpi's 458 (its 2 lm_heads never run);
    # we have no lm_heads but 5 frozen last-layer Linears that never run: 458 - 2 - 240 - 5 = 211 converted
    assert len(got) == 211, f'{len(got)} converted, expected 211'


def test_filter_rules_name_their_reason():
    m = tiny()
    lin = lambda i, o: nn.Linear(i, o)
    cases = [
        ('vision.encoder.layers.0.mlp.fc1', m.vision.encoder.layers[0].mlp.fc1, 0, False, 'vision tower'),
        ('projector', m.projector, 0, False, 'multi-modal projector'),
        ('action_in.time_mlp_in', m.action_in.time_mlp_in, 0, False, 'action/time projection'),
        ('action_out.action_out_proj', m.action_out.action_out_proj, 0, False, 'action/time projection'),
        ('layers.0.expert.input_layernorm.dense', m.layers[0].expert.input_layernorm.dense, 0, False, 'adaRMS modulation'),
        ('layers.2.vlm.mlp.gate_proj', m.layers[2].vlm.mlp.gate_proj, 0, False, "no gradient (the last layer's unused prefix work)"),
        ('layers.0.vlm.mlp.gate_proj', lin(24, 48), 0, False, 'dims not multiples of 16'),
        ('layers.0.vlm.mlp.gate_proj', lin(1024, 256), 2048, False, 'small: in and out < 2048'),
        ('layers.0.vlm.mlp.gate_proj', lin(2048, 256), 2048, True, 'fp8'),
        ('layers.0.vlm.mlp.gate_proj', m.layers[0].vlm.mlp.gate_proj, 0, True, 'fp8'),
        ('layers.0.vlm.norm', m.layers[0].vlm.input_layernorm, 0, False, 'not a Linear'),
    ]
    for name, mod, min_dim, convert, reason in cases:
        got = fp8.fp8_filter(name, mod, min_dim=min_dim)
        assert got == (convert, reason), f'{name} {mod}: got {got}, expected {(convert, reason)}'


def test_rows_aligned_flags_token_counts_that_fp8_wgrad_cannot_take():
    cfg = modeling.configs['pi05']
    got = [fp8.rows_aligned(cfg, b, 64, 2) for b in (32, 16, 8, 4, 1)]
    assert got == [True, True, True, False, False], got  # expert tokens B*50 must be a multiple of 16
    # every prompt slot count the batches can have must align, not only the first bucket's
    assert fp8.rows_aligned(cfg, 8, [24, 48, 72], 2) and fp8.rows_aligned(cfg, 8, 64, 2)
    assert not fp8.rows_aligned(cfg, 8, [64, 65], 2), '8 x (512 + 65) tokens is not a multiple of 16'


def test_keep_list_converts_only_listed_fqn(tmp_path):
    path = tmp_path / 'keep.txt'
    path.write_text('# measured faster\nlayers.1.vlm.mlp.up_proj  # trailing comment\n\n')
    m = tiny()
    table = fp8.convert_to_fp8(m, min_dim=0, keep_list=str(path), verbose=False)
    assert fp8.converted_fqns(m) == ['layers.1.vlm.mlp.up_proj'], fp8.converted_fqns(m)
    reasons = {d.fqn: d.reason for d in table}
    assert reasons['layers.0.vlm.mlp.up_proj'] == 'not in keep-list', reasons['layers.0.vlm.mlp.up_proj']


def test_convert_after_compile_is_an_error():
    m = tiny()
    m.layers[0].compile(backend='eager')
    with pytest.raises(RuntimeError, match='before recompute and compile'):
        fp8.convert_to_fp8(m, min_dim=0, verbose=False)
    m = tiny()
    modeling.apply_recompute(m, 'vit')
    with pytest.raises(RuntimeError, match='before recompute and compile'):
        fp8.convert_to_fp8(m, min_dim=0, verbose=False)


def test_table_groups_layers_by_pattern(capsys):
    with torch.device('meta'):
        m = modeling.Pi05(modeling.configs['pi05'])
    table = fp8.decisions(m)
    text = fp8.format_table(table)
    lines = text.splitlines()
    row = next(l for l in lines if 'layers.*.vlm.mlp.gate_proj' in l and 'fp8' in l.split()[0])
    assert row.split()[3:5] == ['17', '0-16'], row
    assert len(lines) < 40, f'{len(lines)} lines: the table should stay short for the real model'
    assert lines[-1].startswith('fp8: 211 of 456 Linear layers converted'), lines[-1]


# -----------------------------------------------------------------------------
# numerics


def test_float8_linear_bf16_in_bf16_out_fp32_master_grads():
    torch.manual_seed(0)
    m = nn.Sequential(modeling.Linear(64, 128), modeling.Linear(128, 32, bias=False))
    w, keys = m[0].weight, list(m.state_dict())
    fp8.convert_to_fp8(m, min_dim=0, verbose=False)
    assert type(m[0]).__name__ == 'Float8Linear' and m[0].weight is w, (type(m[0]), m[0].weight is w)
    x = torch.randn(2, 8, 64, dtype=torch.bfloat16, requires_grad=True)
    y = m(x)
    y.float().square().mean().backward()
    dtypes = (y.dtype, m[0].weight.dtype, m[0].weight.grad.dtype, m[0].bias.grad.dtype, x.grad.dtype)
    assert dtypes == (torch.bfloat16, torch.float32, torch.float32, torch.float32, torch.bfloat16), dtypes
    assert list(m.state_dict()) == keys, (list(m.state_dict()), keys)


def test_fp8_tiny_model_within_fp8_tolerance_of_bf16():
    ref = tiny()
    m = copy.deepcopy(ref)
    fp8.convert_to_fp8(m, min_dim=0, verbose=False)
    batch, noise, t = inputs(ref.cfg)
    l0, g0 = loss_and_grads(ref, batch, noise, t)
    l1, g1 = loss_and_grads(m, batch, noise, t)
    assert l1 != l0, f'fp8 loss {l1.item()} identical to bf16: conversion had no effect'
    assert abs(l1 - l0) / l0 < 1e-2, f'loss fp8 {l1.item():.6f} vs bf16 {l0.item():.6f}'
    # e5m2 gradients carry 2 mantissa bits: ~10% norm error per weight gradient; a wrong scale gives ~100%
    errs = {n: rel(g1[n + '.weight'], g0[n + '.weight']) for n in fp8.converted_fqns(m)}
    assert errs and max(errs.values()) < 0.25, f'max {max(errs.values()):.3f}, mean {sum(errs.values()) / len(errs):.3f}: {errs}'
    # layers that stayed bf16 but sit behind fp8 ones still agree to a similar degree
    for n in ('projector.weight', 'action_in.time_mlp_in.weight', 'vision.encoder.layers.0.mlp.fc1.weight'):
        assert rel(g1[n], g0[n]) < 0.25, f'{n}: rel err {rel(g1[n], g0[n]):.3f}'


def test_fp8_disabled_gives_exact_bf16_and_state_dict_keys_unchanged():
    ref = tiny()
    m = copy.deepcopy(ref)
    keys = list(ref.state_dict())
    fp8.convert_to_fp8(m, min_dim=0, verbose=False)
    assert list(m.state_dict()) == keys, 'state_dict keys changed by conversion'
    assert all(torch.equal(a, b) for a, b in zip(m.state_dict().values(), ref.state_dict().values()))
    batch, noise, t = inputs(ref.cfg)
    l_ref, g_ref = loss_and_grads(ref, batch, noise, t)
    l_fp8, _ = loss_and_grads(m, batch, noise, t)
    with fp8.fp8_disabled(m):
        assert fp8.converted_fqns(m) == [], fp8.converted_fqns(m)
        l_off, g_off = loss_and_grads(m, batch, noise, t)
        a_off = m.sample_actions(batch, noise=noise, num_steps=3)
    assert l_off == l_ref, f'fp8_disabled loss {l_off.item()!r} vs bf16 {l_ref.item()!r}'
    diff = max((g_off[n] - g_ref[n]).abs().max().item() for n in g_ref)
    assert diff == 0, f'fp8_disabled grads differ from bf16 by up to {diff}'
    a_ref = ref.sample_actions(batch, noise=noise, num_steps=3)
    assert torch.equal(a_off, a_ref), f'sample_actions max diff {(a_off - a_ref).abs().max().item()}'
    assert len(fp8.converted_fqns(m)) == 37, 'fp8 layers not restored after the block'
    l_again, _ = loss_and_grads(m, batch, noise, t)
    assert l_again == l_fp8, f'after fp8_disabled: {l_again.item()!r} vs fp8 {l_fp8.item()!r}'


def test_compiled_fp8_layers_have_no_graph_breaks():
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    ref = tiny()
    m = copy.deepcopy(ref)
    fp8.convert_to_fp8(m, min_dim=0, verbose=False)
    batch, noise, t = inputs(m.cfg)
    l_bf16, _ = loss_and_grads(ref, batch, noise, t)
    l_eager, g_eager = loss_and_grads(m, batch, noise, t)
    modeling.apply_compile(m, vision=False, backend='aot_eager')  # fullgraph=True: a break would raise
    l_comp, g_comp = loss_and_grads(m, batch, noise, t)
    breaks, graphs = dict(counters['graph_break']), counters['stats']['unique_graphs']
    assert not breaks, f'graph breaks: {breaks}'
    assert graphs >= 4, f'{graphs} graphs compiled: 2 layer graphs + action_in + action_out expected'
    # aot_eager runs the traced fp8 ops as they are: the compiled step equals eager fp8, which differs from bf16
    assert l_comp == l_eager != l_bf16, f'compiled {l_comp.item()!r}, eager fp8 {l_eager.item()!r}, bf16 {l_bf16.item()!r}'
    diff = max((g_comp[n] - g_eager[n]).abs().max().item() for n in g_eager)
    assert diff < 1e-6, f'compiled vs eager fp8 grads differ by up to {diff}'
    # switching fp8 off recompiles (the class is guarded) rather than reusing the fp8 graph
    with fp8.fp8_disabled(m):
        l_off, _ = loss_and_grads(m, batch, noise, t)
    l_on, _ = loss_and_grads(m, batch, noise, t)
    torch._dynamo.reset()
    assert l_off == l_bf16 and l_on == l_eager, f'off {l_off.item()!r} vs bf16 {l_bf16.item()!r}, on {l_on.item()!r} vs fp8 {l_eager.item()!r}'


# -----------------------------------------------------------------------------
# --validate's trace-to-module mapping and --compare's plot, on the CPU


def test_every_linear_gemm_maps_to_a_module():
    import bench
    import train
    m = tiny()
    batch, _, _ = inputs(m.cfg, B=2)
    rows = fp8.linear_rows(m, batch)
    assert rows['layers.0.vlm.mlp.gate_proj'] == 2 * (2 * m.cfg.patches + 16), rows['layers.0.vlm.mlp.gate_proj']
    assert rows['action_in.time_mlp_in'] == 2 and 'layers.2.vlm.mlp.gate_proj' not in rows, rows
    sig, groups = fp8.gemm_groups(m, rows)
    conf = dict(train.default_config(), model_name='tiny', augment='none')
    opt = train.make_optimizer(m, conf)
    _, prof = bench.profiled(lambda: train.train_step(m, m, opt, [batch], conf, 1e-5, torch.Generator(), [False, True]),
                             'cpu', record_shapes=True)
    gemms = fp8.gemm_events(prof, 'cpu')
    times, counts = fp8.attribute(gemms, sig)
    assert 'unmatched' not in counts and 'outside fwd/bwd' not in counts, \
        f"unmatched {counts.get('unmatched', 0)}, outside fwd/bwd {counts.get('outside fwd/bwd', 0)} of {len(gemms)} GEMMs"
    phases = {g.phase for g in gemms if len(g.shape) == 3}
    assert phases == {'fwd', 'bwd'}, phases
    # every Linear that ran has its forward GEMM, and a weight-gradient GEMM when it trains
    ran = {n for n in rows}
    n_fwd = sum(g.phase == 'fwd' and len(g.shape) == 3 for g in gemms)
    assert n_fwd == len(ran), f'{n_fwd} forward GEMMs for {len(ran)} Linears that ran'
    assert set(times) >= set(groups), f'groups without GEMM time: {set(groups) - set(times)}'
    static = {d.fqn: d for d in fp8.decisions(m, min_dim=0)}
    keep, table = fp8.keep_list_lines(times, {k: v / 2 if k in groups else v for k, v in times.items()}, groups, static)
    assert keep == sorted((n for n in rows if static[n].convert), key=fp8.natural_key) and keep, (keep, table)


def test_compare_runs_share_init_batches_and_noise(tmp_path, monkeypatch):
    """bench.py --compare: with both runs in the same precision (fp32 on the CPU), the two loss curves must be
    identical, which they are only if both start from the same weights and see the same batches, noise and times."""
    import bench
    monkeypatch.setattr(bench, 'model_name', 'tiny')
    monkeypatch.setattr(bench, 'out_dir', str(tmp_path))
    named = bench.named_rows()
    named['default'] = (named['default'][0], dict(named['default'][1], compile=False, attn='eager'))
    pearson, rel = bench.compare_losses(named, 'fp32', 6, 'cpu', depth=2, vit_depth=1, B=2, pool_size=8)
    assert rel == 0.0 and pearson > 0.999999, (pearson, rel)
    lines = (tmp_path / 'fp32_vs_default_loss.csv').read_text().splitlines()
    assert lines[0] == 'step,default,fp32' and len(lines) == 7, lines


# -----------------------------------------------------------------------------


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs CUDA')
class TestCuda:
    def test_inductor_fp8_tiny_close_to_bf16_without_graph_breaks(self):
        from torch._dynamo.utils import counters
        from torch.profiler import ProfilerActivity, profile
        torch._dynamo.reset()
        counters.clear()
        ref = tiny(device='cuda')
        m = copy.deepcopy(ref)
        fp8.convert_to_fp8(m, min_dim=0, verbose=False)
        modeling.apply_compile(m)
        batch, noise, t = inputs(m.cfg, B=16, device='cuda')  # token counts multiples of 16 (rows_aligned)
        l0, _ = loss_and_grads(ref, batch, noise, t)
        loss_and_grads(m, batch, noise, t)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            l1, _ = loss_and_grads(m, batch, noise, t)
        torch._dynamo.reset()
        assert not dict(counters['graph_break']), dict(counters['graph_break'])
        scaled = [e.name for e in prof.events() if 'scaled_mm' in e.name]
        assert scaled, 'no _scaled_mm in the compiled fp8 step'
        assert abs(l1 - l0) / l0 < 1e-2, f'fp8 {l1.item()} vs bf16 {l0.item()}'


def test_bench_refuses_an_unknown_comparison_or_no_steps_in_one_line(tmp_path):
    for arg, want in (('--compare=fp16', "bench.py: compare='fp16': expected 'fp8' or 'fp32' (loss curves beside the default row)"),
                      ('--steps=0', 'bench.py: steps=0: expected an int >= 1')):
        proc = subprocess.run([sys.executable, os.path.join(ROOT, 'bench.py'), arg, f'--out_dir={tmp_path}'],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode != 0 and proc.stderr.strip().splitlines()[-1] == want, proc.stderr[-1500:]
