"""
Tests of train.py and configurator.py on the CPU with the tiny model and small synthetic datasets:

    python -m pytest -q test_train.py

configurator parsing; the lr schedule; 2-process DDP (gloo, torchrun) equals 1 process with the same global batch;
an interrupted run resumed from its checkpoint equals an uninterrupted one; a non-finite loss stops the run naming the
iteration; checkpoints load with model.load_pretrained; the demo config learns.
"""
import csv
import json
import math
import os
import runpy
import shutil
import subprocess
import sys

import pytest
import torch

import checkpoint
import data
import memory
import model as M
import sim
import train
from safetensors.torch import load_file

ROOT = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope='module')
def tiny_data(tmp_path_factory):
    """A synthetic dataset shaped for the tiny model (28x28 images, 24 prompt slots)."""
    path = str(tmp_path_factory.mktemp('data') / 'syn28')
    sim.make_synthetic(path, episodes=30, image_size=28, seed=0, max_token_len=24)
    return path


def tiny_args(data_dir, out_dir, *extra):
    return ['--model_name=tiny', f'--data_dir={data_dir}', f'--out_dir={out_dir}', '--device=cpu',
            '--action_horizon=5', '--max_token_len=24', '--attn=eager', '--compile=False', '--recompute=none',
            '--learning_rate=1e-3', '--warmup_iters=2', '--eval_iters=1', '--log_interval=4', '--ema=True', *extra]


def run_train(args):
    """train.py in this process (as `python train.py args`); returns its globals at the end."""
    argv = sys.argv
    sys.argv = ['train.py', *args]
    try:
        return runpy.run_path(os.path.join(ROOT, 'train.py'), run_name='__main__')
    finally:
        sys.argv = argv


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def assert_same_run(ref, out, ckpt='ckpt_10'):
    """losses.csv (every column) and the final weights of run out equal those of run ref exactly."""
    a, b = read_csv(ref / 'losses.csv'), read_csv(out / 'losses.csv')
    mismatch = [(ra, rb) for ra, rb in zip(a, b) if ra != rb]
    assert len(a) == len(b) and not mismatch, f'{len(a)} vs {len(b)} rows; first mismatch {mismatch[:1]}'
    wa, wb = load_file(str(ref / ckpt / 'model.safetensors')), load_file(str(out / ckpt / 'model.safetensors'))
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa), 'final weights differ from the reference run'
    return a


def configure(argv, defaults):
    """Run configurator.py on argv over a copy of defaults, as train.py does; returns the resulting globals."""
    g = dict(defaults, __builtins__=__builtins__)
    old = sys.argv
    sys.argv = ['train.py', *argv]
    try:
        exec(open(os.path.join(ROOT, 'configurator.py')).read(), g)
    finally:
        sys.argv = old
    return g

# -----------------------------------------------------------------------------
# configurator and schedule


DEFAULTS = dict(learning_rate=5e-5, out_dir='out', compile=True, max_iters=100, attn='flex', init_from='scratch')


def test_configurator_int_into_float_default():
    g = configure(['--learning_rate=1'], DEFAULTS)
    assert type(g['learning_rate']) is float and g['learning_rate'] == 1.0, f"got {g['learning_rate']!r}"


def test_configurator_splits_at_first_equals_only():
    g = configure(['--out_dir=runs/lr=3e-4', '--init_from=a=b'], DEFAULTS)
    assert (g['out_dir'], g['init_from']) == ('runs/lr=3e-4', 'a=b'), f"got {g['out_dir']!r}, {g['init_from']!r}"


def test_configurator_bool_parsing():
    for raw, want in (('False', False), ('True', True), ('false', False), ('true', True)):
        g = configure([f'--compile={raw}'], DEFAULTS)
        assert g['compile'] is want, f'--compile={raw} gave {g["compile"]!r}'
    with pytest.raises(SystemExit, match="'compile'.*expects bool"):
        configure(['--compile=1'], DEFAULTS)
    with pytest.raises(SystemExit, match="'max_iters'.*expects int"):
        configure(['--max_iters=1.5'], DEFAULTS)


def test_configurator_strings_and_ints():
    g = configure(['--attn=sdpa', "--out_dir='quoted'", '--max_iters=7', '--init_from=2024'], DEFAULTS)
    assert (g['attn'], g['out_dir'], g['max_iters'], g['init_from']) == ('sdpa', 'quoted', 7, '2024'), g


def test_configurator_unknown_key_is_named(tmp_path):
    with pytest.raises(SystemExit) as e:
        configure(['--learnin_rate=1e-4'], DEFAULTS)
    assert "'learnin_rate'" in str(e.value) and 'learning_rate' in str(e.value), str(e.value)
    cfg = tmp_path / 'x.py'
    cfg.write_text("max_iters = 10\nlearning_rate = 3\nmax_iter = 5\n")
    with pytest.raises(SystemExit, match="'max_iter'"):
        configure([str(cfg)], DEFAULTS)
    cfg.write_text("max_iters = 10\nlearning_rate = 3\n_helper = 2\n")
    g = configure([str(cfg), '--max_iters=12'], DEFAULTS)
    assert (g['max_iters'], g['learning_rate']) == (12, 3.0), (g['max_iters'], g['learning_rate'])


def test_a_config_file_after_a_flag_wins_with_a_warning(tmp_path, capsys):
    cfg = tmp_path / 'x.py'
    cfg.write_text("max_iters = 10\nattn = 'flex'\n")
    g = configure(['--max_iters=2', '--attn=flex', str(cfg)], DEFAULTS)
    assert g['max_iters'] == 10, 'arguments apply left to right'
    err = capsys.readouterr().err
    assert f"warning: {cfg} sets max_iters=10 over the earlier --max_iters=2" in err and 'attn' not in err, err


def test_model_config_is_the_one_source_of_shapes():
    g = configure(['--model_name=tiny'], train.default_config())
    cfg = train.model_config({k: g[k] for k in train.default_config()})
    assert (cfg.action_horizon, cfg.max_token_len) == (5, 24), (cfg.action_horizon, cfg.max_token_len)
    g = configure(['--model_name=pi05', '--action_horizon=10'], train.default_config())
    cfg = train.model_config({k: g[k] for k in train.default_config()})
    assert (cfg.action_horizon, cfg.max_token_len) == (10, 200), (cfg.action_horizon, cfg.max_token_len)


def test_conv_stem_keeps_the_token_grid_trains_and_round_trips(tmp_path):
    """vision_stem='conv' (stride-2 3x3 convs, then a 1x1 patch conv): the same tokens per image as the patch conv,
    gradients reach its first layer, its checkpoint loads back exactly, and a patch it cannot halve to is refused."""
    torch.manual_seed(0)
    kw = dict(compute_dtype=torch.float32, patch=4, action_horizon=5, max_token_len=24)
    ref, conv = M.build('tiny', 'cpu', **kw), M.build('tiny', 'cpu', vision_stem='conv', **kw)
    img = torch.rand(3, 3, 28, 28) * 2 - 1
    a, b = ref.vision(img, torch.float32), conv.vision(img, torch.float32)
    assert a.shape == b.shape == (3, 49, 32), (a.shape, b.shape)
    b.square().mean().backward()
    first = conv.vision.embeddings.conv_stem[0].weight
    assert first.shape == (8, 3, 3, 3) and first.grad.abs().sum() > 0, first.shape
    M.save_pretrained(conv, str(tmp_path))
    fresh = M.build('tiny', 'cpu', init_from=str(tmp_path / 'model.safetensors'), vision_stem='conv', **kw)
    assert torch.equal(fresh.vision(img, torch.float32), b.detach())
    with pytest.raises(ValueError, match="vision_stem='conv' halves the image"):
        train.check_config(dict(train.default_config(), model_name='tiny', vision_stem='conv'))
    with pytest.raises(ValueError, match="vision_stem='cnn': expected one of"):
        train.check_config(dict(train.default_config(), vision_stem='cnn'))


def test_every_config_file_parses():
    for name in sorted(os.listdir(os.path.join(ROOT, 'config'))):
        if name.endswith('.py'):
            g = configure([os.path.join(ROOT, 'config', name)], train.default_config())
            train.check_config({k: g[k] for k in train.default_config()})


def test_choice_keys_refuse_unknown_values():
    for key, bad in (('compile_mode', 'max-autotune'), ('attn', 'flash'), ('dtype', 'fp16'), ('augment', 'crop')):
        with pytest.raises(ValueError, match=f"{key}='{bad}': expected one of"):
            train.check_config(dict(train.default_config(), **{key: bad}))
    train.check_config(dict(train.default_config(), augment='shift'))
    for old, new in ((True, 'openpi'), ('False', 'none'), ('true', 'openpi')):  # augment was a bool (--augment=False)
        with pytest.raises(ValueError, match=f"augment='{new}' does what"):
            train.check_config(dict(train.default_config(), augment=old))


def test_numeric_keys_out_of_range_are_named_before_anything_is_built():
    for key, bad in (('log_interval', 0), ('eval_iters', 0), ('keep_last', -1), ('ckpt_interval', -2),
                     ('micro_batch', 0), ('max_iters', True), ('action_horizon', 'abc'), ('max_token_len', 0),
                     ('image_size', 0), ('val_fraction', 0.0), ('val_fraction', 1.0), ('patch', 0),
                     ('prompt_bucket', -32), ('loss_dims', -2), ('loss_dims', 40), ('direction_dims', 33),
                     ('sample_steps', 0), ('ema_decay', 2.0), ('beta1', 1.0), ('beta2', -0.1), ('grad_clip', -1.0),
                     ('learning_rate', 0.0), ('learning_rate', float('nan')), ('eps', -1.0), ('weight_decay', -1.0),
                     ('peak_tflops', -1.0), ('gpu_mem_gib', -8.0), ('synthetic_objects', 7)):
        with pytest.raises(ValueError, match=f"^{key}={bad!r}: expected"):
            train.check_config(dict(train.default_config(), **{key: bad}))
    for key, edge in (('keep_last', 0), ('ckpt_interval', -1), ('eval_interval', 0), ('action_horizon', 10),
                      ('loss_dims', 32), ('prompt_bucket', 0), ('grad_clip', 0.0), ('ema_decay', 0.0)):
        train.check_config(dict(train.default_config(), **{key: edge}))


def test_patch_override_is_checked_and_reaches_the_model():
    """patch (from scratch only) sets the vision token size: a power of two dividing the image with the conv stem; the
    model config and the vision tower's token count follow it."""
    conf = dict(train.default_config(), model_name='small', vision_stem='conv', init_from='scratch')
    cfg = train.model_config(dict(conf, patch=8))
    assert (cfg.patch, cfg.patches) == (8, 256) and train.model_config(conf).patches == 64
    train.check_config(dict(conf, patch=8))
    with pytest.raises(ValueError, match=r"image_size=128: expected a positive multiple of the patch size \(12\)"):
        train.check_config(dict(conf, patch=12))
    with pytest.raises(ValueError, match=r"vision_stem='conv' halves the image log2\(patch\) times: patch 12"):
        train.check_config(dict(conf, image_size=120, patch=12))
    with pytest.raises(ValueError, match=r"patch=8 changes the vision tower's shape.*init_from='scratch'"):
        train.check_config(dict(conf, patch=8, init_from='/path/to/pi05_base'))
    with torch.device('meta'):
        m = M.Pi05(cfg)
    assert len(m.vision.embeddings.conv_stem) == 6, 'three stride-2 convolutions (with their GELUs) for 8 px tokens'
    assert m.vision.embeddings.position_embedding.num_embeddings == 256


def test_lr_schedule_matches_openpi_pi05_libero():
    conf = dict(train.default_config(), learning_rate=5e-5, decay_lr=5e-5, warmup_iters=10000, lr_decay_iters=1_000_000)
    got = [train.lr_at(s, conf) for s in (0, 5000, 10000, 30000)]
    want = [5e-5 / 10001, 5e-5 / 10001 + (5e-5 - 5e-5 / 10001) * 0.5, 5e-5, 5e-5]
    assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(got, want)), f'got {got}, want {want}'
    conf = dict(conf, decay_lr=0.0, warmup_iters=10, lr_decay_iters=110)
    mid, end = train.lr_at(60, conf), train.lr_at(500, conf)
    assert math.isclose(mid, 2.5e-5, rel_tol=1e-12) and end == 0.0, f'cosine midpoint {mid}, end {end}'

# -----------------------------------------------------------------------------
# the memory account and the automatic fit


def test_memory_plan_reproduces_its_h200_measurements():
    """The account's constants come from bench.py on the H200 (micro-batch 32, 2 cameras, 64 prompt slots); the
    peaks it predicts for those runs must stay within 2% of what was measured."""
    conf = dict(train.default_config(), ema=False)
    cfg = M.configs['pi05']
    measured = [('float32', 'none', 96.2), ('float32', 'vit', 81.6), ('float32', 'vit,layers.*.attn', 77.0),
                ('float32', 'vit,layers.*.vlm.mlp', 52.6), ('bfloat16', 'vit', 59.8)]
    for param_dtype, recompute, gib in measured:
        plan = memory.memory_plan(dict(conf, param_dtype=param_dtype), cfg, 32, recompute)
        assert abs(plan['peak'] - gib) / gib < 0.02, f'{param_dtype} {recompute}: predicted {plan["peak"]:.1f} vs {gib} GiB'
    # bench.py --fit under caps (2026-12-01): micro-batch 8 x 4 micro-steps keeps earlier micro-steps' gradients
    plan = memory.memory_plan(dict(conf, param_dtype='bfloat16'), cfg, 8, 'none', grad_accum=4)
    assert abs(plan['peak'] - 39.4) / 39.4 < 0.02, f'bf16 8 x 4: predicted {plan["peak"]:.1f} vs 39.4 GiB'
    # LoRA, fp32 (H100, 2026-12-05): the account may over-predict (a setting lost) but never under-predict (out of
    # memory). Measured: 8 x 4 with ViT + attention recompute 22.0 GiB (under a 24 GB cap), 32 x 1 with full recompute
    # 19.9 (24 GB cap), 32 x 1 without recompute 68.0 (uncapped; maybe holding an earlier row's memory)
    lora = dict(conf, lora=True)
    for B, accum, recompute, gib in ((8, 4, 'vit,layers.*.attn', 22.0), (32, 1, 'full', 19.9), (32, 1, 'none', 68.0)):
        peak = memory.memory_plan(lora, cfg, B, recompute, grad_accum=accum)['peak']
        assert gib <= peak < 1.1 * gib, f'LoRA {B} x {accum} {recompute}: predicted {peak:.1f} vs {gib} GiB'
    # ... and ViT + Gemma MLP (+ attention) recompute at 32 ran out of memory under the 24 GB cap: both must lie above
    # what plan_fit lets a 24 GB GPU use
    for recompute in ('vit,layers.*.vlm.mlp', 'vit,layers.*.vlm.mlp,layers.*.attn'):
        assert memory.memory_plan(lora, cfg, 32, recompute)['peak'] > 23.6 - 1.5, recompute
    plan = memory.memory_plan(conf, cfg, 32, 'none')
    assert abs(plan['weights'] - 3_353_433_872 * 4 / 2 ** 30) < 1e-6 and plan['moments'] == 2 * plan['grads']
    half = memory.memory_plan(conf, cfg, 16, 'none')
    assert abs(2 * half['activations'] - plan['activations']) < 1e-9, 'activations scale with the micro-batch'
    more = memory.memory_plan(conf, cfg, 32, 'none', prompt_slots=128)
    assert more['activations'] > plan['activations'], 'longer prompts store more'


def test_bench_derives_the_memory_table_from_its_recompute_rows(tmp_path):
    """`bench.py --recompute_table=True` turns its recompute rows into the per-sample costs memory.py reads: from
    the rows of docs/logs/bench_2026-11-29.log (the run today's memory_table.json came from) it writes these numbers, and
    memory.py's ACT_GIB / MS are the file's."""
    import bench
    import memory
    named = bench.named_rows()
    label = {'default with recompute=none': named['default'][0],  # that day's row names
             'default: fp32 master weights': named['recomputevit'][0]}
    with open(os.path.join(ROOT, 'docs', 'logs', 'bench_2026-11-29.log')) as f:
        rows = [json.loads(line) for line in f if line.startswith('{')]
    results = [dict(r, row=label.get(r['row'], r['row'])) for r in rows if r['tokens'] == 64]
    out = tmp_path / 'memory_table.json'
    bench.write_memory_table(bench.recompute_costs(named, results, M.configs['pi05'], 32), out, 'test')
    derived = json.loads(out.read_text())
    assert derived['act_gib'] == {'vit': 0.4562, 'vlm_mlp': 0.9069, 'attn': 0.1423, 'expert_mlp': 0.0319}, derived
    assert derived['ms'] == {'vit': 0.975, 'vlm_mlp': 1.745, 'attn': 0.2, 'expert_mlp': 0.0}, derived  # expert: faster
    with open(memory.TABLE) as f:
        table = json.load(f)
    assert {k: memory.ACT_GIB[k] for k in memory.MEASURED_KINDS} == table['act_gib']
    assert {k: memory.MS[k] for k in memory.MEASURED_KINDS} == table['ms']


def test_plan_fit_keeps_the_batch_and_the_cap():
    conf, cfg = dict(train.default_config(), ema=False), M.configs['pi05']
    for gib in (139.0, 79.0):
        B, accum, rc, plan = memory.plan_fit(conf, cfg, gib)
        assert B * accum == 32 and plan['peak'] <= gib - 1.5, (gib, B, accum, rc, plan['peak'])
    assert memory.plan_fit(conf, cfg, 139.0)[:3] == (32, 1, 'none'), 'an H200 takes the default as it is'
    # the error names the first lighter setup that fits, as flags that pass check_config
    for c, gib, hint in ((conf, 47.5, '--param_dtype=bfloat16'), (conf, 23.5, '--lora=True'),
                         (dict(conf, ema=True), 23.5, '--lora=True --ema=False')):
        with pytest.raises(SystemExit, match=rf"nothing fits {gib} GiB .*: {hint} fits$"):
            memory.plan_fit(c, cfg, gib)
        flags = dict(kv[2:].split('=') for kv in hint.split())
        fixed = dict(c, **{k: {'True': True, 'False': False}.get(v, v) for k, v in flags.items()})
        train.check_config(fixed)
        assert memory.plan_fit(fixed, cfg, gib)[3]['peak'] <= gib - 1.5
    with pytest.raises(SystemExit, match=r"nothing fits 10\.0 GiB .*neither bf16 weights nor LoRA fit"):
        memory.plan_fit(conf, cfg, 10.0)
    B, accum, rc, plan = memory.plan_fit(dict(conf, lora=True, param_dtype='bfloat16'), cfg, 23.5)
    assert (B, accum, rc) == (32, 1, 'vit,layers.*.vlm.mlp,layers.*.attn') and plan['peak'] <= 22.0, (B, rc, plan)
    B, accum, rc, _ = memory.plan_fit(dict(conf, micro_batch=16, grad_accum=4), cfg, 79.0)
    assert B * accum == 64, 'an explicit micro_batch x grad_accum is kept'
    found = memory.fit_candidates(conf, cfg, 79.0)  # what bench.py --fit_top measures: every fit, fastest first
    assert len(found) > 3 and [c[0] for c in found] == sorted(c[0] for c in found)
    assert all(c[4]['peak'] <= 79.0 - 1.5 and c[1] * c[2] == 32 for c in found)
    assert found[0][1:4] == memory.plan_fit(conf, cfg, 79.0)[:3]
    assert memory.fit_candidates(conf, cfg, 23.5) == []


def test_speed_model_ranks_the_80gb_settings_as_an_h100_ran_them():
    """bench.py --fit=True --fit_gpu=80 --fit_top=5 on an H100 80GB (2026-12-05, docs/logs/fit_2026-12-05_h100.log):
    samples/s of five settings that fit, fp32 master weights. The speed model must order them as measured (the
    earlier model put 8 x 4 first, the slowest but one) and plan_fit must take the fastest."""
    measured = {(8, 4, 'none'): 41.2, (32, 1, 'vit,layers.*.attn'): 50.6, (16, 2, 'vit'): 49.6,
                (16, 2, 'vit,layers.*.attn'): 47.3, (8, 4, 'vit'): 39.3}
    cfg = M.configs['pi05']
    predicted = sorted(measured, key=lambda s: memory.step_ms(cfg, *s))
    assert predicted == sorted(measured, key=lambda s: -measured[s]), predicted
    conf = dict(train.default_config(), ema=False)
    assert memory.plan_fit(conf, cfg, 79.1)[:3] == (32, 1, 'vit,layers.*.attn')
    # the same day (docs/logs/fit_2026-12-05_h100_48_24.log): 48 GB, bf16 weights, 16 x 2 ViT 52.0 against the earlier
    # pick 8 x 4 none 49.2
    assert memory.plan_fit(dict(conf, param_dtype='bfloat16'), cfg, 47.5)[:3] == (16, 2, 'vit')
    # 24 GB LoRA (H100, docs/logs/fit_2026-12-05_h100_lora32.log and _48_24.log): 32 x 1 with full recompute 53.3 samples/s
    # against the earlier pick 8 x 4 with ViT + attention 30.4; the larger micro-batches that ran out of memory there
    # do not fit the account (test_memory_plan_reproduces_its_h200_measurements)
    lora = dict(conf, lora=True)
    assert memory.step_ms(cfg, 32, 1, 'full', lora=True) < memory.step_ms(cfg, 8, 4, 'vit,layers.*.attn', lora=True)
    assert memory.plan_fit(lora, cfg, 23.6)[:3] == (32, 1, 'full')
    assert {c[1] for c in memory.fit_candidates(dict(lora, micro_batch=12), cfg, 79.1)} == {12, 6, 4, 3, 2, 1}
    # the H200 ran LoRA 8 x 4 (ViT + attention recomputed) at 874 ms per step (docs/logs/fit_2026-12-01.log: 36.6 samples/s);
    # and, not used in fitting, an H100 ran LoRA 32 x 1 with full recompute at 600 ms (53.3 samples/s), which the model
    # gives at the H100/H200 ratio memory.py's comment derives (1.110)
    assert abs(memory.step_ms(cfg, 8, 4, 'vit,layers.*.attn', lora=True) / 874 - 1) < 0.05
    assert abs(1.110 * memory.step_ms(cfg, 32, 1, 'full', lora=True) / (32 / 53.3 * 1000) - 1) < 0.05
    # no micro-batch beyond the measured 32, also when a large per-GPU batch would make it the model's fastest
    B, accum, _, _ = memory.plan_fit(dict(conf, grad_accum=8, ema=True), cfg, 79.1)
    assert B == memory.MAX_MICRO == 32 and accum == 8, (B, accum)


def test_auto_fit_in_a_run_says_what_it_chose(tiny_data, tmp_path):
    g = run_train(tiny_args(tiny_data, tmp_path, '--max_iters=1', '--fit=True', '--gpu_mem_gib=4', '--ema=False',
                            '--eval_interval=0'))
    log = (tmp_path / 'log.txt').read_text()
    assert 'fit for 4.0 GiB: micro_batch 32 x grad_accum 1' in log and 'predicted weights' in log, log[-1500:]
    state = torch.load(tmp_path / 'ckpt_1' / 'state.pt', weights_only=True)
    assert state['config']['micro_batch'] == 32 and state['config']['recompute'] == 'none', state['config']
    assert state['resolved']['device'] == 'cpu' and g['dev'] == 'cpu', 'the checkpoint says what was used'


def test_memory_account_counts_any_recompute_spec():
    """A spec apply_recompute accepts is charged by the units it covers: one layer's attention is 1/depth of all
    layers' attention, a whole layer covers its parts, and a spec no unit matches is an error."""
    conf, cfg = dict(train.default_config(), ema=False), M.configs['pi05']
    act = lambda spec: memory.memory_plan(conf, cfg, 32, spec)['activations']
    one, every, none = act('layers.0.attn'), act('layers.*.attn'), act('none')
    assert abs((none - one) * cfg.depth - (none - every)) < 1e-9 * none, (none, one, every)
    assert memory.recomputed(cfg, 'layers.3') == dict(vit=0, layers=1 / 18, attn=1 / 18, vlm_mlp=1 / 18, expert_mlp=1 / 18)
    assert act('full') == act('full,layers.*.attn') < act('vit,layers.*.vlm.mlp,layers.*.attn')
    assert memory.step_ms(cfg, 32, 1, 'full') == memory.step_ms(cfg, 32, 1, 'vit,layers.*')
    with pytest.raises(ValueError, match="recompute pattern 'layers.99.attn' matches no unit"):
        memory.recomputed(cfg, 'layers.99.attn')


def test_int_keys_take_only_ints():
    """'auto' is no longer a value of int keys: --max_iters=auto stops in the configurator, naming the key."""
    msg = train_error(['--max_iters=auto'])
    assert "config key 'max_iters'" in msg and 'expects int' in msg, msg


def test_lora_run_resumes_exactly(tiny_data, tmp_path):
    """A LoRA run from trained base weights, stopped and resumed twice, ends where the uninterrupted run does: each
    resume rebuilds the same frozen base (the second one from what the first resume's checkpoint carries)."""
    run_train(tiny_args(tiny_data, tmp_path / 'base', '--max_iters=2', '--ema=False', '--eval_interval=0'))
    common = ['--lora=True', '--ema=False', '--ckpt_interval=2', '--eval_interval=0', '--micro_batch=4',
              f"--init_from={tmp_path / 'base' / 'ckpt_2'}"]
    run_train(tiny_args(tiny_data, tmp_path / 'ref', '--max_iters=6', *common))
    for n in (2, 4, 6):
        run_train(tiny_args(tiny_data, tmp_path / 'cut', f'--max_iters={n}', *common[:-1],
                            *(['--init_from=resume'] if n > 2 else common[-1:])))
    for name in ('adapters.safetensors', 'model.safetensors'):
        a, b = load_file(str(tmp_path / 'ref' / 'ckpt_6' / name)), load_file(str(tmp_path / 'cut' / 'ckpt_6' / name))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), f'{name} differs after resume'
    assert any('.lora_B' in k for k in a.keys()) is False and 'layers.0.vlm.mlp.up_proj.lora_B' in \
        load_file(str(tmp_path / 'ref' / 'ckpt_6' / 'adapters.safetensors'))

# -----------------------------------------------------------------------------
# whole runs


def test_ddp_two_processes_equal_one_process(tiny_data, tmp_path):
    """Global batch 8: 2 gloo processes x micro-batch 2 x 2 micro-steps vs 1 process x 4 x 2, with augmentation, so
    per-sample randomness must follow sample_id."""
    common = ['--max_iters=4', '--eval_interval=2', '--ckpt_interval=4', '--grad_accum=2', '--prompt_format=pi0']
    two, one = tmp_path / 'two', tmp_path / 'one'
    env = dict(os.environ, OMP_NUM_THREADS='1')
    proc = subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2',
                           os.path.join(ROOT, 'train.py'), *tiny_args(tiny_data, two, *common, '--micro_batch=2')],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert 'world size 2' in proc.stdout, proc.stdout[-2000:]
    run_train(tiny_args(tiny_data, one, *common, '--micro_batch=4'))
    a, b = read_csv(one / 'losses.csv'), read_csv(two / 'losses.csv')
    assert [r['iter'] for r in a] == [r['iter'] for r in b], (a, b)
    for key in ('loss', 'gnorm', 'val_loss', 'action_mse'):
        x = [float(r[key]) for r in a if r[key]]
        y = [float(r[key]) for r in b if r[key]]
        diff = max(abs(u - v) / max(abs(u), 1e-3) for u, v in zip(x, y))
        assert len(x) == len(y) and len(x) >= 3 and diff < 1e-5, f'{key}: 1 process {x} vs 2 processes {y} (max rel diff {diff:.2e})'
    wa, wb = load_file(str(one / 'ckpt_4' / 'model.safetensors')), load_file(str(two / 'ckpt_4' / 'model.safetensors'))
    diffs = [(wa[k].float() - wb[k].float()).abs().max().item() for k in wa]
    assert wa.keys() == wb.keys() and max(diffs) < 1e-5, f'final weights: max abs diff {max(diffs):.2e}, mean over tensors {sum(diffs) / len(diffs):.2e}'


def torchrun(args, nproc=2):
    env = dict(os.environ, OMP_NUM_THREADS='1')
    proc = subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone', f'--nproc_per_node={nproc}',
                           os.path.join(ROOT, 'train.py'), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_sharded_two_processes_equal_one_process(tiny_data, tmp_path):
    """shard=True (FSDP2 per joint layer, per SigLIP layer and the rest; gloo) with 2 processes x micro-batch 2 x 2
    micro-steps == 1 unsharded process x 4 x 2: losses, gradient norms, evaluations and the gathered checkpoint."""
    common = ['--max_iters=4', '--eval_interval=2', '--ckpt_interval=4', '--grad_accum=2', '--ema=False']
    torchrun(tiny_args(tiny_data, tmp_path / 'two', *common, '--micro_batch=2', '--shard=True'))
    run_train(tiny_args(tiny_data, tmp_path / 'one', *common, '--micro_batch=4'))
    a, b = read_csv(tmp_path / 'one' / 'losses.csv'), read_csv(tmp_path / 'two' / 'losses.csv')
    assert [r['iter'] for r in a] == [r['iter'] for r in b], (a, b)
    for key in ('loss', 'gnorm', 'val_loss', 'action_mse'):
        x, y = [float(r[key]) for r in a if r[key]], [float(r[key]) for r in b if r[key]]
        diff = max(abs(u - v) / max(abs(u), 1e-3) for u, v in zip(x, y))
        assert len(x) == len(y) >= 3 and diff < 1e-5, f'{key}: 1 process {x} vs 2 sharded {y} (max rel diff {diff:.2e})'
    wa, wb = load_file(str(tmp_path / 'one' / 'ckpt_4' / 'model.safetensors')), load_file(str(tmp_path / 'two' / 'ckpt_4' / 'model.safetensors'))
    diffs = [(wa[k].float() - wb[k].float()).abs().max().item() for k in wa]
    assert wa.keys() == wb.keys() and max(diffs) < 1e-5, f'gathered weights: max abs diff {max(diffs):.2e}'


def test_sharded_resume_equals_uninterrupted(tiny_data, tmp_path):
    common = ['--ckpt_interval=3', '--eval_interval=0', '--micro_batch=2', '--ema=False', '--shard=True']
    torchrun(tiny_args(tiny_data, tmp_path / 'ref', '--max_iters=6', *common))
    torchrun(tiny_args(tiny_data, tmp_path / 'cut', '--max_iters=3', *common))
    torchrun(tiny_args(tiny_data, tmp_path / 'cut', '--max_iters=6', '--init_from=resume', *common))
    a, b = read_csv(tmp_path / 'ref' / 'losses.csv'), read_csv(tmp_path / 'cut' / 'losses.csv')
    assert len(a) == len(b) == 6 and a == b, f'first mismatch {[(x, y) for x, y in zip(a, b) if x != y][:1]}'
    wa, wb = load_file(str(tmp_path / 'ref' / 'ckpt_6' / 'model.safetensors')), load_file(str(tmp_path / 'cut' / 'ckpt_6' / 'model.safetensors'))
    assert all(torch.equal(wa[k], wb[k]) for k in wa), 'final weights differ from the uninterrupted sharded run'


@pytest.fixture(scope='module')
def uninterrupted(tiny_data, tmp_path_factory):
    """10 iterations, checkpoints every 4 (and at the end), evaluations every 3, EMA on."""
    out = tmp_path_factory.mktemp('uninterrupted')
    g = run_train(tiny_args(tiny_data, out, '--max_iters=10', '--ckpt_interval=4', '--eval_interval=3', '--grad_accum=2',
                            '--micro_batch=4', '--keep_last=2', '--ema_decay=0.9'))
    return g, out


def test_resume_equals_uninterrupted_run(tiny_data, tmp_path, uninterrupted):
    """Stop at 7 (checkpoints at 4 and 7), lose the checkpoint of 7 as a crash between checkpoints would, resume from 4:
    losses.csv (every column) and the final weights and EMA weights equal the uninterrupted run's exactly."""
    _, ref = uninterrupted
    common = ['--ckpt_interval=4', '--eval_interval=3', '--grad_accum=2', '--micro_batch=4', '--keep_last=2', '--ema_decay=0.9']
    run_train(tiny_args(tiny_data, tmp_path, '--max_iters=7', *common))
    assert sorted(os.listdir(tmp_path)) == ['ckpt_4', 'ckpt_7', 'log.txt', 'losses.csv'], os.listdir(tmp_path)
    shutil.rmtree(tmp_path / 'ckpt_7')  # the rows of iterations 4-6 and the evaluation at 6 are now orphaned
    run_train(tiny_args(tiny_data, tmp_path, '--max_iters=10', '--init_from=resume', *common))
    a, b = read_csv(ref / 'losses.csv'), read_csv(tmp_path / 'losses.csv')
    mismatch = [(ra, rb) for ra, rb in zip(a, b) if ra != rb]
    assert len(a) == len(b) == 11 and not mismatch, f'{len(a)} vs {len(b)} rows; first mismatch {mismatch[:1]}'
    for name in ('model.safetensors', 'ema.safetensors'):
        wa, wb = load_file(str(ref / 'ckpt_10' / name)), load_file(str(tmp_path / 'ckpt_10' / name))
        diffs = {k: (wa[k].float() - wb[k].float()).abs().max().item() for k in wa}
        assert wa.keys() == wb.keys() and max(diffs.values()) == 0.0, f'{name}: max abs diff {max(diffs.values()):.2e}'
    assert sorted(d for d in os.listdir(tmp_path) if d.startswith('ckpt')) == ['ckpt_10', 'ckpt_8'], 'keep_last=2'


def test_checkpoint_loads_into_fresh_model(uninterrupted):
    g, out = uninterrupted
    for name, trained in (('model.safetensors', g['raw_model']), ('ema.safetensors', g['ema_model'].model)):
        fresh = M.build('tiny', 'cpu', compute_dtype=torch.float32, action_horizon=5, max_token_len=24)
        M.load_pretrained(fresh, str(out / 'ckpt_10' / name))
        a, b = trained.state_dict(), fresh.state_dict()
        diffs = {k: (a[k].float() - b[k].float()).abs().max().item() for k in a}
        assert a.keys() == b.keys() and max(diffs.values()) == 0.0, f'{name}: max abs diff {max(diffs.values()):.2e}'
    keys = load_file(str(out / 'ckpt_10' / 'model.safetensors'))
    assert all(k.startswith('paligemma_with_expert.') or not k.startswith(('layers.', 'vision.')) for k in keys), list(keys)[:5]
    state = torch.load(out / 'ckpt_10' / 'state.pt', weights_only=True)
    assert state['iter'] == 10 and state['config']['max_iters'] == 10 and state['loader'] == {'step': 10}, state.keys()
    torch.manual_seed(42)  # train.py's seed: the fresh init the run started from
    init = M.build('tiny', 'cpu', compute_dtype=torch.float32, action_horizon=5, max_token_len=24).state_dict()
    ema, final = g['ema_model'].model.state_dict(), g['raw_model'].state_dict()
    from_init = max((ema[k] - init[k]).abs().max().item() for k in ema)
    from_final = max((ema[k] - final[k]).abs().max().item() for k in ema)
    assert from_init > 0 and from_final > 0, f'EMA vs init {from_init:.2e}, vs final weights {from_final:.2e}'


def test_ema_update_is_lerp_in_fp32():
    torch.manual_seed(0)
    raw = M.build('tiny', 'cpu', compute_dtype=torch.float32)
    raw.set_param_dtype(torch.bfloat16)
    ema = train.EMA(raw, 0.9, attn='eager')
    before = {k: v.clone() for k, v in ema.model.state_dict().items()}
    with torch.no_grad():
        for p in raw.parameters():
            p.add_(1.0)
    ema.update()
    after, new = ema.model.state_dict(), raw.state_dict()
    for name, p in raw.named_parameters():
        want = before[name] if not p.requires_grad else 0.9 * before[name] + 0.1 * new[name].float()
        assert after[name].dtype == torch.float32 and torch.allclose(after[name], want, rtol=0, atol=1e-6), \
            f'{name}: max abs diff {(after[name] - want).abs().max().item():.2e}'


def test_non_finite_loss_stops_with_message(tiny_data, tmp_path):
    """lr 1e30 makes the weights astronomically large after one step, so the next loss is inf/nan."""
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'train.py'),
                           *tiny_args(tiny_data, tmp_path, '--max_iters=10', '--learning_rate=1e30', '--warmup_iters=0',
                                      '--ckpt_interval=1', '--log_interval=100', '--eval_interval=0', '--micro_batch=4')],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    rows = read_csv(tmp_path / 'losses.csv')
    bad = next(int(r['iter']) for r in rows if not (math.isfinite(float(r['loss'])) and math.isfinite(float(r['gnorm']))))
    assert proc.returncode != 0, f'run did not stop: rc {proc.returncode}\n{proc.stdout[-2000:]}'
    assert f'at iter {bad}: stopping' in proc.stderr and 'non-finite' in proc.stderr, proc.stderr[-2000:]
    ckpts = [int(d.split('_')[1]) for d in os.listdir(tmp_path) if d.startswith('ckpt_')]
    assert ckpts and max(ckpts) <= bad, f'checkpoints {ckpts} written at or after the non-finite iteration {bad}'
    assert f'ckpt_{max(ckpts)}' in proc.stderr, proc.stderr[-2000:]


def test_demo_training_opens_a_conditioning_gap(tmp_path):
    """config/demo.py cut to 150 iterations on 200 scenes: the loss falls, and it comes to depend on the observation:
    with every sample's images, prompt and state swapped for another sample's, the loss over the real action dims is
    clearly higher (at initialisation the two are equal). A falling loss alone could be a model ignoring the scene."""
    g = run_train([os.path.join(ROOT, 'config', 'demo.py'), f'--out_dir={tmp_path / "out"}',
                   f'--data_dir={tmp_path / "synthetic"}', '--synthetic_episodes=200', '--max_iters=150',
                   '--lr_decay_iters=150', '--warmup_iters=10', '--micro_batch=32', '--eval_interval=150', '--device=cpu'])
    rows = [r for r in read_csv(tmp_path / 'out' / 'losses.csv') if r['val_loss']]
    first, last = [{k: float(r[k]) for k in ('real_loss', 'shuffled_loss')} for r in (rows[0], rows[-1])]
    assert [r['iter'] for r in rows] == ['0', '150'] and g['it'] == 150
    assert last['real_loss'] < 0.3 * first['real_loss'], f"real-dim loss {first['real_loss']:.4f} -> {last['real_loss']:.4f}"
    assert abs(first['shuffled_loss'] - first['real_loss']) < 1e-3 * first['real_loss'], first
    gap = last['shuffled_loss'] - last['real_loss']
    assert gap > 0.1 * last['real_loss'], f"no conditioning: shuffled {last['shuffled_loss']:.4f} vs real {last['real_loss']:.4f}"


def test_shuffle_observations_moves_every_observation_and_keeps_actions():
    b = dict(images=torch.arange(4).view(4, 1), image_mask=torch.ones(4, 2, dtype=torch.bool), tokens=torch.arange(4).view(4, 1),
             token_mask=torch.ones(4, 3, dtype=torch.bool), state=torch.arange(4.).view(4, 1), actions=torch.arange(4.).view(4, 1),
             action_mask=torch.ones(4, 1, dtype=torch.bool), sample_id=torch.arange(4))
    s = train.shuffle_observations(b)
    for k in ('images', 'tokens', 'state'):
        assert (s[k] != b[k]).all() and sorted(s[k].view(-1).tolist()) == sorted(b[k].view(-1).tolist()), k
    assert torch.equal(s['actions'], b['actions']) and torch.equal(s['sample_id'], b['sample_id'])


# -----------------------------------------------------------------------------
# user mistakes: a one-line error naming the problem and the fix, before any model is built


def train_error(args):
    """Run train.py in this process; it must stop with a SystemExit whose message is returned."""
    with pytest.raises(SystemExit) as e:
        run_train(args)
    return str(e.value)


@pytest.fixture
def data_copy(tiny_data, tmp_path):
    shutil.copytree(tiny_data, tmp_path / 'd')
    return tmp_path / 'd'


def test_missing_data_dir_fails_before_the_pi05_model_is_built(tmp_path):
    msg = train_error([os.path.join(ROOT, 'config', 'pi05_libero.py'), '--init_from=scratch', '--device=cpu',
                       f'--data_dir={tmp_path / "nowhere"}', f'--out_dir={tmp_path / "out"}'])
    assert 'nowhere' in msg and 'does not exist' in msg and 'python prepare.py --src=' in msg, msg
    assert not (tmp_path / 'out').exists(), 'the model must not be built first, nor anything written'


@pytest.mark.parametrize('mistake', ['no_meta', 'image_size'])
def test_a_failed_data_check_leaves_no_files(data_copy, tmp_path, mistake):
    """A run stopped by its data check writes nothing: no out_dir, no log.txt holding only the header."""
    args = tiny_args(data_copy, tmp_path / 'out', '--max_iters=1')
    if mistake == 'no_meta':
        os.remove(data_copy / 'meta.json')
        want = 'meta.json not found'
    else:
        args.append('--model_name=demo')
        want = 'images are 28x28, the model takes 64x64'
    msg = train_error(args)
    assert want in msg and '\n' not in msg, msg
    assert not (tmp_path / 'out').exists(), os.listdir(tmp_path / 'out')


def test_a_fit_that_finds_nothing_leaves_no_files(tiny_data, tmp_path):
    msg = train_error(tiny_args(tiny_data, tmp_path / 'out', '--max_iters=1', '--fit=True', '--gpu_mem_gib=0.01'))
    assert 'nothing fits' in msg, msg
    assert not (tmp_path / 'out').exists(), os.listdir(tmp_path / 'out')


@pytest.mark.parametrize('mistake', ['vocab', 'image_size', 'prompt_slots', 'truncated_npy', 'stats'])
def test_prepared_data_that_does_not_fit_the_model_is_named(data_copy, tmp_path, mistake):
    args = tiny_args(data_copy, tmp_path / 'out', '--max_iters=1')
    if mistake == 'vocab':  # prepared with a tokenizer larger than the model's embedding
        meta = json.loads((data_copy / 'meta.json').read_text())
        (data_copy / 'meta.json').write_text(json.dumps(dict(meta, vocab_size=50_000, tokenizer='big.model')))
        want = 'the tokenizer (big.model) has 50000 tokens, more than the model\'s embedding (1024)'
    elif mistake == 'image_size':
        args.append('--model_name=demo')
        want = 'images are 28x28, the model takes 64x64: prepare with --image_size=64'
    elif mistake == 'prompt_slots':
        args.append('--max_token_len=4')
        want = 'prompts of up to'
    elif mistake == 'truncated_npy':
        with open(data_copy / 'actions.npy', 'r+b') as f:
            f.truncate(200)
        want = 'actions.npy is 200 bytes where its header implies'
    else:
        (data_copy / 'stats.json').write_text('{"norm_stats": ')
        want = 'stats.json is not a valid stats file'
    msg = train_error(args)
    assert want in msg and str(data_copy) in msg, msg


def test_config_file_that_does_not_exist_is_named(tmp_path):
    msg = train_error(['config/no_such_config.py'])
    assert "config file 'config/no_such_config.py' not found" in msg and 'config/demo.py' in msg, msg


def test_broken_init_from_file_is_named(uninterrupted, tiny_data, tmp_path):
    _, ref = uninterrupted
    bad = tmp_path / 'bad'
    shutil.copytree(ref / 'ckpt_10', bad)
    with open(bad / 'model.safetensors', 'r+b') as f:
        f.truncate(os.path.getsize(bad / 'model.safetensors') // 2)
    msg = train_error(tiny_args(tiny_data, tmp_path / 'out', '--max_iters=1', f'--init_from={bad}'))
    assert str(bad / 'model.safetensors') in msg and 'not a readable safetensors file' in msg, msg
    msg = train_error(tiny_args(tiny_data, tmp_path / 'out', '--max_iters=1', f'--init_from={tmp_path / "none"}'))
    assert 'no checkpoint at' in msg and 'none' in msg, msg
    msg = train_error(tiny_args(tiny_data, tmp_path / 'out', '--max_iters=1', f'--init_from={ref / "ckpt_10"}',
                                '--model_name=small'))  # the tiny model's weights into another model
    assert msg.startswith(f"train.py: cannot load {ref / 'ckpt_10' / 'model.safetensors'}: ") and '\n' not in msg, msg
    assert msg.endswith("; its policy.json says model_name='tiny': pass --model_name=tiny") and len(msg) < 1500, msg
    assert not (tmp_path / 'out').exists(), 'refused before the run wrote anything'


def test_init_from_a_run_directory_takes_its_newest_checkpoint(uninterrupted, tiny_data, tmp_path):
    """init_from=<run dir> (as serve.py --ckpt=<run dir>) trains from its newest good checkpoint, exactly as
    init_from=<that checkpoint> does, and says which it picked; a directory with none is refused in one line."""
    _, ref = uninterrupted  # checkpoints 8 and 10
    common = ['--max_iters=1', '--eval_interval=0', '--ckpt_interval=-1']
    g = run_train(tiny_args(tiny_data, tmp_path / 'run', *common, f'--init_from={ref}'))
    want = run_train(tiny_args(tiny_data, tmp_path / 'ckpt', *common, f"--init_from={ref / 'ckpt_10'}"))
    assert g['config']['init_from'] == str(ref / 'ckpt_10'), g['config']['init_from']
    a, b = g['raw_model'].state_dict(), want['raw_model'].state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a), 'init_from=<run dir> trained from other weights'
    assert f"init_from: {ref}'s newest checkpoint, {ref / 'ckpt_10'}" in (tmp_path / 'run' / 'log.txt').read_text()
    (tmp_path / 'empty').mkdir()
    msg = train_error(tiny_args(tiny_data, tmp_path / 'out', *common, f"--init_from={tmp_path / 'empty'}"))
    assert msg.startswith(f"train.py: init_from={tmp_path / 'empty'} ") and 'ckpt_<iter>' in msg and '\n' not in msg, msg
    assert not (tmp_path / 'out').exists(), 'refused before the run wrote anything'
    own = tmp_path / 'own'  # a run started from its own checkpoints would overwrite and prune them
    shutil.copytree(ref, own)
    for init in (own, own / 'ckpt_8', own / 'ckpt_8' / 'model.safetensors'):
        msg = train_error(tiny_args(tiny_data, own, *common, f'--init_from={init}'))
        assert "is a checkpoint of this run's out_dir" in msg and "init_from='resume'" in msg and '\n' not in msg, msg
    assert sorted(p.name for p in own.glob('ckpt_*')) == ['ckpt_10', 'ckpt_8']
    run_train(tiny_args(tiny_data, own, *common))  # a fresh run there is warned about the checkpoints it mixes with
    assert f"warning: {own} holds an earlier run's checkpoints (ckpt_8, ckpt_10)" in (own / 'log.txt').read_text()


def test_a_crash_between_the_renames_of_a_re_save_is_undone(uninterrupted, tiny_data, tmp_path):
    """save_checkpoint re-saving ckpt_<iter> moves the old one aside, then renames the new one into place; a crash
    between the two leaves only .tmp_ckpt_<iter>(.old): resume puts the old one back (checkpoint.clean_interrupted),
    removes the rest and resumes from it; a leftover that is not whole is removed, not put back."""
    _, ref = uninterrupted  # checkpoints 8 and 10
    run = tmp_path / 'run'
    shutil.copytree(ref, run)
    os.rename(run / 'ckpt_10', run / '.tmp_ckpt_10.old')
    (run / '.tmp_ckpt_10').mkdir()  # the new copy, half-written
    (run / '.tmp_ckpt_12').mkdir()  # an interrupted first save
    common = ['--ckpt_interval=4', '--eval_interval=3', '--grad_accum=2', '--micro_batch=4', '--keep_last=2', '--ema_decay=0.9']
    run_train(tiny_args(tiny_data, run, '--max_iters=10', '--init_from=resume', *common))
    log = (run / 'log.txt').read_text()
    assert f"{run / 'ckpt_10'}: put back" in log and f"resuming from {run / 'ckpt_10'}" in log, log[-2000:]
    assert not [p for p in os.listdir(run) if p.startswith('.tmp')], os.listdir(run)
    msg = train_error(tiny_args(tiny_data, tmp_path / 'none', '--init_from=resume'))  # no out_dir at all
    assert "init_from='resume' but" in msg and 'holds no usable checkpoint' in msg and '\n' not in msg, msg
    assert not (tmp_path / 'none').exists()
    (tmp_path / '.tmp_ckpt_4.old').mkdir()  # not whole: removed
    assert checkpoint.clean_interrupted(str(tmp_path)) == [f"{tmp_path / '.tmp_ckpt_4.old'}: removed (a checkpoint "
                                                           f"write a crash interrupted)"]
    assert not (tmp_path / 'ckpt_4').exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason='needs a machine without CUDA')
def test_device_cuda_without_cuda_is_one_line(tiny_data, tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'train.py'),
                           *tiny_args(tiny_data, tmp_path, '--max_iters=1'), '--device=cuda'],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "device='cuda', but this torch" in proc.stderr, proc.stderr[-2000:]
    assert 'Traceback' not in proc.stderr, proc.stderr[-2000:]


def test_device_names_are_checked(monkeypatch):
    assert M.resolve_device('cpu') == M.resolve_device(torch.device('cpu')) == 'cpu'
    assert M.resolve_device('auto') in ('cpu', 'cuda')
    for bad in ('tpu', 'cuda:x', 'gpu'):
        with pytest.raises(ValueError, match=f"^device='{bad}': expected 'auto', 'cpu', 'cuda' or 'cuda:<index>'"):
            M.resolve_device(bad)
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    with pytest.raises(ValueError, match="^device='cuda:0', but this torch .* sees no CUDA GPU: use --device=cpu"):
        M.resolve_device('cuda:0')
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    assert [M.resolve_device(d) for d in ('auto', 'cuda', 'cuda:1')] == ['cuda', 'cuda', 'cuda:1']


def test_resume_into_other_shapes_lora_or_a_new_ema_is_refused_before_the_model_is_built(uninterrupted, tiny_data,
                                                                                        tmp_path):
    """The run was trained with EMA and no LoRA: a resume whose weights do not fit the model the config asks for,
    that changes LoRA, or asks for an EMA the run never kept, says why before anything is built; one that changes
    only what the weights' shapes do not depend on (the action horizon) goes on."""
    _, ref = uninterrupted
    run = tmp_path / 'run'
    shutil.copytree(ref / 'ckpt_10', run / 'ckpt_10')
    args = tiny_args(tiny_data, run, '--max_iters=12', '--init_from=resume')
    msg = train_error(args + ['--model_name=small'])  # another model's shapes
    assert msg.startswith(f"train.py: cannot load {run / 'ckpt_10' / 'model.safetensors'}: "), msg
    assert msg.endswith("its policy.json says model_name='tiny': pass --model_name=tiny"), msg
    msg = train_error(args + ['--lora=True', '--ema=False'])
    assert f"{run / 'ckpt_10'} was trained with lora=False: resume with --lora=False, or start a new run" in msg, msg
    run_train(tiny_args(tiny_data, run, '--max_iters=11', '--init_from=resume', '--ema=False'))  # dropping EMA is fine
    shutil.rmtree(run / 'ckpt_10')  # ckpt_11 was trained without EMA
    assert 'was trained with ema=False: resume with --ema=False' in train_error(args)
    run_train(tiny_args(tiny_data, run, '--max_iters=12', '--init_from=resume', '--ema=False',
                        '--action_horizon=4'))  # the weights' shapes do not depend on the action horizon


def test_fp8_off_cuda_is_refused_before_the_model_is_built(tiny_data, tmp_path):
    with pytest.raises(SystemExit, match=r"fp8=True needs a CUDA GPU .*this run is on cpu: set fp8=False"):
        run_train(tiny_args(tiny_data, tmp_path, '--max_iters=1', '--fp8=True'))
    assert not (tmp_path / 'log.txt').exists(), 'refused before the run wrote anything'


@pytest.mark.parametrize('broken', ['model.safetensors', 'state.pt'])
def test_resume_skips_a_truncated_newest_checkpoint(tiny_data, tmp_path, uninterrupted, broken):
    """Checkpoints at 4 and 7; the newest one's file is truncated: resume warns, moves it aside, continues from 4,
    and ends exactly where the uninterrupted run does."""
    _, ref = uninterrupted
    common = ['--ckpt_interval=4', '--eval_interval=3', '--grad_accum=2', '--micro_batch=4', '--keep_last=2', '--ema_decay=0.9']
    run_train(tiny_args(tiny_data, tmp_path, '--max_iters=7', *common))
    path = tmp_path / 'ckpt_7' / broken
    with open(path, 'r+b') as f:
        f.truncate(os.path.getsize(path) - 1000)
    run_train(tiny_args(tiny_data, tmp_path, '--max_iters=10', '--init_from=resume', *common))
    log = (tmp_path / 'log.txt').read_text()
    assert f'skipping checkpoint {tmp_path / "ckpt_7"}: {broken} is' in log and 'resuming from ' + str(tmp_path / 'ckpt_4') in log, log[-2000:]
    assert sorted(d for d in os.listdir(tmp_path) if d.startswith('ckpt')) == ['ckpt_10', 'ckpt_7.broken', 'ckpt_8']
    assert_same_run(ref, tmp_path)

# -----------------------------------------------------------------------------
# the fused optimizer path


def test_fused_adamw_matches_foreach_adamw_with_clip():
    """The fused AdamW kernel (the trainer's) and torch's multi-tensor AdamW (openpi's, bench.py's community rows):
    the same weights after two clipped steps."""
    torch.manual_seed(0)
    conf = dict(train.default_config(), model_name='tiny', action_horizon=5, max_token_len=24, attn='eager',
                compile=False, recompute='none', dtype='float32', grad_clip=0.05, augment='none', micro_batch=2)
    g = torch.Generator().manual_seed(0)
    cfg = M.configs['tiny']
    batch = dict(images=torch.randint(0, 256, (2, 2, 3, 28, 28), dtype=torch.uint8, generator=g),
                 image_mask=torch.ones(2, 2, dtype=torch.bool), tokens=torch.randint(1, 100, (2, 24), generator=g),
                 token_mask=torch.arange(24)[None] < torch.tensor([[7], [12]]), sample_id=torch.arange(2),
                 actions=torch.randn(2, cfg.action_horizon, 32, generator=g))
    weights = {}
    for fused in (False, True):
        torch.manual_seed(0)
        raw = train.build_model(conf, 'cpu')
        with torch.no_grad():
            for p in raw.parameters():
                p.add_(torch.randn_like(p) * 0.05)
        opt = train.make_optimizer(raw, conf, fused=fused)
        mb = train.to_device(data.trim_batch(batch, conf['prompt_bucket'])[0], 'cpu')
        norms = [float(train.train_step(raw, raw, opt, [mb], conf, 1e-3, torch.Generator().manual_seed(i), [False, True])[1])
                 for i in range(2)]
        assert min(norms) > 10 * conf['grad_clip'], f"the clip must be active for the test to mean anything: {norms}"
        weights[fused] = {n: p.detach().clone() for n, p in raw.named_parameters()}
    worst = max(float((weights[True][n] - w).abs().max() / w.abs().max().clamp_min(1e-12)) for n, w in weights[False].items())
    assert worst < 1e-5, f"fused vs foreach AdamW: worst relative difference {worst:.2e}"


def test_non_finite_gradient_is_treated_alike_by_both_optimizer_paths():
    """A NaN gradient poisons the step the same way with either AdamW (the run then stops at its next log line,
    test_non_finite_loss_stops_with_message); neither path skips it silently."""
    conf = dict(train.default_config(), model_name='tiny', dtype='float32', compile=False, attn='eager')
    out = {}
    for fused in (False, True):
        torch.manual_seed(0)
        raw = train.build_model(conf, 'cpu')
        opt = train.make_optimizer(raw, conf, fused=fused)
        for p in raw.parameters():
            if p.requires_grad:
                p.grad = torch.full_like(p, float('nan'))
        params = [p for p in raw.parameters() if p.grad is not None]
        gnorm = torch.nn.utils.clip_grad_norm_(params, conf['grad_clip'])
        opt.step()
        out[fused] = {n: p.detach().isnan() for n, p in raw.named_parameters()}
        assert not torch.isfinite(gnorm) and all(out[fused][n].all() for n, p in raw.named_parameters() if p.requires_grad)
    assert all(torch.equal(out[True][n], out[False][n]) for n in out[True])


def test_sigkill_mid_run_resumes_exactly(tiny_data, tmp_path, uninterrupted):
    """A real crash: SIGKILL the training process at an arbitrary moment after its first checkpoint (possibly while
    it writes the next one), resume, and get the uninterrupted run's losses.csv and final weights."""
    import signal
    import time
    _, ref = uninterrupted
    common = ['--ckpt_interval=4', '--eval_interval=3', '--grad_accum=2', '--micro_batch=4', '--keep_last=2', '--ema_decay=0.9']
    args = tiny_args(tiny_data, tmp_path, '--max_iters=10', *common)
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, 'train.py'), *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not (tmp_path / 'ckpt_4').exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / 'ckpt_10').exists(), 'the run finished before it could be killed; the test proves nothing'
    run_train(tiny_args(tiny_data, tmp_path, '--max_iters=10', '--init_from=resume', *common))
    assert_same_run(ref, tmp_path)


def test_bench_trace_summary_counts_kinds_and_idle():
    """bench.py's profile account: kernel time per kind and the gaps between kernels, from (name, start, duration)."""
    import bench
    kernels = [('nvjet_sm90_tst_192x192', 0, 1000),
               ('triton_poi_fused_add_0', 1500, 500),                  # 0.5 ms idle before
               ('flex_attention_fwd', 1800, 400),                       # overlaps: no idle
               ('multi_tensor_apply_kernel<FusedAdam>', 3200, 300)]     # 1 ms idle
    s = bench.trace_summary(kernels)
    assert s == {'span': 3.5, 'idle': 1.5, 'GEMM': 1.0, 'fused elementwise (Triton)': 0.5, 'attention': 0.4,
                 'optimizer': 0.3}, s


def tiny_step_setup(B=8, clip=1.0):
    conf = dict(train.default_config(), model_name='tiny', action_horizon=5, max_token_len=24, attn='eager',
                compile=False, recompute='none', dtype='float32', grad_clip=clip, augment='none', micro_batch=B)
    g = torch.Generator().manual_seed(0)
    cfg = M.configs['tiny']
    batch = dict(images=torch.randint(0, 256, (B, 2, 3, 28, 28), dtype=torch.uint8, generator=g),
                 image_mask=torch.ones(B, 2, dtype=torch.bool), tokens=torch.randint(1, 100, (B, 24), generator=g),
                 token_mask=torch.arange(24)[None] < torch.randint(4, 24, (B, 1), generator=g), sample_id=torch.arange(B),
                 actions=torch.randn(B, cfg.action_horizon, 32, generator=g))
    return conf, batch


def test_accumulated_micro_steps_equal_one_large_step():
    """grad_accum 2 x micro-batch 4 and 1 x 8 over the same samples: the same loss, gradient norm and weights (the
    loss of each micro-step is divided by their number)."""
    conf, batch = tiny_step_setup(8)
    out = {}
    for n in (1, 2):
        torch.manual_seed(0)
        raw = train.build_model(conf, 'cpu')
        opt = train.make_optimizer(raw, conf)
        mbs = [{k: v[i * 8 // n:(i + 1) * 8 // n] for k, v in batch.items()} for i in range(n)]
        loss, gnorm = train.train_step(raw, raw, opt, mbs, conf, 1e-3, torch.Generator().manual_seed(3), [False, True])
        out[n] = float(loss), float(gnorm), torch.cat([p.detach().flatten() for p in raw.parameters()])
    assert abs(out[1][0] - out[2][0]) < 1e-5 * out[1][0] and abs(out[1][1] - out[2][1]) < 1e-4 * out[1][1], (out[1][:2], out[2][:2])
    assert (out[1][2] - out[2][2]).abs().max() < 1e-6, 'the weights after the step differ'


def test_flow_draws_reach_the_loss():
    """flow_draws=2: train_step's loss is the model's loss over the two noise/time draws draw_randomness makes for
    each sample (both draws used, neither repeated), and a bad flow_draws is refused naming the key."""
    conf, batch = tiny_step_setup(4)
    conf = dict(conf, flow_draws=2)
    torch.manual_seed(0)
    raw = train.build_model(conf, 'cpu')
    M.perturb_weights(raw, 0.1)
    noise, t, _, _ = train.draw_randomness(torch.Generator().manual_seed(5), 4, raw.cfg, 2, 'none', 2)
    assert noise.shape == (4, 2, raw.cfg.action_horizon, raw.cfg.action_dim) and t.shape == (4, 2)
    with torch.no_grad():
        want = raw(batch, noise, t)
        single = [raw(batch, noise[:, k], t[:, k]) for k in range(2)]
    assert abs(float(want) - float(sum(single)) / 2) < 1e-5 * float(want) and abs(float(single[0] - single[1])) > 1e-4
    loss, _ = train.train_step(raw, raw, train.make_optimizer(raw, conf), [batch], conf, 1e-3,
                               torch.Generator().manual_seed(5), [False, True])
    assert abs(float(loss) - float(want)) < 1e-5 * float(want), (float(loss), float(want))
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match=f'flow_draws={bad!r}: expected a positive int'):
            train.check_config(dict(train.default_config(), flow_draws=bad))
    with pytest.raises(ValueError, match='flow_draws=2 runs without fp8 and fit'):
        train.check_config(dict(train.default_config(), flow_draws=2, fp8=True))


def test_camera_dropout_masks_cameras_in_the_step():
    """camera_dropout=p: each camera of each sample is masked with probability p except the sample's largest draw
    (for two cameras p - p^2/2; one camera always kept); the other draws stay what they are without it; train_step's
    loss is the model's loss with those cameras masked, and a masked camera's pixels do not change it."""
    cfg = M.configs['tiny']
    noise0, t0, _, kept0 = train.draw_randomness(torch.Generator().manual_seed(3), 4000, cfg, 2, 'none')
    noise, t, _, kept = train.draw_randomness(torch.Generator().manual_seed(3), 4000, cfg, 2, 'none', 1, 0.3)
    assert kept0 is None and torch.equal(noise0, noise) and torch.equal(t0, t)
    assert kept.shape == (4000, 2) and kept.any(1).all()
    assert abs(float(1 - kept.float().mean()) - (0.3 - 0.3 ** 2 / 2)) < 0.02, float(kept.float().mean())
    conf, batch = tiny_step_setup(8)
    conf = dict(conf, camera_dropout=0.5)
    torch.manual_seed(0)
    raw = train.build_model(conf, 'cpu')
    M.perturb_weights(raw, 0.1)
    noise, t, _, kept = train.draw_randomness(torch.Generator().manual_seed(5), 8, raw.cfg, 2, 'none', 1, 0.5)
    assert not kept.all(), 'this seed drops some camera'
    masked = dict(batch, image_mask=kept)
    scrambled = dict(masked, images=torch.where(kept[:, :, None, None, None], batch['images'], 255 - batch['images']))
    with torch.no_grad():
        want, full = raw(masked, noise, t), raw(batch, noise, t)
        assert float(raw(scrambled, noise, t)) == pytest.approx(float(want), rel=1e-6)
    assert abs(float(want) - float(full)) > 1e-4 * float(full), 'dropping cameras changes the loss'
    loss, _ = train.train_step(raw, raw, train.make_optimizer(raw, conf), [batch], conf, 1e-3,
                               torch.Generator().manual_seed(5), [False, True])
    assert float(loss) == pytest.approx(float(want), rel=1e-5)
    for bad in (1.0, -0.1, '0.3'):
        with pytest.raises(ValueError, match='camera_dropout=.*: expected a probability'):
            train.check_config(dict(train.default_config(), camera_dropout=bad))


def test_gradients_are_clipped_before_the_step():
    """The optimizer sees gradients of global norm grad_clip when the norm was larger (train_step returns the norm
    before clipping)."""
    conf, batch = tiny_step_setup(4, clip=0.01)
    torch.manual_seed(0)
    raw = train.build_model(conf, 'cpu')
    seen = []

    class Spy:
        param_groups = [{}]
        def step(self):
            seen.append(float(torch.nn.utils.get_total_norm([p.grad for p in raw.parameters() if p.grad is not None])))
        def zero_grad(self, set_to_none=True):
            raw.zero_grad(set_to_none=set_to_none)
    _, gnorm = train.train_step(raw, raw, Spy(), [batch], conf, 1e-3, torch.Generator().manual_seed(0), [False, True])
    assert float(gnorm) > 10 * conf['grad_clip'] and abs(seen[0] - conf['grad_clip']) < 1e-4, (float(gnorm), seen)


def test_a_non_finite_loss_or_gradient_norm_alone_stops_the_run(tmp_path):
    """The run stops on a NaN loss with a finite gradient norm, and on an infinite norm with a finite loss."""
    for loss, gnorm in ((float('nan'), 1.0), (0.5, float('inf'))):
        pending = [(0, 1e-3, torch.tensor(0.4), torch.tensor(1.0)), (1, 1e-3, torch.tensor(loss), torch.tensor(gnorm))]
        rows = train.flush(pending, {}, str(tmp_path / 'l.csv'), 1)
        assert train.stop_if_non_finite(rows[:1], str(tmp_path), str(tmp_path / 'log.txt')) == rows[:1]
        with pytest.raises(SystemExit, match='non-finite loss .* at iter 1: stopping'):
            train.stop_if_non_finite(rows, str(tmp_path), str(tmp_path / 'log.txt'))


def test_a_skipped_step_leaves_weights_and_moments_as_they_were(tmp_path):
    """max_skipped_steps=1: a step whose gradient is NaN (finite loss) changes no weight and no AdamW state, the next
    finite step updates as usual; stop_if_non_finite lets one such row pass and stops at the second, and at any
    non-finite loss."""
    conf, batch = tiny_step_setup(4)
    conf = dict(conf, max_skipped_steps=1)
    torch.manual_seed(0)
    raw = train.build_model(conf, 'cpu')
    opt = train.make_optimizer(raw, conf)
    p0 = raw.action_in.action_in_proj.weight
    forward = raw.forward

    def nan_grad_forward(*a, **k):  # 0 * sqrt(0): a finite loss whose gradient is NaN
        return forward(*a, **k) + 0 * ((p0 - p0.detach()).abs() ** 0.5).sum()

    gen = torch.Generator().manual_seed(0)
    train.train_step(raw, raw, opt, [batch], conf, 1e-3, gen, [False, True])  # a finite step: moments exist
    before = [p.detach().clone() for p in raw.parameters()]
    state = {k: v.clone() for st in opt.state.values() for k, v in st.items() if k == 'step'} | \
            {i: st['exp_avg'].clone() for i, st in enumerate(opt.state.values())}
    raw.forward = nan_grad_forward
    loss, gnorm = train.train_step(raw, raw, opt, [batch], conf, 1e-3, gen, [False, True])
    assert torch.isfinite(loss) and not torch.isfinite(gnorm)
    assert all(torch.equal(a, p) for a, p in zip(before, raw.parameters())), 'a skipped step changed the weights'
    assert all(torch.equal(state[i], st['exp_avg']) for i, st in enumerate(opt.state.values()))
    assert all(float(st['step']) == 1 for st in opt.state.values()), 'a skipped step counted as a step'
    nan_step = opt.nonfinite_grads
    flags, names = nan_step  # the log names the one tensor whose gradient is NaN, by module
    assert [n for n, b in zip(names, flags.tolist()) if b] == ['action_in.action_in_proj.weight']
    where = train.nonfinite_grads_summary(flags, names)
    assert where == f'non-finite gradients in 1 of {len(names)} tensors: action_in.action_in_proj 1/2 (weight)', where
    raw.forward = forward
    train.train_step(raw, raw, opt, [batch], conf, 1e-3, gen, [False, True])
    assert not all(torch.equal(a, p) for a, p in zip(before, raw.parameters())), 'the step after a skip did nothing'
    rows = [(1, 1e-3, 0.5, 1.0), (2, 1e-3, 0.5, float('nan')), (3, 1e-3, 0.5, 1.0)]
    skipped = []
    assert train.stop_if_non_finite(rows, str(tmp_path), str(tmp_path / 'log.txt'), True, skipped, 1,
                                    {2: nan_step}) == rows
    assert skipped == [2] and f'iter 2: gradient norm nan, update skipped (1 of max_skipped_steps=1); {where}\n' in \
        open(tmp_path / 'log.txt').read()
    with pytest.raises(SystemExit, match='non-finite loss 0.5 / gradient norm inf at iter 4: stopping'):
        train.stop_if_non_finite([(4, 1e-3, 0.5, float('inf'))], str(tmp_path), str(tmp_path / 'log.txt'), True, skipped, 1)
    with pytest.raises(SystemExit, match='non-finite loss nan .* at iter 5: stopping'):
        train.stop_if_non_finite([(5, 1e-3, float('nan'), float('nan'))], str(tmp_path), str(tmp_path / 'log.txt'), True, [], 9)


def test_a_run_logs_the_skipped_iteration_and_its_tensor(tiny_data, tmp_path, monkeypatch):
    """The loop's wiring of skipped steps: train_step's per-tensor flags and clip_grad_norm_ both read
    torch._foreach_norm once per step; here it reports a NaN norm for the first tensor in the third step only. The run
    must skip iteration 2 (and no other), name that tensor on its line, and go on to the end."""
    real, calls = torch._foreach_norm, []

    def nan_in_third_step(tensors, *a, **k):
        out = list(real(tensors, *a, **k))
        calls.append(len(tensors))
        if len(calls) in (5, 6):  # step 3: train_step's flags, then clip_grad_norm_'s total
            out[0] = torch.full_like(out[0], float('nan'))
        return out

    monkeypatch.setattr(torch, '_foreach_norm', nan_in_third_step)
    g = run_train(tiny_args(tiny_data, tmp_path, '--max_iters=4', '--eval_interval=0', '--micro_batch=4',
                            '--max_skipped_steps=1'))
    assert len(calls) == 8 and len(set(calls)) == 1, f'expected two calls per step over the same tensors: {calls}'
    first = g['optimizer'].grad_names[0]
    log = (tmp_path / 'log.txt').read_text()
    module, leaf = first.rsplit('.', 1)
    assert (f'iter 2: gradient norm nan, update skipped (1 of max_skipped_steps=1); non-finite gradients in 1 of '
            f'{calls[0]} tensors: {module} 1/') in log and f'({leaf})' in log, log[-2000:]
    assert log.count('update skipped') == 1 and 'updates skipped at iters [2]' in log, log[-2000:]


def test_memory_plan_counts_the_ema_copy():
    conf, cfg = dict(train.default_config(), ema=False), M.configs['pi05']
    without, with_ema = (memory.memory_plan(dict(conf, ema=e), cfg, 32, 'none') for e in (False, True))
    assert abs(with_ema['ema'] - 3_353_433_872 * 4 / 2 ** 30) < 1e-6 and without['ema'] == 0
    assert abs(with_ema['peak'] - without['peak'] - with_ema['ema']) < 1e-9


def test_a_size_only_the_manifest_knows_marks_the_checkpoint_broken(tiny_data, tmp_path):
    """Bytes appended to state.pt leave it loadable; only the manifest's size tells that it was overwritten."""
    run_train(tiny_args(tiny_data, tmp_path, '--max_iters=2', '--eval_interval=0', '--micro_batch=4'))
    ckpt = tmp_path / 'ckpt_2'
    assert checkpoint.checkpoint_problem(str(ckpt)) is None
    modes = {f.name: oct(f.stat().st_mode & 0o777) for f in ckpt.iterdir()}
    assert len(set(modes.values())) == 1, f'every checkpoint file gets the same permissions: {modes}'
    with open(ckpt / 'state.pt', 'ab') as f:
        f.write(b'\0' * 64)
    torch.load(ckpt / 'state.pt', weights_only=True)  # still loads
    assert 'the manifest says' in checkpoint.checkpoint_problem(str(ckpt))


def test_help_lists_the_config_keys_and_exits_cleanly():
    for script, key in (('train.py', 'micro_batch = 32'), ('serve.py', 'noise_seed = '), ('eval.py', "env = 'synthetic'")):
        proc = subprocess.run([sys.executable, os.path.join(ROOT, script), '--help'], capture_output=True, text=True,
                              timeout=120, cwd=ROOT)
        assert proc.returncode == 0 and key in proc.stdout and 'Traceback' not in proc.stderr, (script, proc.stderr[-500:])
        assert proc.stdout.splitlines()[0].strip() and 'configurator' not in proc.stdout.splitlines()[0], proc.stdout[:200]


def test_bench_default_row_is_train_defaults():
    """bench.py's row named 'default' runs train.py's defaults (every trainer key it sets has train.py's value) with
    every reference switch on its fast setting."""
    import bench
    label, settings = bench.named_rows()['default']
    defaults = train.default_config()
    differ = {k: (v, defaults[k]) for k, v in settings.items() if k in defaults and v != defaults[k]}
    assert not differ, f'the default row differs from train.py: {differ}'
    assert {k: settings[k] for k in bench.REFERENCE} == bench.REFERENCE


def test_bench_checks_its_inference_variants_before_building_a_model(monkeypatch):
    """`bench.py --infer=True --infer_variants=...` names a subset of the CUDA-graphed rows; a wrong name, or the
    autotuned row without the fused row it compares with, or a bad --infer_batches, is refused before pi05 is
    built."""
    import bench
    monkeypatch.setattr(bench.M, 'build', lambda *a, **k: pytest.fail('a model was built'))
    monkeypatch.setattr(bench, 'infer_variants', 'grouped,fast')
    with pytest.raises(ValueError, match="infer_variants='grouped,fast': a comma-separated subset of separate,fused,grouped,flex,step,prefix,triton,small$"):
        bench.infer_table([40], 'cpu')
    monkeypatch.setattr(bench, 'infer_variants', 'grouped')
    for bad in ('1,x', '0,8', ''):
        monkeypatch.setattr(bench, 'infer_batches', bad)
        with pytest.raises(ValueError, match=f"infer_batches='{bad}': batch sizes >= 1"):
            bench.infer_table([40], 'cpu')
    monkeypatch.setattr(bench, 'infer_batches', '1,8')
    monkeypatch.setattr(bench, 'infer_autotune', True)
    with pytest.raises(ValueError, match="add 'fused'"):
        bench.infer_table([40], 'cpu')


def test_bench_kernel_breakdown_writes_every_kernel_in_launch_order(monkeypatch, tmp_path, capsys):
    """bench.kernel_breakdown prints the busiest kernels and writes all of them, in launch order with their start
    relative to the first and their kind, to <out_dir>/kernels_<what>.csv (a profile of fake GPU events)."""
    import csv
    import bench
    events = [('nvjet_sm90_tst_64x56', 10.0, 5.0), ('triton_poi_fused_add_mul', 16.5, 2.0),
              ('nvjet_sm90_tst_64x56', 19.0, 5.5)]
    monkeypatch.setattr(bench, 'out_dir', str(tmp_path))
    monkeypatch.setattr(bench, 'profiled', lambda fn, device: (bench.trace_summary(events), None))
    monkeypatch.setattr(bench, 'kernel_events', lambda prof: events)
    bench.kernel_breakdown(lambda: None, 'one batch-1 call, grouped', top=1)
    path = tmp_path / 'kernels_one_batch_1_call_grouped.csv'
    out = capsys.readouterr().out
    assert str(path) in out and out.count('| `') == 1  # the printed table: the busiest kernel only; the file: all
    rows = list(csv.DictReader(open(path)))
    assert [(r['kernel'], r['kind'], float(r['start_us']), float(r['duration_us'])) for r in rows] == [
        ('nvjet_sm90_tst_64x56', 'GEMM', 0.0, 5.0), ('triton_poi_fused_add_mul', 'fused elementwise (Triton)', 6.5, 2.0),
        ('nvjet_sm90_tst_64x56', 'GEMM', 9.0, 5.5)]
