"""
Proof that every fast path computes the same function as the reference path (tiny configs, CPU, fp32), plus the
numerics and checkpoint contracts of model.py. GPU-only checks live in TestGPU. Run: python -m pytest -q
"""
import math
import os
import sys
from dataclasses import replace

import pytest
import torch

import data
import decode_attn
import flex_mask
import model as M
import small_gemm

torch.set_num_threads(2)
CFG = M.configs['tiny']


def make_batch(cfg=CFG, B=3, n_cams=3, L=None, seed=0, masked_cam=2, lens=(5, 9, 3)):
    """Images with a camera slot masked in every sample, prompts of different lengths padded to L slots."""
    g = torch.Generator().manual_seed(seed)
    L = L or cfg.max_token_len
    image_mask = torch.ones(B, n_cams, dtype=torch.bool)
    if masked_cam is not None:
        image_mask[:, masked_cam] = False
    image_mask[0, 1] = False  # one sample also lacks a camera that others have: padding inside a kept slot
    lens = torch.tensor([lens[i % len(lens)] for i in range(B)])
    return dict(images=torch.randint(0, 256, (B, n_cams, 3, cfg.image_size, cfg.image_size), dtype=torch.uint8, generator=g),
                image_mask=image_mask,
                tokens=torch.randint(1, cfg.vocab, (B, L), generator=g) * (torch.arange(L)[None] < lens[:, None]),
                token_mask=torch.arange(L)[None] < lens[:, None],
                actions=torch.randn(B, cfg.action_horizon, cfg.action_dim, generator=g))


def make_model(cfg=CFG, seed=0, **kw):
    """fp32 model with every parameter randomised (fresh init zeroes adaRMS and the projector, hiding bugs)."""
    torch.manual_seed(seed)
    m = M.Pi05(cfg, compute_dtype=torch.float32, **kw)
    M.perturb_weights(m, 0.1)
    return m


def noise_time(cfg=CFG, B=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, cfg.action_horizon, cfg.action_dim, generator=g), torch.rand(B, generator=g)


def loss_and_grads(m, batch, noise, time, **kw):
    m.zero_grad(set_to_none=True)
    loss = m(batch, noise, time, **kw)
    loss.backward()
    return loss.detach(), {n: (p.grad if p.grad is not None else torch.zeros_like(p)) for n, p in m.named_parameters()}


def assert_close(a, b, what, rtol=1e-5, atol=1e-7):
    d = (a - b).abs()
    scale = b.abs().max().clamp_min(1e-30)
    ok = bool((d <= atol + rtol * b.abs()).all()) or float(d.max() / scale) <= rtol
    assert ok, f"{what}: max diff {d.max():.3e} mean diff {d.mean():.3e} (max |ref| {scale:.3e})"


def assert_same_function(ref, fast, what, rtol=1e-5):
    (l0, g0), (l1, g1) = ref, fast
    assert_close(l1, l0, f"{what} loss", rtol)
    assert set(g0) == set(g1)
    nonzero, gmax = 0, max(float(g.abs().max()) for g in g0.values())
    for n in g0:  # atol relative to the largest gradient: some gradients are exactly zero in theory (k bias)
        assert_close(g1[n], g0[n], f"{what} grad {n}", rtol, atol=rtol * 0.1 * gmax)
        nonzero += bool(g0[n].abs().sum() > 0)
    assert nonzero > len(g0) // 2, f"{what}: only {nonzero}/{len(g0)} gradients are non-zero; the test would be vacuous"

# -----------------------------------------------------------------------------
# masks


def random_valid(B, n_cams, P, L, H, seed):
    g = torch.Generator().manual_seed(seed)
    cams = torch.rand(B, n_cams, generator=g) > 0.3
    lens = torch.randint(0, L + 1, (B,), generator=g)
    text = torch.arange(L)[None] < lens[:, None]
    return torch.cat([cams.repeat_interleave(P, 1), text, torch.ones(B, H, dtype=torch.bool)], 1)


@pytest.mark.parametrize('seed', range(3))
def test_flex_mask_matches_dense_reference(seed):
    from torch.nn.attention.flex_attention import create_mask
    B, n_cams, P, L, H = 4, 3, 40, 70, 17  # T = 207: crosses 128-token tiles
    valid = random_valid(B, n_cams, P, L, H, seed)
    prefix = n_cams * P + L
    ref = flex_mask.dense_reference(valid, flex_mask.pi05_ar(prefix, H).expand(B, -1))
    mm = flex_mask.mask_mod_for(valid, prefix)
    got = create_mask(mm, B, 1, valid.shape[1], valid.shape[1], device='cpu')[:, 0]
    assert torch.equal(got, ref), f"{(got != ref).sum()} of {ref.numel()} mask elements differ"
    assert torch.equal(flex_mask.dense_mask(valid, prefix), ref)
    # the suffix-only mask used by the last layer is the reference's action rows
    got_last = create_mask(flex_mask.mask_mod_for(valid, prefix, prefix), B, 1, H, valid.shape[1], device='cpu')[:, 0]
    assert torch.equal(got_last, ref[:, prefix:])


def test_masks_match_a_hand_written_matrix():
    """openpi's rule on a tiny layout written out by hand: 2 cameras of 2 patches (camera 1 masked), 3 prompt slots
    (the last one padding), 3 action tokens. Valid prefix tokens see each other both ways, never an action; action
    tokens see every valid prefix token and all actions (bidirectional among themselves); padding sees nothing."""
    valid = torch.tensor([[1, 1, 0, 0, 1, 1, 0, 1, 1, 1]], dtype=torch.bool)
    prefix, H = 7, 3
    want = torch.tensor([[int(c) for c in row] for row in (
        '1100110000',  # camera 0, patch 0
        '1100110000',  # camera 0, patch 1
        '0000000000',  # camera 1 (masked)
        '0000000000',
        '1100110000',  # prompt token 0
        '1100110000',  # prompt token 1
        '0000000000',  # prompt padding
        '1100110111',  # action 0
        '1100110111',  # action 1
        '1100110111',  # action 2
    )], dtype=torch.bool)[None]
    from torch.nn.attention.flex_attention import create_mask
    got = {'dense_reference': flex_mask.dense_reference(valid, flex_mask.pi05_ar(prefix, H)[None]),
           'dense_mask': flex_mask.dense_mask(valid, prefix),
           'additive_mask': flex_mask.additive_mask(valid, prefix, torch.float32)[:, 0] == 0,
           'flex mask_mod': create_mask(flex_mask.mask_mod_for(valid, prefix), 1, 1, 10, 10, device='cpu')[:, 0]}
    for name, m in got.items():
        assert torch.equal(m, want), f'{name}: {(m != want).sum()} elements differ from the hand-written mask\n{m.int()}'
    last = create_mask(flex_mask.mask_mod_for(valid, prefix, prefix), 1, 1, H, 10, device='cpu')[:, 0]
    assert torch.equal(last, want[:, prefix:]), 'the action-query mask is the last three rows'


def test_block_mask_skips_fully_masked_tiles():
    B, n_cams, P, L, H = 2, 2, 64, 192, 50  # prefix 320 tokens
    valid = random_valid(B, n_cams, P, L, H, 0)
    valid[:, :P] = True
    valid[:, P:2 * P] = False  # a fully masked camera
    bm = flex_mask.block_mask(valid, n_cams * P + L, block_size=32)
    dense_tiles = bm.to_dense()  # (B, 1, q tiles, kv tiles): 1 where a tile is computed
    ref = flex_mask.dense_mask(valid, n_cams * P + L)
    T = valid.shape[1]
    tiles = torch.nn.functional.pad(ref, (0, -T % 32, 0, -T % 32)).unflatten(1, (-1, 32)).unflatten(3, (-1, 32)).any(4).any(2)
    assert torch.equal(dense_tiles[:, 0].bool(), tiles), "BlockMask computes tiles that are fully masked (or skips live ones)"
    assert tiles.float().mean() < 0.8, "the layout should have fully masked tiles to skip"


def test_flex_attention_applies_dense_mask():
    """Forward of flex attention (CPU supports no flex backward) against explicit masked softmax."""
    B, T, Dh = 2, 150, 16
    valid = random_valid(B, 2, 30, 40, 50, 3)
    prefix = 100
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(B, T, 4, Dh, generator=g), torch.randn(B, T, 1, Dh, generator=g), torch.randn(B, T, 1, Dh, generator=g)
    ref = M.attention(q, k, v, flex_mask.additive_mask(valid, prefix, torch.float32), 'eager')
    got = M.attention(q, k, v, flex_mask.block_mask(valid, prefix), 'flex')
    rows = valid[:, :, None].expand_as(ref)  # fully masked (padding) query rows are never read
    assert_close(got[rows], ref[rows], 'flex attention output')

# -----------------------------------------------------------------------------
# fast paths == reference


def test_sdpa_matches_eager_loss_and_grads():
    m, b, (n, t) = make_model(), make_batch(), noise_time()
    ref = loss_and_grads(m, b, n, t)
    m.attn = 'sdpa'
    assert_same_function(ref, loss_and_grads(m, b, n, t), 'sdpa vs eager')


def test_flex_matches_eager_loss():
    m, b, (n, t) = make_model(), make_batch(), noise_time()
    with torch.no_grad():
        ref = m(b, n, t)
        m.attn = 'flex'
        got = m(b, n, t)
    assert_close(got, ref, 'flex vs eager loss')


def test_batched_siglip_matches_per_camera_calls():
    m, b, (n, t) = make_model(), make_batch(), noise_time()
    m.batched_vision = False
    ref = loss_and_grads(m, b, n, t)
    m.batched_vision = True
    assert_same_function(ref, loss_and_grads(m, b, n, t), 'one SigLIP call vs one per camera')


def test_pruned_matches_padded():
    """2 camera slots and a trimmed prompt == 3 slots (one masked in every sample) and 200 prompt slots."""
    cfg = replace(CFG, max_token_len=200)
    m, b, (n, t) = make_model(cfg), make_batch(cfg, L=200), noise_time(cfg)
    ref = loss_and_grads(m, b, n, t)
    tb, kept = data.trim_batch(b, bucket=8)
    assert kept == [0, 1], kept
    assert tb['images'].shape[1] == 2 and tb['tokens'].shape[1] == 16, (tb['images'].shape, tb['tokens'].shape)
    assert_same_function(ref, loss_and_grads(m, tb, n, t), 'pruned vs padded')


def test_trim_batch_keeps_partially_masked_slots_and_buckets():
    b = make_batch(L=24, masked_cam=None)
    tb, kept = data.trim_batch(b, bucket=4)
    assert tb['images'].shape[1] == 3 and kept == [0, 1, 2]  # slot 1 is masked only in sample 0: kept
    assert tb['tokens'].shape[1] == 12  # longest prompt 9 -> bucket of 4
    assert data.trim_batch(b, bucket=0)[0]['tokens'].shape[1] == 24
    assert data.trim_batch(make_batch(L=24), bucket=0, cameras=False)[1] == [0, 1, 2]


def test_skipping_last_layer_prefix_work_matches_full():
    full = make_model(skip_unused=False)
    fast = M.Pi05(CFG, compute_dtype=torch.float32)
    fast.load_state_dict(full.state_dict())
    b, (n, t) = make_batch(), noise_time()
    assert_same_function(loss_and_grads(full, b, n, t), loss_and_grads(fast, b, n, t), 'last-layer skip vs full')
    # the skipped parameters get no gradient in the full computation either (so freezing them changes nothing)
    full.zero_grad()
    for p in full.unused_parameters():
        p.requires_grad_(True)
    full(b, n, t).backward()
    for p in full.unused_parameters():
        assert p.grad is None or p.grad.abs().max() == 0


def draws_noise_time(cfg=CFG, B=3, K=3, seed=4):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, K, cfg.action_horizon, cfg.action_dim, generator=g), torch.rand(B, K, generator=g)


@pytest.mark.parametrize('attn,skip_unused', [('eager', True), ('sdpa', True), ('eager', False)])
def test_flow_draws_equal_separate_draws(attn, skip_unused):
    """K = 3 flow draws per sample on one prefix pass (train.py's flow_draws): the loss and every gradient equal the
    mean over the three single-draw passes; per_dim too. A draw that saw another's actions, took other positions or
    another draw's time would differ."""
    m, b = make_model(skip_unused=skip_unused), make_batch()
    m.attn = attn
    n, t = draws_noise_time()
    m.zero_grad(set_to_none=True)
    loss = sum(m(b, n[:, k], t[:, k]) for k in range(3)) / 3
    loss.backward()
    ref = loss.detach(), {k: (p.grad if p.grad is not None else torch.zeros_like(p)) for k, p in m.named_parameters()}
    assert_same_function(ref, loss_and_grads(m, b, n, t), f'3 draws vs 3 passes ({attn})')
    with torch.no_grad():
        per_dim = sum(m(b, n[:, k], t[:, k], per_dim=True) for k in range(3)) / 3
        assert_close(m(b, n, t, per_dim=True), per_dim, 'per-dim losses of 3 draws')
        one = m(b, n[:, :1], t[:, :1])  # one draw in the draws layout is the plain pass
        assert_close(one, m(b, n[:, 0], t[:, 0]), 'K = 1 draws layout vs plain')


def test_flow_draws_mask_and_flex():
    """The flow-draw mask: the dense form equals the flex mask_mod (full and actions-only rows), an action query sees
    its own block's actions only, and flex attention's loss over draws equals eager's."""
    from torch.nn.attention.flex_attention import create_mask
    B, n_cams, P, L, H, K = 2, 2, 40, 30, 17, 3
    valid = random_valid(B, n_cams, P, L, H * K, 0)
    prefix, T = n_cams * P + L, n_cams * P + L + H * K
    dense = flex_mask.dense_mask(valid, prefix, horizon=H)
    assert torch.equal(create_mask(flex_mask.mask_mod_for(valid, prefix, horizon=H), B, 1, T, T, device='cpu')[:, 0], dense)
    assert torch.equal(create_mask(flex_mask.mask_mod_for(valid, prefix, prefix, horizon=H), B, 1, H * K, T,
                                   device='cpu')[:, 0], dense[:, prefix:])
    block = torch.arange(T)[prefix:] - prefix
    own = (block[:, None] // H == block[None, :] // H)
    assert torch.equal(dense[:, prefix:, prefix:], own.expand(B, -1, -1))
    assert torch.equal(dense[:, :, :prefix], flex_mask.dense_mask(valid, prefix)[:, :, :prefix])
    assert torch.equal(flex_mask.dense_mask(valid, prefix, horizon=H * K), flex_mask.dense_mask(valid, prefix))
    m, b = make_model(), make_batch()
    n, t = draws_noise_time()
    with torch.no_grad():
        ref = m(b, n, t)
        m.attn = 'flex'
        assert_close(m(b, n, t), ref, 'flex vs eager loss over draws')


@pytest.mark.parametrize('recompute', ['vit', 'full', 'layers.*.attn,layers.*.vlm.mlp,layers.*.expert.mlp'])
def test_recompute_matches_no_recompute(recompute):
    m, b, (n, t) = make_model(), make_batch(), noise_time()
    ref = loss_and_grads(m, b, n, t)
    units = M.apply_recompute(m, recompute)
    assert units and all(getattr(getattr(*M.recompute_units(m)[u]), 'checkpointed', None) for u in units), units
    assert_same_function(ref, loss_and_grads(m, b, n, t), f'recompute={recompute}')


def test_recompute_patterns_pick_units_and_reject_typos():
    assert M.apply_recompute(make_model(), 'full') == [f'vision.encoder.layers.{i}' for i in range(CFG.vit_depth)] + \
        [f'layers.{i}' for i in range(CFG.depth)], "'layers.*' must not match the sub-units 'layers.N.attn'"
    assert M.apply_recompute(make_model(), 'layers.1.vlm.mlp,layers.*.attn') == ['layers.1.vlm.mlp'] + \
        [f'layers.{i}.attn' for i in range(CFG.depth)]
    with pytest.raises(ValueError, match="'layers.*.mlp' matches no unit"):
        M.apply_recompute(make_model(), 'layers.*.mlp')


@pytest.mark.parametrize('cat', [False, True])
def test_per_layer_compile_matches_eager_without_recompiles(cat):
    from torch._dynamo.utils import counters
    import torch._dynamo
    cfg = replace(CFG, depth=18)
    m, b, (n, t) = make_model(cfg), make_batch(cfg), noise_time(cfg)
    ref = loss_and_grads(m, b, n, t)
    torch._dynamo.reset()
    counters.clear()
    M.cat_projections(m, cat)  # train.py's cat_projections: one GEMM per q/k/v and gate/up group
    M.apply_compile(m, vision=True, backend='aot_eager')
    got = loss_and_grads(m, b, n, t)
    assert_same_function(ref, got, 'per-layer compiled vs eager')
    graphs = counters['stats']['unique_graphs']
    # joint layers 0..16, the last joint layer, one SigLIP layer, the time MLP and the action head: 5 graphs
    assert graphs == 5, f"expected 5 compiled graphs for 18 joint + 2 SigLIP layers, got {graphs}: {dict(counters['stats'])}"
    assert not counters['graph_break'], f"graph breaks: {dict(counters['graph_break'])}"
    assert not counters['recompiles'], f"recompiles: {dict(counters['recompiles'])}"
    loss_and_grads(m, make_batch(cfg, seed=5), n, t)  # a new batch of the same shapes compiles nothing
    assert counters['stats']['unique_graphs'] == graphs and not counters['recompiles']


def test_cat_projections_match_separate_linears():
    """cat_projections (training): q/k/v and gate/up, and SigLIP's q/k/v with biases, as one GEMM each over the
    concatenated weights: the same loss and every parameter's gradient as one GEMM per Linear, each group really
    takes the concatenated path, and a group with a Linear that is not plain (LoRA, fp8) runs one by one."""
    m, b, (n, t) = make_model(), make_batch(), noise_time()
    ref = loss_and_grads(m, b, n, t)
    M.cat_projections(m)
    calls = []
    real = M.cat_linear
    M.cat_linear = lambda x, linears: calls.append(len(linears)) or real(x, linears)
    try:
        got = loss_and_grads(m, b, n, t)
    finally:
        M.cat_linear = real
    groups = len(list(M.fused_groups(m))) - 2  # the last layer's VLM stream runs k and v only, no MLP
    assert len(calls) == groups, f'{len(calls)} concatenated GEMMs for {groups} groups'
    assert_same_function(ref, got, 'concatenated projections vs separate')
    def swapped(x, linears):  # k and v, or gate and up, handed back the wrong way round: the comparison must see it
        out = real(x, linears)
        return (out[0], out[2], out[1]) if len(out) == 3 else out[::-1]
    M.cat_linear = swapped
    try:
        with pytest.raises(AssertionError):
            assert_same_function(ref, loss_and_grads(m, b, n, t), 'outputs swapped')
    finally:
        M.cat_linear = real
    l = lora_model()  # LoRA's Gemma Linears run one by one, SigLIP's (fully trained) concatenated
    ref = loss_and_grads(l, b, n, t)
    M.cat_projections(l)
    for g, names in M.fused_groups(l):
        linears = [g.get_submodule(x) for x in names]
        lora = any(type(x) is not M.Linear for x in linears)
        assert M.catted(g, linears) == (not lora) and (lora or g in l.vision.modules() or g is l.layers[-1].vlm.mlp)
    loss, grads = loss_and_grads(l, b, n, t)  # (frozen weights and zero-initialised B: too few gradients for
    assert_close(loss, ref[0], 'LoRA with cat_projections, loss')  # assert_same_function's count)
    for k, g in grads.items():
        assert_close(g, ref[1][k], f'LoRA with cat_projections, grad {k}', atol=1e-7 + 1e-6 * float(g.abs().max()))


def test_compiled_layers_with_recompute_match_eager():
    """The wrappers in train.py's order (recompute, then compile) on a model: same function, no graph breaks."""
    from torch._dynamo.utils import counters
    import torch._dynamo
    m, b, (n, t) = make_model(), make_batch(), noise_time()
    ref = loss_and_grads(m, b, n, t)
    torch._dynamo.reset()
    counters.clear()
    M.apply_recompute(m, 'vit,layers.*.attn,layers.*.vlm.mlp')
    M.apply_compile(m, vision=True, backend='aot_eager')
    assert_same_function(ref, loss_and_grads(m, b, n, t), 'recompute + per-layer compile vs eager')
    assert not counters['graph_break'], f"graph breaks: {dict(counters['graph_break'])}"

# -----------------------------------------------------------------------------
# inference


def test_sample_actions_kv_cache_matches_joint_forward():
    m, b = make_model(), make_batch()
    cache = m.prefix_cache(b)
    for seed in range(3):
        x, t = noise_time(seed=seed)
        with torch.no_grad():
            ref = m.velocity(b, x, t)
        assert_close(m.denoise(cache, x, t), ref, f'KV-cache velocity (seed {seed})')
    # 10 Euler steps from t = 1 with dt = -0.1 using the joint forward
    x0, _ = noise_time(seed=9)
    x, t = x0.clone(), torch.ones(3)
    with torch.no_grad():
        for _ in range(10):
            x = x + -0.1 * m.velocity(b, x, t)
            t = t - 0.1
    assert_close(m.sample_actions(b, noise=x0), x, 'sample_actions vs Euler on the joint forward')

def test_attention_implementations_agree_with_grouped_kv_heads():
    """With more than one K/V head, query head i reads K/V head i // (heads / kv_heads) in every implementation
    (Gemma's repeat_kv, sdpa's enable_gqa); the eager reference once tiled them instead."""
    cfg = replace(CFG, heads=4, kv_heads=2)
    b, (x, t) = make_batch(cfg), noise_time(cfg)
    with torch.no_grad():
        assert_close(make_model(cfg, attn='sdpa').velocity(b, x, t), make_model(cfg, attn='eager').velocity(b, x, t),
                     'sdpa vs eager, 2 K/V heads')


def test_step_conditions_equal_per_step_conditions():
    """sample_actions computes the time MLP and the adaRMS Dense outputs of all steps at once (step_conditions);
    each step's velocity equals the one computed from that step's time alone."""
    m, b = make_model(), make_batch()
    cache = m.prefix_cache(b)
    ts = [torch.full((3,), 1.0 - 0.1 * i) for i in range(10)]
    x, _ = noise_time(seed=3)
    guide = torch.randn(x.shape, generator=torch.Generator().manual_seed(5))
    weights = M.rtc_weights(x.shape[1], 4, 2)[None, :, None].expand_as(x)
    for t, conds in zip(ts, m.step_conditions(ts)):
        assert_close(m.denoise(cache, x, t, conds), m.denoise(cache, x, t), f'step conditions at t={t[0]:.1f}')
        assert_close(m.guided_velocity(cache, x, t, guide, weights, 5.0, conds),
                     m.guided_velocity(cache, x, t, guide, weights, 5.0), f'guided velocity at t={t[0]:.1f}')
    # guided sampling hands each step its own conditions: Euler steps on guided velocities computed from t alone
    ref, t = x.clone(), torch.ones(3)
    for _ in range(10):
        ref = ref + -0.1 * m.guided_velocity(cache, ref, t, guide, weights, 5.0)
        t = t + -0.1
    assert_close(m.sample_actions(b, noise=x, guide=guide, guide_weights=weights), ref, 'guided sample_actions')
    beta = torch.tensor(5.0, dtype=torch.float64)  # as serve.GraphedSampler passes it: an input, not a constant
    assert_close(m.sample_actions(b, noise=x, guide=guide, guide_weights=weights, max_guidance=beta), ref, 'beta tensor')


@pytest.mark.parametrize('fuse', [False, True])
def test_compiled_inference_matches_eager_sample_actions(fuse):
    """model.compile_inference (what serve.GraphedSampler runs), also over fused projections (the layers' fused
    tensors are inputs, not constants): the same actions, shared graphs, no breaks, no recompiles."""
    from torch._dynamo.utils import counters
    import torch._dynamo
    cfg = replace(CFG, depth=6)
    m, b = make_model(cfg), make_batch(cfg)
    x0, _ = noise_time(cfg, seed=4)
    ref = m.sample_actions(b, noise=x0)
    torch._dynamo.reset()
    counters.clear()
    if fuse:
        M.fuse_projections(m.requires_grad_(False))
    M.compile_inference(m, backend='aot_eager')
    assert_close(m.sample_actions(b, noise=x0), ref, f'compiled inference vs eager sample_actions (fused {fuse})')
    graphs = counters['stats']['unique_graphs']
    # prefix step (layers 0-4, and the last), denoising step (layers 0-4, and the last), SigLIP layer, two heads
    assert graphs == 7 and not counters['graph_break'] and not counters['recompiles'], dict(counters['stats'])


def test_compiled_action_out_is_a_reduction_at_batch_1():
    """Compiled without a gradient at up to 64 action rows, the fp32 action-out projection is written as a reduction
    (no matmul in the graph: cuBLAS's split-K sgemm took 7x as long on an H100) with the eager result to fp32
    rounding; with a gradient (training, guided steps) or more rows it stays the Linear."""
    m = make_model()
    head = m.action_out
    ops = []

    def record(gm, example_inputs):
        ops.append({str(n.target) for n in gm.graph.nodes if n.op == 'call_function'})
        return gm.forward
    for rows, grad in ((1, False), (30, True), (20, False)):
        xs = torch.randn(rows, CFG.action_horizon, CFG.expert_width)
        cond = torch.randn(rows, CFG.expert_width)
        mod = head.norm.dense(cond).detach()  # computed ahead, as sample_actions does: the projection is the graph's
        torch._dynamo.reset()                 # only Linear
        with torch.set_grad_enabled(grad):
            got = torch.compile(head, backend=record, fullgraph=True, dynamic=False)(xs, cond, mod)
            ref = head(xs, cond, mod)
        assert_close(got.detach(), ref.detach(), f'{rows} samples, grad {grad}')
        linear = any('linear' in op or 'mm' in op for op in ops[-1])
        assert linear == (grad or rows * CFG.action_horizon > 64), (rows, grad, sorted(ops[-1]))


def test_whole_step_compile_matches_eager_sample_actions():
    """model.compile_inference(whole_step=True): each plain denoising step (action input, every layer, action output)
    is one graph, sdpa's and the grouped attention's alike, and gives the eager actions over the ten steps with no
    breaks and no recompiles; a guided (real-time chunking) call still matches eager through the per-layer graphs."""
    from torch._dynamo.utils import counters
    import torch._dynamo
    cfg = replace(CFG, depth=6)
    m, b = make_model(cfg), make_batch(cfg)
    x0, _ = noise_time(cfg, seed=4)
    ref = {a: m.sample_actions(b, noise=x0, denoise_attn=a) for a in (None, 'grouped')}
    guide = torch.randn_like(x0)
    weights = M.rtc_weights(cfg.action_horizon, 3, 1)[None, :, None].expand_as(x0).contiguous()
    ref_guided = m.sample_actions(b, noise=x0, guide=guide, guide_weights=weights, denoise_attn='grouped')
    torch._dynamo.reset()
    counters.clear()
    M.fuse_projections(m.requires_grad_(False))
    M.compile_inference(m, backend='aot_eager', whole_step=True)
    for attn, want in ref.items():
        assert_close(m.sample_actions(b, noise=x0, denoise_attn=attn), want, f'whole-step compiled vs eager ({attn})')
    graphs = counters['stats']['unique_graphs']
    # prefix step (layers 0-4, and the last) for each cache padding (none for the model's own attention, eager here;
    # to a multiple of 8 keys for grouped), SigLIP layer, one denoising-step graph per attention: 7 (a recompile over
    # the ten steps would add one; torch's counters['recompiles'] is not written by every version, so the count is
    # the check)
    assert graphs == 7 and not counters['graph_break'], dict(counters['stats'])
    got = m.sample_actions(b, noise=x0, guide=guide, guide_weights=weights, denoise_attn='grouped')
    assert_close(got, ref_guided, 'guided call after whole-step compile vs eager')

def action_attention_inputs(B, Hq, Hkv, Dh, P, L, H=50, device='cpu', dtype=torch.float32):
    """q (B, H, Hq, Dh), k, v (B, Lp + H, Hkv, Dh) and the additive mask of H action queries over a padded prefix of
    two cameras of P tokens and L prompt slots (Lp in all) and over themselves, as the denoising steps attend."""
    valid = random_valid(B, 2, P, L, H, 5).to(device)
    Lp = valid.shape[1] - H
    g = torch.Generator(device=device).manual_seed(3)
    q = torch.randn(B, H, Hq, Dh, generator=g, device=device, dtype=dtype)
    k, v = (torch.randn(B, Lp + H, Hkv, Dh, generator=g, device=device, dtype=dtype) for _ in range(2))
    return q, k, v, flex_mask.additive_mask(valid, Lp, torch.float32, q_start=Lp)


def test_grouped_attention_matches_eager_for_action_queries():
    """attention(..., 'grouped') (the query heads of a K/V head stacked into one matrix) against the reference for
    the denoising steps' rows: 50 action queries over a padded prefix and themselves, 8 query heads on 2 K/V heads
    (query head i reads K/V head i // 4; another order, or a K/V head read by the wrong queries, fails)."""
    q, k, v, mask = action_attention_inputs(B=2, Hq=8, Hkv=2, Dh=16, P=30, L=40)
    ref = M.attention(q, k, v, mask, 'eager')
    assert_close(M.attention(q, k, v, mask, 'grouped'), ref, 'grouped vs eager attention', rtol=1e-6)
    swapped = torch.cat([k[:, :, 1:], k[:, :, :1]], 2)  # the K/V heads exchanged: a different function
    assert (M.attention(q, swapped, v, mask, 'grouped') - ref).abs().max() > 1e-2


@pytest.mark.parametrize('impl', ['flex', 'grouped', 'triton'])
def test_denoising_attention_matches_reference(monkeypatch, impl):
    """sample_actions(denoise_attn=impl) runs `impl` in every denoising step and gives the same actions as the
    reference, eager and compiled (the mask an input of the shared graph): 'flex' (FlexAttention with the BlockMask
    of the action rows; the K/V heads repeated for these short queries), 'grouped', and 'triton', which on a CPU
    (no kernel) runs 'grouped'. A guided call keeps attn_impl's attention with 'flex' (no FlexAttention backward)
    and runs 'grouped' for the other two (its guidance too)."""
    from torch._dynamo.utils import counters
    import torch._dynamo
    kind = 'grouped' if impl == 'triton' else impl  # what M.attention is asked for
    assert impl != 'triton' or not decode_attn.usable(torch.zeros(1)), 'this test runs the fallback: no interpreter'
    cfg = replace(CFG, depth=3, heads=4, kv_heads=2, action_horizon=43)  # grouped heads (pi05: 8 per K/V head)
    m, b = make_model(cfg), make_batch(cfg)
    x0, _ = noise_time(cfg, seed=8)
    ref = m.sample_actions(b, noise=x0)
    with torch.no_grad():  # 72 prefix + 43 action keys: 'grouped' pads the cached prefix with 5 masked keys
        prefix_keys = {kind: m.prefix_cache(b, kind)['kv'][0][0].shape[1] for kind in ('eager', impl)}
    assert prefix_keys['eager'] + cfg.action_horizon == 115
    assert prefix_keys[impl] == (72 if impl == 'flex' else 120 - cfg.action_horizon), prefix_keys
    used, attention = [], M.attention
    monkeypatch.setattr(M, 'attention', lambda q, k, v, mask, kind: used.append(kind) or attention(q, k, v, mask, kind))
    assert_close(m.sample_actions(b, noise=x0, denoise_attn=impl), ref, f'{impl} denoising attention vs eager')
    assert used.count(kind) == 10 * cfg.depth and set(used) == {'eager', kind}, sorted(set(used))
    guide = torch.randn(x0.shape, generator=torch.Generator().manual_seed(2))
    weights = M.rtc_weights(cfg.action_horizon, 4, 2)[None, :, None].expand_as(x0)
    guided_ref = m.sample_actions(b, noise=x0, guide=guide, guide_weights=weights)
    used.clear()
    guided = m.sample_actions(b, noise=x0, guide=guide, guide_weights=weights, denoise_attn=impl)
    if impl == 'flex':
        assert 'flex' not in used and torch.equal(guided, guided_ref)
    else:
        assert used.count(kind) == 10 * cfg.depth, used
        assert_close(guided, guided_ref, f'{impl} denoising attention vs eager, guided')
    monkeypatch.undo()
    torch._dynamo.reset()
    counters.clear()
    M.compile_inference(m, backend='aot_eager')
    assert_close(m.sample_actions(b, noise=x0, denoise_attn=impl), ref, f'{impl} denoising attention vs eager, compiled')
    assert not counters['graph_break'] and not counters['recompiles'], dict(counters['stats'])
    with pytest.raises(ValueError, match="denoise_attn='gqa'"):
        m.sample_actions(b, noise=x0, denoise_attn='gqa')


def test_grouped_prefix_attention_matches_reference(monkeypatch):
    """sample_actions(prefix_attn='grouped'): the prefix pass's attention (every prefix token a query: images and
    prompts, a masked camera slot, prompt padding) as the grouped query heads over each K/V head gives the
    reference's actions, eager and compiled; every prefix layer but the last (which only supplies K/V) runs it."""
    from torch._dynamo.utils import counters
    import torch._dynamo
    cfg = replace(CFG, depth=3, heads=4, kv_heads=2)
    m, b = make_model(cfg), make_batch(cfg)
    x0, _ = noise_time(cfg, seed=8)
    ref = m.sample_actions(b, noise=x0)
    used, attention = [], M.attention
    monkeypatch.setattr(M, 'attention', lambda q, k, v, mask, kind: used.append((kind, q.shape[1])) or
                        attention(q, k, v, mask, kind))
    assert_close(m.sample_actions(b, noise=x0, prefix_attn='grouped'), ref, 'grouped prefix attention vs eager')
    prefix = [u for u in used if u[1] != cfg.action_horizon]
    assert prefix == [('grouped', 72)] * (cfg.depth - 1), used
    monkeypatch.undo()
    torch._dynamo.reset()
    counters.clear()
    M.compile_inference(m, backend='aot_eager')
    assert_close(m.sample_actions(b, noise=x0, prefix_attn='grouped'), ref, 'grouped prefix attention, compiled')
    assert not counters['graph_break'], dict(counters['stats'])
    with pytest.raises(ValueError, match="prefix_attn='flex'"):
        m.sample_actions(b, noise=x0, prefix_attn='flex')


def test_prefix_cache_pads_keys_inside_the_prefix_step(monkeypatch):
    """For 'grouped' the cached prefix keys and values are padded with zero positions to a key count (with the
    action keys) that is a multiple of 8, by each layer's prefix step itself (so a compiled step writes them):
    exactly the unpadded cache's with zeros appended, and the mask hides the padding."""
    m, b = make_model(), make_batch()
    plain = m.prefix_cache(b)
    Lp, H = plain['valid'].shape[1], CFG.action_horizon
    pad = -(Lp + H) % 8
    assert pad and all(k.shape[1] == Lp for k, _ in plain['kv']), 'this batch must need padding'
    returned = []
    for layer in m.layers:  # what each prefix step hands back, before prefix_cache sees it
        step = layer.prefix_step
        monkeypatch.setattr(layer, 'prefix_step', lambda *a, _s=step, **k: returned.append(_s(*a, **k)) or returned[-1])
    grouped = m.prefix_cache(b, denoise_attn='grouped')
    assert [(k.shape[1], v.shape[1]) for _, k, v in returned] == [(Lp + pad, Lp + pad)] * len(m.layers)
    for (k, v), (kg, vg) in zip(plain['kv'], grouped['kv']):
        assert torch.equal(kg, M.F.pad(k, (0, 0, 0, 0, 0, pad))) and torch.equal(vg, M.F.pad(v, (0, 0, 0, 0, 0, pad)))
    assert (grouped['mask'][..., Lp:Lp + pad] < -1e30).all(), 'the padded keys are masked for every query'


def test_triton_denoising_attention_hands_the_kernel_its_keys_and_values(monkeypatch):
    """Where decode_attn's kernel runs (a GPU), denoise_step hands it the cached prefix's K and V and the action
    tokens' K and V in launch()'s order (q, k1, v1, k2, v2, mask). Here the kernel is stood in for by the eager
    attention over the same arguments: plain sampling gives the reference's actions through it in every step, and a
    guided step (a gradient through the attention) does not call it."""
    cfg = replace(CFG, depth=3, heads=4, kv_heads=2, action_horizon=43)
    m, b = make_model(cfg), make_batch(cfg)
    x0, _ = noise_time(cfg, seed=8)
    ref = m.sample_actions(b, noise=x0)
    calls = []

    def kernel(q, k1, v1, k2, v2, mask):  # launch()'s contract, computed by the reference attention
        calls.append(k1.shape[1])
        return M.attention(q, torch.cat([k1, k2], 1), torch.cat([v1, v2], 1), mask, 'eager')
    monkeypatch.setattr(decode_attn, 'usable', lambda q: not (torch.is_grad_enabled() and q.requires_grad))
    monkeypatch.setattr(decode_attn, 'attention', kernel)
    assert_close(m.sample_actions(b, noise=x0, denoise_attn='triton'), ref, 'triton (stand-in kernel) vs eager')
    assert calls == [120 - cfg.action_horizon] * (10 * cfg.depth), calls  # the padded prefix, every layer-step
    calls.clear()
    guide = torch.randn(x0.shape, generator=torch.Generator().manual_seed(2))
    weights = M.rtc_weights(cfg.action_horizon, 4, 2)[None, :, None].expand_as(x0)
    guided = m.sample_actions(b, noise=x0, guide=guide, guide_weights=weights, denoise_attn='triton')
    assert not calls, 'a guided step differentiates through the attention: the kernel has no backward'
    assert_close(guided, m.sample_actions(b, noise=x0, guide=guide, guide_weights=weights), 'triton guided vs eager')


def test_inference_dtype_keeps_the_actions_bit_identical():
    """set_param_dtype(bf16, inference=True), as serving loads pi05: the adaRMS Dense weights stored in bf16 give
    exactly the actions of fp32 ones rounded to bf16 at every use, guided steps too; the other fp32 parameters stay
    fp32; a dtype other than the compute dtype is refused."""
    import copy
    cfg = replace(CFG, depth=2)
    m = make_model(cfg)
    m.compute_dtype = torch.bfloat16
    m.set_param_dtype(torch.bfloat16).eval().requires_grad_(False)
    fast = copy.deepcopy(m).set_param_dtype(torch.bfloat16, inference=True)
    dense = {f'{n}.dense.{p}' for n, mod in m.named_modules() if isinstance(mod, M.AdaRMSNorm) for p in ('weight', 'bias')}
    changed = {n for (n, p), q in zip(m.named_parameters(), fast.parameters()) if p.dtype != q.dtype}
    assert dense and changed == dense, sorted(changed ^ dense)  # exactly the adaRMS Dense, from fp32 to bf16
    assert all(fast.get_parameter(n).dtype == torch.bfloat16 for n in dense)
    b = make_batch(cfg)
    x0, _ = noise_time(cfg, seed=3)
    assert torch.equal(fast.sample_actions(b, noise=x0), m.sample_actions(b, noise=x0))
    guide = torch.randn(x0.shape, generator=torch.Generator().manual_seed(2))
    weights = M.rtc_weights(cfg.action_horizon, 4, 2)[None, :, None].expand_as(x0)
    assert torch.equal(fast.sample_actions(b, noise=x0, guide=guide, guide_weights=weights),
                       m.sample_actions(b, noise=x0, guide=guide, guide_weights=weights))
    refused = copy.deepcopy(m)
    with pytest.raises(ValueError, match='compute in torch.bfloat16'):
        refused.set_param_dtype(torch.float16, inference=True)
    assert all(p.dtype == q.dtype for p, q in zip(refused.parameters(), m.parameters())), 'a refused call cast some'


TRITON_INTERPRETER_CHECK = """
import torch, decode_attn, flex_mask, model as M
torch.manual_seed(0)
B, Tq, Hq, Hkv, Dh = 2, 5, 4, 2, 32  # two K/V heads of two query heads
for T1 in (21, 16):  # 21: not a multiple of BLOCK_N; 16: a key split that starts exactly at the first action key
    q = torch.randn(B, Tq, Hq, Dh)
    k1, v1, k2, v2 = (torch.randn(B, T, Hkv, Dh) for T in (T1, T1, Tq, Tq))
    valid = torch.ones(B, T1 + Tq, dtype=torch.bool)
    valid[0, 3:6] = valid[1, 12:T1] = False  # a masked camera slot, prompt padding
    valid[1, :8] = False  # a whole first key block masked (BLOCK_N 8): no visible key yet
    mask = flex_mask.additive_mask(valid, T1, torch.float32, q_start=T1)
    ref = M.attention(q, torch.cat([k1, k2], 1), torch.cat([v1, v2], 1), mask, 'grouped')
    # splits 2 at BLOCK_N 16: one split across both key kinds (T1 21), or one starting at the first action key (T1 16);
    # splits 4 at BLOCK_N 8: a last split of action keys alone (T1 21: keys 24-25), a first one with no visible key
    for bm, bn, splits in ((16, 16, 1), (16, 16, 2), (32, 64, 1), (16, 8, None), (16, 8, 4)):
        got = decode_attn.launch(q, k1, v1, k2, v2, mask, block_m=bm, block_n=bn, splits=splits)
        err = (got - ref).abs().max().item()
        assert err < 1e-5, f'T1 {T1}, kernel {bm}/{bn}/{splits} splits vs grouped: max abs diff {err:.2e}'
        swapped = decode_attn.launch(q, k1, v1, k2.flip(2), v2.flip(2), mask, block_m=bm, block_n=bn, splits=splits)
        assert (swapped - ref).abs().max().item() > 1e-2, 'the action keys of the other K/V head must change the output'
print('ok')
"""


@pytest.mark.skipif(decode_attn.triton is None, reason='needs triton (the CPU build of torch comes without it)')
def test_triton_decode_kernel_matches_grouped_in_the_interpreter():
    """decode_attn's kernel, run by Triton's interpreter on the CPU in fp32 (its bf16 products are not emulated
    there; the GPU test covers bf16): the grouped attention over the prefix and action keys read in place, with
    masked keys, two K/V heads and a prefix that is not a multiple of the key block."""
    import subprocess
    import numpy
    if tuple(map(int, numpy.__version__.split('.')[:2])) >= (2, 3):
        pytest.skip("Triton 3.6's interpreter fails on numpy >= 2.3 (a 1-element array as a loop bound)")
    env = dict(os.environ, TRITON_INTERPRET='1')
    out = subprocess.run([sys.executable, '-c', TRITON_INTERPRETER_CHECK], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.abspath(__file__)), timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith('ok'), out.stderr[-3000:]

SMALL_GEMM_INTERPRETER_CHECK = """
import dataclasses, torch, small_gemm, model as M
from test_equivalence import CFG, make_model, make_batch, noise_time
torch.manual_seed(0)
for rows, N, K, split in ((50, 256, 512, 1), (50, 256, 512, 4), (1, 128, 256, 2), (64, 192, 1024, 8)):
    x, w = torch.randn(rows, K), torch.randn(N, K)
    ref = x @ w.T
    for _ in range(2):  # the second call finds the counters the first left (zero again, or it writes nothing)
        got = small_gemm.launch(x, w, split=split)
        err = ((got - ref).abs().max() / ref.abs().max()).item()
        assert err < 1e-5, f'{rows} x {K} @ {K} x {N}, split {split}: max diff {err:.2e} of the largest'
assert not small_gemm._counters[torch.device('cpu')].any(), 'counters left non-zero'
assert small_gemm.usable(torch.zeros(64, 128), torch.zeros(64, 128))
assert not small_gemm.usable(torch.zeros(65, 128), torch.zeros(64, 128)), 'more rows than one block'
assert not small_gemm.usable(torch.zeros(50, 100), torch.zeros(64, 100)), 'K not a multiple of 128'
# served: the expert's projections (q/k/v and gate/up fused, o and down) through the kernel give the same actions
cfg = dataclasses.replace(CFG, expert_width=128, expert_mlp=256, head_dim=64)  # shapes the kernel takes
m, b = make_model(cfg), make_batch(cfg)
x0, _ = noise_time(cfg)
M.fuse_projections(m.requires_grad_(False))
ref = m.sample_actions(b, noise=x0)
calls, launch = [], small_gemm.launch
small_gemm.launch = lambda x, w, **kw: calls.append(tuple(w.shape)) or launch(x, w, **kw)
got = M.use_small_gemm(m).sample_actions(b, noise=x0)
assert sorted(set(calls)) == [(128, 128), (128, 256), (256, 128), (512, 128)], sorted(set(calls))
err = ((got - ref).abs().max() / ref.abs().max()).item()
assert err < 1e-5, f'sample_actions with the small GEMMs: max diff {err:.2e} of the largest'
print('ok')
"""


@pytest.mark.skipif(small_gemm.triton is None, reason='needs triton (the CPU build of torch comes without it)')
def test_small_gemm_matches_linear_in_the_interpreter():
    """small_gemm's kernel, run by Triton's interpreter on the CPU in fp32: few rows times a weight, with K split over
    programs whose partials the last one adds up, twice (the counters must be zero again), and sample_actions with
    the action expert's four projections through it (use_small_gemm) equal to cuBLAS's path."""
    import subprocess
    import numpy
    if tuple(map(int, numpy.__version__.split('.')[:2])) >= (2, 3):
        pytest.skip("Triton 3.6's interpreter fails on numpy >= 2.3 (a 1-element array as a loop bound)")
    env = dict(os.environ, TRITON_INTERPRET='1')
    out = subprocess.run([sys.executable, '-c', SMALL_GEMM_INTERPRETER_CHECK], env=env, capture_output=True,
                         text=True, cwd=os.path.dirname(os.path.abspath(__file__)), timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith('ok'), out.stderr[-3000:]


def test_small_gemm_stays_off_where_it_cannot_run():
    """use_small_gemm marks the action expert's projections only; where the kernel cannot run (here a CPU without
    Triton's interpreter) they take cuBLAS's path with the same actions; on=False undoes it."""
    m, b = make_model(), make_batch()
    x0, _ = noise_time()
    M.fuse_projections(m.requires_grad_(False))
    ref = m.sample_actions(b, noise=x0)
    M.use_small_gemm(m)
    assert m.layers[0].expert.mlp.small and m.layers[0].expert.self_attn.o_proj.small and not m.layers[0].vlm.mlp.small
    if not small_gemm.INTERPRET:
        assert not small_gemm.usable(torch.zeros(50, 128), torch.zeros(64, 128)), 'a CPU tensor without the interpreter'
    assert_close(m.sample_actions(b, noise=x0), ref, 'use_small_gemm where its kernel cannot run')
    M.use_small_gemm(m, False)
    assert not any(getattr(x, 'small', False) for x in m.modules())


def test_siglip_layers_get_one_row_per_patch():
    """The patch embeddings reach every SigLIP layer as rows in memory (contiguous), not as the transposed view of the
    conv's channel planes, whose layout each residual add would pass on (inductor then split every LayerNorm into
    three kernels over strided channels); and each layer hands on the same layout."""
    m, b = make_model(), make_batch()
    seen = []
    hooks = [layer.register_forward_hook(lambda mod, args, out: seen.append((args[0].is_contiguous(), out.is_contiguous())))
             for layer in m.vision.encoder.layers]
    m.embed_prefix(b)
    for h in hooks:
        h.remove()
    assert len(seen) == CFG.vit_depth and all(i and o for i, o in seen), seen


def test_fused_projections_match_separate_ones():
    """fuse_projections (serving): q/k/v and gate/up as one GEMM each give the same actions, add no parameters or
    state-dict keys, and stay tied to the parameters (loading new weights changes the fused GEMMs too); compiled:
    test_compiled_inference_matches_eager_sample_actions."""
    m, b = make_model(), make_batch()
    x0, _ = noise_time(seed=6)
    ref = m.sample_actions(b, noise=x0)
    guide = torch.randn(x0.shape, generator=torch.Generator().manual_seed(3))
    weights = M.rtc_weights(x0.shape[1], 4, 2)[None, :, None].expand_as(x0)
    ref_guided = m.sample_actions(b, noise=x0, guide=guide, guide_weights=weights)
    keys = set(m.state_dict())
    m.requires_grad_(False)  # as served
    M.fuse_projections(m)
    a = m.layers[0].expert.self_attn
    assert a.k_proj.weight.untyped_storage().data_ptr() == a.fused.untyped_storage().data_ptr(), 'no copy: views'
    s = m.vision.encoder.layers[0].self_attn  # SigLIP's q/k/v, biases too
    assert s.v_proj.bias.untyped_storage().data_ptr() == s.fused_bias.untyped_storage().data_ptr()
    assert not (s.fused.requires_grad or s.fused_bias.requires_grad), 'the fused tensors carry no autograd history'
    assert set(m.state_dict()) == keys and M.fused_intact(m)
    separate = {p: getattr(s, p).forward for p in ('q_proj', 'k_proj', 'v_proj')}
    for p in separate:  # frozen and fused: SigLIP's q/k/v Linears must not run on their own
        setattr(getattr(s, p), 'forward', lambda x: pytest.fail('SigLIP took its separate q/k/v while fused'))
    image_tokens = m.embed_prefix(b)[0]
    for p, f in separate.items():
        setattr(getattr(s, p), 'forward', f)
    m.requires_grad_(True)  # the separate projections again, on the same weights
    assert_close(m.embed_prefix(b)[0].detach(), image_tokens, 'SigLIP with fused q/k/v vs separate')
    m.requires_grad_(False)
    assert_close(m.sample_actions(b, noise=x0), ref, 'fused projections vs separate')
    # real-time chunking as serve.py serves it: the guidance's autograd pass through the fused GEMMs
    assert_close(m.sample_actions(b, noise=x0, guide=guide, guide_weights=weights), ref_guided, 'fused, guided')
    other = make_model(seed=1)
    m.load_state_dict(other.state_dict())
    assert_close(m.sample_actions(b, noise=x0), other.sample_actions(b, noise=x0), 'fused after loading new weights')
    assert not M.fused_intact(m.double()), 'a dtype change unties the fused tensors'
    # a parameter that trains takes the separate projections: its gradient reaches it
    t = make_model()
    M.fuse_projections(t)
    assert not any(m.fused.requires_grad for m, _ in M.fused_groups(t)), 'fusing a trainable model records no graph'
    n, tm = noise_time()
    _, grads = loss_and_grads(t, b, n, tm)
    assert grads['layers.0.expert.self_attn.q_proj.weight'].abs().sum() > 0
    assert grads['layers.0.vlm.mlp.up_proj.weight'].abs().sum() > 0
    for n in ('weight', 'bias'):
        assert grads[f'vision.encoder.layers.0.self_attn.k_proj.{n}'].abs().sum() > 0, n


def test_compiled_inference_serves_many_shapes():
    """Each batch size is one more compiled variant of the prefix and denoising steps (twice: the last layer is a
    class of its own); more than dynamo's default 8 must not stop serving (fullgraph=True fails at the limit)."""
    import torch._dynamo
    cfg = replace(CFG, depth=2, vit_depth=1)
    m = make_model(cfg)
    torch._dynamo.reset()
    M.compile_inference(m, backend='eager')
    for B in range(1, 6):  # 5 batch sizes x 2 layer classes = 10 variants of denoise_step
        b = make_batch(cfg, B=B)
        x0 = torch.randn(B, cfg.action_horizon, cfg.action_dim)
        assert m.sample_actions(b, noise=x0).shape == (B, cfg.action_horizon, cfg.action_dim)


# -----------------------------------------------------------------------------
# numerics of the building blocks


def test_rope_matches_complex_rotation():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 7, 3, 16, generator=g)
    pos = torch.tensor([[0, 1, 2, 2, 3, 10, 999]] * 2)
    cos, sin = M.rope_tables(pos, 16)
    got = M.apply_rope(x, cos, sin)
    freq = 1.0 / 10000 ** (torch.arange(8, dtype=torch.float64) * 2 / 16)
    ang = pos.double()[..., None, None] * freq
    z = torch.complex(x[..., :8].double(), x[..., 8:].double()) * torch.exp(1j * ang)
    ref = torch.cat([z.real, z.imag], -1).float()
    assert_close(got, ref, 'rotate-half RoPE', rtol=1e-4)


def test_flow_time_is_beta_1_5_1():
    """t = 0.999 * Beta(1.5, 1) + 0.001: against the Beta(1.5, 1) CDF x^1.5 (Kolmogorov-Smirnov) and its mean 0.6,
    for model.sample_time, for train.draw_randomness and for the draw Pi05.forward makes when given no time."""
    import train
    g = torch.Generator().manual_seed(0)
    n = 200_000
    draws = {'sample_time': M.sample_time(n, g),
             'draw_randomness': train.draw_randomness(g, n, CFG, 0, 'none')[1]}
    for name, t in draws.items():
        x = ((t.double() - 0.001) / 0.999).sort().values
        ks = float(((torch.arange(1, n + 1, dtype=torch.float64) / n) - x.clamp(0, 1) ** 1.5).abs().max())
        assert t.min() >= 0.001 and t.max() <= 1.0 and ks < 0.005, f'{name}: KS distance to Beta(1.5, 1) {ks:.4f}'
        assert abs(float(x.mean()) - 0.6) < 0.003, f'{name}: mean {float(x.mean()):.4f}, Beta(1.5, 1) has mean 0.6'
    m, b = make_model(), make_batch()
    with torch.no_grad():
        got = m(b, generator=torch.Generator().manual_seed(3))
        g = torch.Generator().manual_seed(3)
        noise = torch.randn(b['actions'].shape, generator=g)
        want = m(b, noise=noise, time=M.sample_time(3, g))
    assert torch.equal(got, want), 'Pi05.forward must draw its flow time with sample_time'


def test_time_embedding_is_sin_then_cos():
    t = torch.tensor([0.0, 0.3, 1.0])
    e = M.posemb_sincos(t, 8)
    period = 4e-3 * (4.0 / 4e-3) ** torch.linspace(0, 1, 4, dtype=torch.float64)
    arg = t.double()[:, None] * 2 * math.pi / period
    # JAX forms the fp32 product t * omega, so the angle carries fp32 rounding (~1e-4 rad at omega = 1571)
    assert_close(e, torch.cat([arg.sin(), arg.cos()], -1).float(), 'posemb_sincos', rtol=2e-4)
    assert not torch.allclose(e, torch.cat([arg.cos(), arg.sin()], -1).float(), atol=1e-2), 'cos block first'


def test_norms_follow_openpi():
    x = torch.randn(2, 3, 8)
    rms = M.RMSNorm(8)
    with torch.no_grad():
        rms.weight.fill_(0.5)
    ref = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * 1.5
    assert_close(rms(x), ref, 'RMSNorm (1 + w)')
    ada = M.AdaRMSNorm(8, 4)
    with torch.no_grad():
        ada.dense.weight.zero_()
        ada.dense.bias.copy_(torch.cat([torch.full((8,), 1.0), torch.full((8,), 2.0), torch.full((8,), 3.0)]))
    y, gate = ada(x, torch.randn(2, 4))
    n = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    assert_close(y, n * 2 + 2, 'adaRMS scale, shift order')
    assert torch.all(gate == 3), 'adaRMS gate must be the raw third chunk'


def test_fresh_init_follows_openpi_jax():
    torch.manual_seed(0)
    m = M.build('tiny', compute_dtype=torch.float32)
    zero = [n for n, p in m.named_parameters() if ('dense' in n or n.endswith('layernorm.weight') or n.startswith('projector')
                                                     or n == 'vlm_norm.weight') and 'vision' not in n]
    assert len(zero) == 6 * CFG.depth + 5, zero  # per layer 2 RMSNorm + 2 adaRMS (w, b); projector, final norms
    for n in zero:
        assert torch.all(dict(m.named_parameters())[n] == 0), f'{n} must start at zero (JAX init)'
    for n, p in m.named_parameters():
        if n.endswith('proj.weight') and 'layers' in n:
            std = float(p.std()) * p.shape[1] ** 0.5
            assert 0.6 < std < 1.2, f'{n}: lecun-normal std x sqrt(fan_in) = {std:.2f}'
    # zero gates: every expert block starts as the identity on the action stream
    b, (n, t) = make_batch(), noise_time()
    x_t = t[:, None, None] * n + (1 - t[:, None, None]) * b['actions']
    xs, cond = m.action_in(x_t, t, m.compute_dtype)
    with torch.no_grad():
        layer = m.layers[0]
        xp, _ = m.embed_prefix(b)
        valid = torch.ones(3, xp.shape[1] + CFG.action_horizon, dtype=torch.bool)
        cos, sin = M.rope_tables(torch.cumsum(valid, 1) - 1, CFG.head_dim)
        _, xs1 = layer(xp, xs, cond, cos, sin, flex_mask.additive_mask(valid, xp.shape[1], torch.float32), 'eager')
    assert torch.equal(xs1, xs)


def spec_joint_layer(layer, xp, xs, cond, pad, prefix_len):
    """openpi's joint layer (gemma_pytorch.py compute_layer_complete, gemma.py Block) written out independently in
    float64: norms, QKV, RoPE on cumsum(pad) - 1 positions, one attention over [prefix; suffix] under openpi's
    make_att_2d_masks rule, o_proj, gated residuals, GeGLU MLPs."""
    d = lambda t: t.detach().double()
    lin = lambda x, m: x @ d(m.weight).T + (d(m.bias) if m.bias is not None else 0)

    def norm(x, mod, c=None):
        n = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        if c is None:
            return n * (1 + d(mod.weight)), None
        scale, shift, gate = lin(c, mod.dense)[:, None].chunk(3, -1)
        return n * (1 + scale) + shift, gate

    def rope(x, pos):  # x (B, T, heads, Dh): rotate-half, angle pos / 10000^(2i/Dh)
        half = x.shape[-1] // 2
        ang = pos.double()[..., None, None] / 10000 ** (torch.arange(half, dtype=torch.float64) * 2 / x.shape[-1])
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * ang.cos() - x2 * ang.sin(), x2 * ang.cos() + x1 * ang.sin()], -1)

    def mlp(x, m):
        return lin(torch.nn.functional.gelu(lin(x, m.gate_proj), approximate='tanh') * lin(x, m.up_proj), m.down_proj)

    xp, xs, cond = d(xp), d(xs), d(cond)
    B, T, Dh = xp.shape[0], pad.shape[1], layer.cfg.head_dim
    pos = torch.cumsum(pad.long(), 1) - 1
    hp, _ = norm(xp, layer.vlm.input_layernorm)
    hs, g1 = norm(xs, layer.expert.input_layernorm, cond)
    heads = lambda h, m, name: lin(h, getattr(m.self_attn, name)).view(B, h.shape[1], -1, Dh)
    q = rope(torch.cat([heads(hp, layer.vlm, 'q_proj'), heads(hs, layer.expert, 'q_proj')], 1), pos)
    k = rope(torch.cat([heads(hp, layer.vlm, 'k_proj'), heads(hs, layer.expert, 'k_proj')], 1), pos)
    v = torch.cat([heads(hp, layer.vlm, 'v_proj'), heads(hs, layer.expert, 'v_proj')], 1)
    visible = flex_mask.dense_reference(pad, flex_mask.pi05_ar(prefix_len, T - prefix_len).expand(B, -1))
    logits = torch.einsum('bqhd,bkd->bhqk', q, k[:, :, 0]) / Dh ** 0.5
    p = torch.softmax(logits.masked_fill(~visible[:, None], -2.3819763e38), -1)
    o = torch.einsum('bhqk,bkd->bqhd', p, v[:, :, 0]).flatten(2)
    xp = xp + lin(o[:, :prefix_len], layer.vlm.self_attn.o_proj)
    xp = xp + mlp(norm(xp, layer.vlm.post_attention_layernorm)[0], layer.vlm.mlp)
    xs = xs + lin(o[:, prefix_len:], layer.expert.self_attn.o_proj) * g1
    h2, g2 = norm(xs, layer.expert.post_attention_layernorm, cond)
    return xp, xs + mlp(h2, layer.expert.mlp) * g2


def test_joint_layer_matches_spec_written_out():
    """The reference path itself against the spec: a layer of the fp32 model vs the float64 transcription above
    (valid tokens only: padding rows are never read)."""
    m, b, (n, t) = make_model(), make_batch(), noise_time()
    with torch.no_grad():
        xp, valid_p = m.embed_prefix(b)
        xs, cond = m.action_in(t[:, None, None] * n + (1 - t[:, None, None]) * b['actions'], t, m.compute_dtype)
        pad = torch.cat([valid_p, torch.ones(3, CFG.action_horizon, dtype=torch.bool)], 1)
        cos, sin = M.rope_tables(torch.cumsum(pad, 1) - 1, CFG.head_dim)
        P = xp.shape[1]
        got_p, got_s = m.layers[0](xp, xs, cond, cos, sin, flex_mask.additive_mask(pad, P, torch.float32), 'eager')
        ref_p, ref_s = spec_joint_layer(m.layers[0], xp, xs, cond, pad, P)
    assert_close(got_s, ref_s.float(), 'action stream vs the spec', rtol=1e-5, atol=1e-5)
    assert_close(got_p[valid_p], ref_p[valid_p].float(), 'prefix stream vs the spec', rtol=1e-5, atol=1e-5)


def test_prefix_embedding_scales_text_not_images():
    m, b = make_model(), make_batch()
    with torch.no_grad():
        x, valid = m.embed_prefix(b)
        n_img = b['images'].shape[1] * CFG.patches
        img = b['images'].flatten(0, 1).float() / 255 * 2 - 1
        ref_img = m.projector(m.vision(img, torch.float32)).view(3, n_img, -1)
    assert_close(x[:, :n_img], ref_img, 'image tokens are the projector output, unscaled')
    assert_close(x[:, n_img:], m.embed_tokens(b['tokens']) * CFG.width ** 0.5, 'text tokens x sqrt(width)')
    assert torch.equal(valid[:, n_img:], b['token_mask']) and torch.equal(valid[:, :n_img], b['image_mask'].repeat_interleave(CFG.patches, 1))


def test_loss_dims_option():
    m, b, (n, t) = make_model(), make_batch(), noise_time()
    with torch.no_grad():
        x_t = t[:, None, None] * n + (1 - t[:, None, None]) * b['actions']
        err = (m.velocity(b, x_t, t) - (n - b['actions'])) ** 2
        assert_close(m(b, n, t), err.mean(), 'loss over all 32 dims')
        assert_close(m(b, n, t, loss_dims=7), err[..., :7].mean(), 'loss over the real dims')


def test_uint8_and_float_images_agree():
    m, b, (n, t) = make_model(), make_batch(), noise_time()
    bf = dict(b, images=b['images'].float() / 255 * 2 - 1)
    with torch.no_grad():
        assert_close(m(bf, n, t), m(b, n, t), 'float [-1, 1] vs uint8 images')


def test_bad_input_errors():
    m, b = make_model(), make_batch()
    with pytest.raises(ValueError, match='wrong image size'):
        m(dict(b, images=b['images'][..., :20, :20]))
    with pytest.raises(KeyError, match='token_mask'):
        m({k: v for k, v in b.items() if k != 'token_mask'})
    with pytest.raises(ValueError, match='actions'):
        m(dict(b, actions=b['actions'][:, :2]))

# -----------------------------------------------------------------------------
# checkpoints


def test_checkpoint_round_trip(tmp_path):
    from safetensors.torch import load_file
    m = make_model()
    path = M.save_pretrained(m, str(tmp_path / 'ckpt'))
    sd = load_file(path)
    assert M.TIED_EMBED in sd and M.EXPERT_LM_HEAD in sd, 'openpi stores the embedding as lm_head and needs the expert lm_head'
    assert 'paligemma_with_expert.paligemma.model.language_model.layers.0.self_attn.q_proj.weight' in sd
    assert 'paligemma_with_expert.gemma_expert.model.layers.2.input_layernorm.dense.bias' in sd
    assert 'paligemma_with_expert.paligemma.model.vision_tower.vision_model.encoder.layers.1.mlp.fc2.weight' in sd
    assert 'paligemma_with_expert.gemma_expert.model.norm.dense.weight' in sd and 'time_mlp_out.bias' in sd
    assert 'action_in_proj.weight' in sd and not any('embed_tokens' in k for k in sd)
    m2 = M.build('tiny', compute_dtype=torch.float32, init_from=str(tmp_path / 'ckpt'))
    for k, v in m.state_dict().items():
        assert torch.equal(v, m2.state_dict()[k]), k
    ours = M.openpi_state_dict(m)  # the file holds exactly the openpi-named state dict
    assert set(ours) == set(sd) and all(torch.equal(ours[k], sd[k]) for k in sd)
    assert not [f for f in os.listdir(tmp_path / 'ckpt') if f != 'model.safetensors'], 'temporary files left behind'


def test_load_lerobot_prefixed_bf16_file(tmp_path):
    from safetensors.torch import save_file
    m = make_model()
    sd = {'model.' + k: v.to(torch.bfloat16) for k, v in M.openpi_state_dict(m).items()}
    sd['model.paligemma_with_expert.paligemma.model.language_model.embed_tokens.weight'] = sd.pop('model.' + M.TIED_EMBED)
    save_file(sd, str(tmp_path / 'model.safetensors'))
    m2 = M.build('tiny', compute_dtype=torch.float32, init_from=str(tmp_path))
    for k, v in m.state_dict().items():
        assert torch.equal(m2.state_dict()[k], v.to(torch.bfloat16).float()), k


def test_load_errors_name_the_keys(tmp_path):
    from safetensors.torch import save_file
    m = make_model()
    sd = M.openpi_state_dict(m)
    missing = 'paligemma_with_expert.gemma_expert.model.layers.1.mlp.up_proj.weight'
    bad = dict(sd)
    del bad[missing]
    save_file(bad, str(tmp_path / 'a.safetensors'))
    with pytest.raises(ValueError, match=r'1 missing: ' + missing.replace('.', r'\.')):
        M.load_pretrained(make_model(), str(tmp_path / 'a.safetensors'))
    bad = dict(sd)
    bad['action_out_proj.weight'] = torch.zeros(5, 5)
    bad['something.else'] = torch.zeros(1)
    save_file(bad, str(tmp_path / 'b.safetensors'))
    with pytest.raises(ValueError, match=r'(?s)unexpected: something\.else.*misshaped: action_out_proj\.weight: file \(5, 5\)'):
        M.load_pretrained(make_model(), str(tmp_path / 'b.safetensors'))

# -----------------------------------------------------------------------------
# LoRA


def lora_model(seed=0):
    m = make_model(seed=seed)
    M.apply_lora(m, base_dtype=torch.float32)
    return m


def test_lora_with_zero_b_starts_exactly_at_the_base_model():
    base, b, (n, t) = make_model(), make_batch(), noise_time()
    m = lora_model()
    with torch.no_grad():
        assert torch.equal(m(b, n, t), base(b, n, t)), 'B = 0: the adapters must add exactly nothing'
    trainable = {n for n, p in m.named_parameters() if p.requires_grad}
    frozen = {n for n, p in m.named_parameters() if not p.requires_grad}
    assert all('.lora_' in n or n.startswith(('vision.', 'projector.', 'action_in.', 'action_out.action_out_proj'))
               for n in trainable), sorted(trainable)
    assert all(n.startswith(('layers.', 'embed_tokens', 'vlm_norm', 'action_out.norm')) for n in frozen), sorted(frozen)
    # 7 projections x 2 streams x depth, minus the last layer's 5 prefix Linears that never run
    assert sum('.lora_A' in n for n in trainable) == 14 * CFG.depth - 5
    loss_and_grads(m, b, n, t)
    assert all(p.grad is not None for n, p in m.named_parameters() if '.lora_B' in n), 'every adapter gets a gradient'


def test_merged_lora_checkpoint_equals_base_plus_adapters(tmp_path):
    m, b, (n, t) = lora_model(), make_batch(), noise_time()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if '.lora_B' in name:
                p.normal_(0, 0.05)
        ref = m(b, n, t)
    M.save_pretrained(m, str(tmp_path / 'merged'))  # an ordinary openpi-format checkpoint
    plain = M.build('tiny', compute_dtype=torch.float32, init_from=str(tmp_path / 'merged'))
    with torch.no_grad():
        assert_close(plain(b, n, t), ref, 'merged checkpoint vs base + adapters', rtol=1e-5)
    M.save_tensors(M.lora_state_dict(m), str(tmp_path / 'adapters.safetensors'))  # the adapters alone
    again = make_model()
    M.apply_lora(again, base_dtype=torch.float32)
    M.load_lora(again, str(tmp_path / 'adapters.safetensors'))
    with torch.no_grad():
        assert torch.equal(again(b, n, t), ref), 'base + loaded adapters must be the same model'
    with pytest.raises(M.CheckpointError, match='missing'):
        M.load_lora(make_model(), str(tmp_path / 'adapters.safetensors'))

# -----------------------------------------------------------------------------
# accounting


def test_estimate_flops_matches_flop_counter():
    from torch.utils.flop_counter import FlopCounterMode
    cfg = replace(CFG, width=128, mlp=512, expert_width=64, expert_mlp=128, vit_width=64, vit_mlp=128)
    m, b, (n, t) = make_model(cfg), data.trim_batch(make_batch(cfg), 8)[0], noise_time(cfg)
    with FlopCounterMode(display=False) as fc:
        m(b, n, t).backward()
    est, got = m.estimate_flops(b), fc.get_total_flops()
    assert abs(est - got) / got < 0.05, f"estimate {est:.4e} vs FlopCounterMode {got:.4e} ({(est - got) / got:+.2%})"
    n, t = draws_noise_time(cfg, K=4)
    with FlopCounterMode(display=False) as fc:
        m(b, n, t).backward()
    est, got = m.estimate_flops(b, draws=4), fc.get_total_flops()
    assert abs(est - got) / got < 0.05, f"4 draws: estimate {est:.4e} vs FlopCounterMode {got:.4e} ({(est - got) / got:+.2%})"


def test_pi05_parameter_count_on_meta():
    with torch.device('meta'):
        m = M.Pi05(M.configs['pi05'])
    n = sum(p.numel() for p in m.parameters())
    assert n == 3_353_433_872, f"pi05 has {n:,} parameters, expected 3,353,433,872 (no lm_heads)"

# -----------------------------------------------------------------------------
# GPU-only


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
class TestGPU:
    # flex kernels need realistic head dims and lengths: 64-dim heads, 3 x 64 patches + 24 prompt + 5 action tokens
    GCFG = replace(CFG, head_dim=64, image_size=56)

    def setup(self, attn, dtype=torch.float32, cfg=GCFG):
        m = make_model(cfg).cuda()
        m.attn, m.compute_dtype = attn, dtype
        b = {k: v.cuda() for k, v in make_batch(cfg).items()}
        n, t = noise_time(cfg)
        return m, b, n.cuda(), t.cuda()

    def pi05_heads(self, whole_step=False):
        """A bf16 model at pi05's head layout (8 query heads per K/V head, head dim 256, 50 actions), compiled for
        inference -> (model, batch, noise)."""
        import torch._dynamo
        cfg = replace(CFG, heads=8, kv_heads=1, head_dim=256, action_horizon=50, image_size=56)
        m, b, _, _ = self.setup('sdpa', torch.bfloat16, cfg)
        m.set_param_dtype(torch.bfloat16).eval().requires_grad_(False)
        x0 = torch.randn(3, cfg.action_horizon, cfg.action_dim, device='cuda')
        torch._dynamo.reset()
        M.compile_inference(m, whole_step=whole_step)
        return m, b, x0

    def test_siglip_attention_gradients_stay_finite_at_64_keys(self):
        """cuDNN's SM90 attention backward makes NaN query gradients at key lengths of 64 mod 128 for rows whose
        logsumexp is below -88.7 (pytorch issue 196678). SigLIP's attention (model.sdpa_without_cudnn_nan) at 8 x 8
        tokens goes around it: on rows whose every logit is about -120 its gradients are finite, and on ordinary
        inputs they match the math backend's. Also prints what cuDNN itself gives on this GPU (the case guarded)."""
        from torch.nn.attention import SDPBackend, sdpa_kernel
        sdpa = torch.nn.functional.scaled_dot_product_attention
        torch.manual_seed(0)
        B, H, L, D = 2, 4, 64, 64
        q, k, v, dout = (torch.randn(B, H, L, D, device='cuda', dtype=torch.bfloat16) for _ in range(4))

        def grads(fn, q, k):
            leaves = [t.clone().requires_grad_() for t in (q, k, v)]
            fn(*leaves).backward(dout)
            return [t.grad for t in leaves]

        got = grads(M.sdpa_without_cudnn_nan, q, k)  # ordinary rows: the same gradients as the math backend
        with sdpa_kernel([SDPBackend.MATH]):
            ref = grads(sdpa, q, k)
        for name, a, b in zip('qkv', got, ref):
            err = ((a.float() - b.float()).norm() / b.float().norm()).item()
            assert err < 2e-2, f'd{name}: relative difference {err:.2e} from the math backend'
        q, k = q * 0.1, k * 0.1
        q[..., 0], k[..., 0] = 1.0, -120 * D ** 0.5  # every scaled logit ~ -120: logsumexp ~ -116
        for name, g in zip('qkv', grads(M.sdpa_without_cudnn_nan, q, k)):
            assert torch.isfinite(g).all(), f'd{name} has non-finite values where every logit is ~ -120'
        try:
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                bad = [int((~torch.isfinite(g)).sum()) for g in grads(sdpa, q, k)]
            print(f'cuDNN attention on {torch.cuda.get_device_name()}: non-finite dq, dk, dv values {bad}')
        except RuntimeError as e:  # no cuDNN kernel for these shapes here
            print(f'cuDNN attention not run: {str(e).splitlines()[0]}')

    @pytest.mark.parametrize('B,Hkv', [(1, 1), (2, 2)])
    def test_grouped_attention_bf16_matches_eager(self, B, Hkv):
        """On CUDA in bf16 'grouped' takes its logits from a bf16 GEMM with fp32 output (torch.bmm with out_dtype)
        when no gradient is taken, and the fp32 product when one is (real-time chunking differentiates through q):
        each against the reference (fp32 logits of the same bf16 values) at pi05's head sizes (8 query heads per K/V
        head, head dim 256, 50 actions), the forward of both and the query gradient of the second."""
        from unittest import mock
        q, k, v, mask = action_attention_inputs(B, 8 * Hkv, Hkv, Dh=256, P=256, L=48, device='cuda',
                                                dtype=torch.bfloat16)
        ref = M.attention(q, k, v, mask, 'eager')
        with torch.no_grad(), mock.patch('torch.bmm', wraps=torch.bmm) as bmm:
            got = M.attention(q, k, v, mask, 'grouped')
        assert bmm.call_count == 1, 'grouped attention without a gradient did not take the bf16 GEMM logits'
        # fp32 logits summed in another order move ~1e-4 of the bf16 outputs by an ulp; bf16 logits would move ~60%
        differ = (got != ref).float().mean().item()
        assert differ < 1e-2, f'grouped (bf16 GEMM logits) vs eager attention: {differ:.2%} of the outputs differ'
        q.requires_grad_()
        ref = M.attention(q, k, v, mask, 'eager')
        with mock.patch('torch.bmm', wraps=torch.bmm) as bmm:
            got = M.attention(q, k, v, mask, 'grouped')
        assert bmm.call_count == 0, 'grouped attention under a gradient took the bf16 GEMM, which has no derivative'
        differ = (got != ref).float().mean().item()
        assert differ < 1e-2, f'grouped (fp32 logits) vs eager attention: {differ:.2%} of the outputs differ'
        w = torch.randn_like(ref)
        gr, gg = (torch.autograd.grad((o * w).sum(), q)[0].float() for o in (ref, got))
        assert_close(gg, gr, 'grouped vs eager attention: gradient wrt the queries', rtol=2e-2)

    def test_triton_decode_kernel_matches_grouped_at_pi05_shapes(self):
        """decode_attn's kernel in bf16 at pi05's denoising shapes (8 query heads over one K/V head, head dim 256,
        50 actions over a 576-key prefix with masked keys): the grouped attention's outputs to bf16 rounding, for
        each block size the sweep script tries; and compiled sample_actions(denoise_attn='triton') launches it."""
        torch.manual_seed(0)
        B, Tq, Dh = 3, 50, 256
        bf = dict(device='cuda', dtype=torch.bfloat16)
        for T1 in (216, 576):  # 216: a partial last prefix block at every BLOCK_N
            q = torch.randn(B, Tq, 8, Dh, **bf)
            k1, v1, k2, v2 = (torch.randn(B, T, 1, Dh, **bf) for T in (T1, T1, Tq, Tq))
            valid = torch.ones(B, T1 + Tq, dtype=torch.bool, device='cuda')
            valid[0, :128] = False  # whole key blocks masked before any visible key (a missing first camera)
            valid[1, 128:192] = valid[2, T1 - 20:T1] = False  # a masked camera slot, prompt padding
            mask = flex_mask.additive_mask(valid, T1, torch.float32, q_start=T1)
            ref = M.attention(q, torch.cat([k1, k2], 1), torch.cat([v1, v2], 1), mask, 'grouped').float()
            for bm, bn, warps, splits in ((16, 64, 4, 1), (16, 128, 4, 1), (32, 64, 4, 3), (64, 32, 8, 1), (16, 64, 4, 8)):
                got = decode_attn.launch(q, k1, v1, k2, v2, mask, block_m=bm, block_n=bn, num_warps=warps,
                                         splits=splits).float()
                err = ((got - ref).norm() / ref.norm()).item()
                assert err < 1e-2, f'T1 {T1}, kernel {bm}/{bn}/{warps} warps/{splits} splits vs grouped: {err:.2e}'
        blind = mask.clone()
        blind[..., 128:192] = 0.0  # the masked camera slot made visible: a different function
        err = ((decode_attn.launch(q, k1, v1, k2, v2, blind).float() - ref).norm() / ref.norm()).item()
        assert err > 5e-2, f'the mask must matter: {err:.2e}'
        m, b, x0 = self.pi05_heads(whole_step=True)
        depth = m.cfg.depth
        ref = m.sample_actions(b, noise=x0, denoise_attn='grouped').float()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            got = m.sample_actions(b, noise=x0, denoise_attn='triton').float()
        launched = sum(e.count for e in prof.key_averages() if 'decode_attention_kernel' in e.key)
        assert launched == 10 * depth, f'{launched} decode_attn kernels, expected {10 * depth}'
        err = ((got - ref).norm() / ref.norm()).item()
        assert err < 2e-2, f'triton vs grouped denoising attention, compiled whole steps: relative error {err:.2e}'

    def test_small_gemm_matches_cublas_at_pi05_expert_shapes(self):
        """small_gemm's kernel in bf16 at the action expert's four projections at batch 1 (50 rows; fused q/k/v,
        o_proj, fused gate/up, down_proj), with config()'s split and others: as close to the fp32 product as F.linear
        (within 1.25x; both round once to bf16) on new inputs every call, its workspace filled with NaN first (a partial summed before its program wrote it
        shows), bit-identical when called again and when replayed from a CUDA graph, the counters zero after. Then
        GraphedSampler(small_gemm=True) at pi05's expert widths and heads, batch 1: its actions as close to the same
        weights computed in fp32 as the graph's without it (within 1.5x: both are bf16 rounding, which ten steps
        through random weights grow to ~3%), the kernel launched for every projection (of the shapes it takes) of
        every layer and step, replays identical."""
        torch.manual_seed(0)
        tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 yardsticks in full fp32, whatever ran before
        try:
            self._small_gemm_checks()
        finally:
            torch.backends.cuda.matmul.allow_tf32 = tf32

    def _small_gemm_checks(self):
        import copy
        import serve
        shapes = ((2560, 1024), (1024, 2048), (8192, 1024), (1024, 4096))  # (N, K): q/k/v, o, gate/up, down
        for N, K in shapes:
            w = torch.randn(N, K, device='cuda', dtype=torch.bfloat16) / K ** 0.5
            for split in (None, 1, 2, 8) * 5:
                x = torch.randn(50, K, device='cuda', dtype=torch.bfloat16)
                ref = torch.nn.functional.linear(x, w)
                kw = dict(block_n=64, block_k=128, split=split) if split else {}  # else config()'s
                bn, _, splits, _ = (64, 128, split, 4) if split else small_gemm.config(N, K) or (64, 128, 1, 4)
                poison = torch.full((N // bn * splits * small_gemm.MAX_ROWS * bn,), float('nan'), device='cuda')
                got = small_gemm.launch(x, w, part=poison, **kw)
                exact = x.float() @ w.float().T  # both against fp32: the kernel's rounding no worse than cuBLAS's
                off = lambda y: ((y.float() - exact).norm() / exact.norm()).item()
                assert off(got) <= 1.25 * off(ref), f'{K} -> {N}, split {split}: {off(got):.2e} vs cuBLAS {off(ref):.2e}'
                assert torch.equal(got, small_gemm.launch(x, w, **kw)), f'{K} -> {N}, split {split}'
            xs = torch.randn(50, K, device='cuda', dtype=torch.bfloat16)
            graph, out = torch.cuda.CUDAGraph(), None
            with torch.cuda.graph(graph):
                out = small_gemm.linear(xs, w)
            graph.replay()
            first = out.clone()
            graph.replay()
            assert torch.equal(out, first) and torch.equal(first, small_gemm.linear(xs, w)), f'{K} -> {N} replayed'
        assert not small_gemm._counters[x.device].any(), 'counters left non-zero'
        cfg = replace(CFG, heads=8, kv_heads=1, head_dim=256, action_horizon=50, image_size=56, expert_width=1024,
                      expert_mlp=4096)
        m, b, _, _ = self.setup('sdpa', torch.bfloat16, cfg)
        exact = copy.deepcopy(m).requires_grad_(False)  # the same weights computed in fp32: the yardstick
        exact.compute_dtype = torch.float32
        m.set_param_dtype(torch.bfloat16, inference=True).eval().requires_grad_(False)
        b = {k: v[:1] for k, v in b.items()}
        x0 = torch.randn(1, cfg.action_horizon, cfg.action_dim, device='cuda')
        truth = exact.sample_actions(b, noise=x0).float()
        ref = serve.GraphedSampler(m)(b, x0).float()
        sampler = serve.GraphedSampler(m, compile=False, fuse=False, small_gemm=True)  # m is fused and compiled above
        sampler(b, x0)  # captured here
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            got = sampler(b, x0).float()
        taken = sum(small_gemm.config(N, K) is not None for N, K in shapes)  # CONFIGS may leave some to cuBLAS
        launched = sum(e.count for e in prof.key_averages() if 'small_gemm_kernel' in e.key)
        assert launched == taken * cfg.depth * 10, f'{launched} small_gemm kernels, expected {taken * cfg.depth * 10}'
        rel = lambda a: ((a - truth).norm() / truth.norm()).item()
        assert rel(got) < 1.5 * rel(ref), f'small_gemm off fp32 by {rel(got):.2e}, cuBLAS by {rel(ref):.2e}'
        assert torch.equal(sampler(b, x0).float(), got), 'replays differ'

    def test_pdl_sampler_matches_and_every_kernel_waits_before_releasing_the_next(self):
        """GraphedSampler(pdl=True) (serve.py's default on compute capability 9+) at batch 1 and 3: replays of two
        different inputs in turn give the actions of pdl=False to 1e-4, and each input's replays the same bits every
        time (a kernel that read a buffer before its writer finished would see stale values: the other input's, or
        another kernel's of the same replay); and every Triton kernel inductor generated for it that lets the next one
        start early (gdc_launch_dependents) does so only after waiting for the one before it (gdc_wait). So when a
        kernel starts early, every kernel but the one just before it has finished; what it reads from that one it waits
        for first (inductor's dependency check, which the replays exercise). A kernel with neither (a fill that touches
        nothing of its predecessor's) starts only when that one ends. The order was read from torch 2.13's inductor;
        this test is what checks the torch that runs it. Both samplers compile in inductor's deterministic mode: it
        picks kernel block sizes without timing them, where a timed pick can change a reduction's summation order
        between two compiles (7.6e-4 apart on an H100, torch 2.11, 2026-12-06; 2.4e-7 in deterministic mode, so not the
        same bits, hence 1e-4); where PDL's waits go does not depend on block sizes. Guided (real-time chunking) graphs
        are not covered (GraphedSampler adds no PDL kernels of their own). Passed on an H200, torch 2.11.0+cu130,
        2026-12-06 (docs/runs/at/gpu_tests.txt)."""
        import serve
        import torch._dynamo
        from torch._inductor import config as inductor_config
        from torch._inductor.codecache import PyCodeCache
        if torch.cuda.get_device_capability()[0] < 9:
            pytest.skip('programmatic dependent launch needs compute capability 9 or more')
        m, b, _, _ = self.setup('sdpa', torch.bfloat16)
        M.perturb_weights(m, 0.02, torch.Generator(device='cuda').manual_seed(0))  # gates off zero: layers matter
        m.set_param_dtype(torch.bfloat16, inference=True).eval().requires_grad_(False)
        x0, x1 = torch.randn(2, 3, self.GCFG.action_horizon, self.GCFG.action_dim, device='cuda').unbind(0)
        flip = {k: v.flip(0) for k, v in b.items()}  # each sample in another slot: the prefix differs per slot too
        one = lambda lo: {k: v[lo:lo + 1] for k, v in b.items()}  # noqa: E731
        pairs = [[(b, x0), (flip, x1)], [(one(0), x0[:1]), (one(2), x1[:1])]]  # batch 3, batch 1
        files = lambda: {getattr(mod, '__file__', None) for mod in getattr(PyCodeCache, 'modules', [])}  # noqa: E731
        torch._dynamo.reset()
        plain = serve.GraphedSampler(m, pdl=False)
        with inductor_config.patch(deterministic=True):  # the first call of each shape compiles and captures
            want = [[plain(*x) for x in pair] for pair in pairs]
            before = files()
            torch._dynamo.reset()  # compile again, with PDL
            fast = serve.GraphedSampler(m, compile=False, fuse=False, pdl=True)  # the layers compiled above
            first = [[fast(*x) for x in pair] for pair in pairs]
        for pair, ws, firsts in zip(pairs, want, first):
            assert (ws[0] - ws[1]).abs().max() > 0.1, 'the two inputs give alike actions: stale reads would not show'
            for i in range(10):  # the two inputs in turn: a race would show in some replays, not in all
                for x, w, ref in zip(pair, ws, firsts):
                    got = fast(*x)
                    diff = (got - w).abs().max().item()
                    assert diff <= 1e-4, f'PDL changed the actions at replay {i}, batch {len(x[1])}: max diff {diff:.3e}'
                    assert torch.equal(got, ref), f'a PDL replay differs from the first, batch {len(x[1])}, replay {i}'
        waiting, bad = 0, []
        for f in files() - before - {None}:
            for chunk in open(f).read().split('async_compile.triton(')[1:]:
                src = chunk.split("'''")[1] if "'''" in chunk else chunk
                if '@triton.jit' not in src:
                    continue
                body = src[src.index('def ', src.index('@triton.jit')):]
                wait, launch = body.find('gdc_wait()'), body.find('gdc_launch_dependents()')
                waiting += wait >= 0 or launch >= 0
                if launch >= 0 and (wait < 0 or launch < wait):
                    bad.append(body.split('(')[0][4:])
        assert waiting, 'no kernel compiled with PDL: the switch did not reach inductor'
        assert not bad, f'{len(bad)} PDL kernels release the next one without waiting first: {bad[:5]}'

    def test_inference_dtype_keeps_the_actions_bit_identical_on_cuda(self):
        """set_param_dtype(bf16, inference=True), as serve.Policy loads a checkpoint on a GPU: the same actions, bit
        for bit, as the fp32 adaRMS Dense weights rounded at every use, eager and graphed with the compiled whole
        steps (serve.GraphedSampler's defaults)."""
        import copy
        import serve
        import torch._dynamo
        m, b, _, _ = self.setup('sdpa', torch.bfloat16)
        m.set_param_dtype(torch.bfloat16).eval().requires_grad_(False)
        fast = copy.deepcopy(m).set_param_dtype(torch.bfloat16, inference=True)
        x0 = torch.randn(3, self.GCFG.action_horizon, self.GCFG.action_dim, device='cuda')
        assert torch.equal(fast.sample_actions(b, noise=x0), m.sample_actions(b, noise=x0))
        torch._dynamo.reset()
        want = serve.GraphedSampler(m)(b, x0)
        assert torch.equal(serve.GraphedSampler(fast)(b, x0), want)

    def test_grouped_prefix_attention_compiles_at_pi05_heads(self):
        """sample_actions(prefix_attn='grouped') compiled by inductor at pi05's head layout in bf16 (the prefix
        pass's queries stacked over the one K/V head; bf16 GEMM logits without a gradient): the sdpa path's actions
        to bf16 rounding."""
        m, b, x0 = self.pi05_heads(whole_step=True)
        ref = m.sample_actions(b, noise=x0, denoise_attn='grouped').float()
        got = m.sample_actions(b, noise=x0, denoise_attn='grouped', prefix_attn='grouped').float()
        err = ((got - ref).norm() / ref.norm()).item()
        assert 0 < err < 2e-2, f'grouped vs sdpa prefix attention, compiled: relative error {err:.2e}'
        import serve  # served: the sampler's graph replays the grouped prefix attention, not the layers' sdpa
        kw = dict(compile=False, fuse=False, pdl=False)  # the same kernels replayed, bit for bit. On 2026-12-06 the
        # second of these, then built with PDL (the default on Hopper), gave other last bits; why is not known yet
        # (dynamo does not recompile for inductor's config alone), so pdl=False here and the default checked below
        assert torch.equal(serve.GraphedSampler(m, prefix_attn='grouped', **kw)(b, x0).float(), got)
        assert torch.equal(serve.GraphedSampler(m, **kw)(b, x0).float(), ref)
        served = serve.GraphedSampler(m, compile=False, fuse=False, prefix_attn='grouped')(b, x0).float()
        err = ((served - got).norm() / got.norm()).item()
        assert err < 1e-2, f'default (PDL) sampler vs the grouped prefix call: relative error {err:.2e}'

    @pytest.mark.parametrize('impl', ['flex', 'grouped', 'triton'])
    def test_denoising_attention_compiles_at_pi05_heads(self, impl):
        """sample_actions(denoise_attn=impl) compiled by inductor at pi05's head layout (8 query heads per K/V head,
        head dim 256, 50 actions) in bf16: the same actions as the sdpa path to bf16 rounding."""
        m, b, x0 = self.pi05_heads()
        ref = m.sample_actions(b, noise=x0).float()
        got = m.sample_actions(b, noise=x0, denoise_attn=impl).float()
        err = ((got - ref).norm() / ref.norm()).item()
        assert err < 2e-2, f'{impl} denoising attention vs sdpa, compiled: relative error {err:.2e}'

    def test_flex_matches_eager_grads_fp32(self):
        torch.backends.cuda.matmul.allow_tf32 = False
        m, b, n, t = self.setup('eager')
        ref = loss_and_grads(m, b, n, t)
        m.attn = 'flex'
        assert_same_function(ref, loss_and_grads(m, b, n, t), 'flex vs eager (GPU fp32)', rtol=1e-4)

    def test_inductor_layers_match_eager_bf16(self):
        m, b, n, t = self.setup('flex', torch.bfloat16)
        ref = loss_and_grads(m, b, n, t)
        M.apply_compile(m)
        l1, g1 = loss_and_grads(m, b, n, t)
        assert_close(l1, ref[0], 'inductor vs eager loss (bf16)', rtol=2e-2)

    def test_cuda_graphed_units_match_default_compile(self):
        """train.py's compile_mode='reduce-overhead' (every compiled unit replayed from CUDA graph trees) gives the
        default compile's losses and gradients over several steps while the weights change between them."""
        import torch._dynamo
        torch.backends.cuda.matmul.allow_tf32 = False
        runs = []
        for mode in (None, 'reduce-overhead'):
            torch._dynamo.reset()
            m, b, n, t = self.setup('sdpa')
            M.apply_compile(m, mode=mode)
            steps = []
            for _ in range(3):
                torch.compiler.cudagraph_mark_step_begin()
                loss, grads = loss_and_grads(m, b, n, t)
                steps.append((loss.clone(), {k: g.clone() for k, g in grads.items()}))
                with torch.no_grad():
                    for p in m.parameters():
                        if p.grad is not None:
                            p.sub_(0.05 * p.grad)
            runs.append(steps)
        for i, (ref, got) in enumerate(zip(*runs)):
            assert_same_function(ref, got, f'CUDA-graphed units vs default compile, step {i}', rtol=1e-4)

    def test_cuda_graphed_training_then_eager_evaluation(self):
        """train.py's order under compile_mode='reduce-overhead': a graphed training step, then evaluation with the
        layers run eagerly (set_stance force_eager), then another graphed step: the evaluation's loss equals the
        eager model's and the training goes on."""
        import torch._dynamo
        torch.backends.cuda.matmul.allow_tf32 = False
        torch._dynamo.reset()
        m, b, n, t = self.setup('sdpa')
        M.apply_compile(m, mode='reduce-overhead')
        for _ in range(2):
            torch.compiler.cudagraph_mark_step_begin()
            loss_and_grads(m, b, n, t)
            with torch.no_grad(), torch.compiler.set_stance('force_eager'):
                got = m(b, n, t)
                x = m.sample_actions(b, noise=n)
            ref = self.setup('sdpa')[0]
            ref.load_state_dict(m.state_dict())
            with torch.no_grad():
                assert_close(got, ref(b, n, t), 'eager evaluation of a graphed model', rtol=1e-4)
                assert_close(x, ref.sample_actions(b, noise=n), 'its sample_actions', rtol=1e-4)

    def test_training_step_has_no_host_sync(self):
        """No .item(), no Python branching on device values: the step runs under CUDA's sync debug mode 'error'."""
        m, b, n, t = self.setup('flex', torch.bfloat16)
        M.apply_compile(m)
        loss_and_grads(m, b, n, t)  # compile first: compilation itself may synchronise
        torch.cuda.set_sync_debug_mode('error')
        try:
            m(b).backward()  # noise and time drawn on the device
        finally:
            torch.cuda.set_sync_debug_mode('default')


    @pytest.mark.parametrize('options', [{}, dict(augment='shift', camera_dropout=0.3, flow_draws=2, max_skipped_steps=3,
                                                 micro=2)], ids=['defaults', 'other_options'])
    def test_whole_train_py_step_has_no_host_sync(self, options):
        """train.train_step as train.py runs it (flow draws, augmentation with a wrist camera, forward and backward of
        each micro-batch, the gradient clip, fused AdamW; train.py's defaults, then other options) under CUDA's sync
        debug mode 'error': the host never waits for the GPU, so it can queue the next step while this one runs. The
        second case's 'shift' augmentation indexes no camera list: the first guards augment_images' slice."""
        import torch._dynamo
        import train
        torch._dynamo.reset()
        m, b, _, _ = self.setup('sdpa', torch.bfloat16)
        conf = dict(train.default_config(), compile=True, **{k: v for k, v in options.items() if k != 'micro'})
        M.apply_compile(m)
        opt = train.make_optimizer(m, conf)
        b = dict(b, sample_id=torch.arange(len(b['actions']), device='cuda'))
        micro = [b] * options.get('micro', 1)
        gen = torch.Generator('cuda').manual_seed(0)
        step = lambda: train.train_step(m, m, opt, micro, conf, 1e-4, gen, [False, True, False])
        step()  # compile first: compilation itself may synchronise
        torch.cuda.set_sync_debug_mode('error')
        try:
            loss, gnorm = step()
        finally:
            torch.cuda.set_sync_debug_mode('default')
        assert torch.isfinite(loss) and torch.isfinite(gnorm)

def test_lora_scale_is_alpha_over_rank():
    """A LoRA layer adds (x A^T) B^T * alpha / rank, in the forward pass and in the merged weight (openpi's defaults
    have alpha = rank, which would hide a scale of alpha)."""
    torch.manual_seed(0)
    model = M.build('tiny', 'cpu', attn='eager', compute_dtype=torch.float32)
    M.apply_lora(model, ranks={'vlm': (4, 12.0), 'expert': (2, 3.0)}, base_dtype=torch.float32)
    lin = model.layers[0].vlm.get_submodule('mlp.up_proj')
    with torch.no_grad():
        lin.lora_B.normal_()
    x = torch.randn(3, lin.in_features)
    want = x @ lin.weight.T + (x @ lin.lora_A.T) @ lin.lora_B.T * 3.0
    assert torch.allclose(lin(x), want, atol=1e-5), (lin(x) - want).abs().max()
    assert torch.allclose(lin.merged_weight(), lin.weight + lin.lora_B @ lin.lora_A * 3.0, atol=1e-6)


def test_rtc_weights_follow_the_paper():
    """1 on the delayed actions, c (e^c - 1) / (e - 1) with c = (overlap - i) / (overlap - delay + 1) on the rest of
    the overlap, 0 after it (Black, Galliker, Levine 2025)."""
    w = M.rtc_weights(10, 7, 2)
    c = [(7 - i) / 6 for i in range(2, 7)]
    want = [1.0, 1.0] + [x * (math.exp(x) - 1) / (math.e - 1) for x in c] + [0.0] * 3
    assert torch.allclose(w, torch.tensor(want), atol=1e-6), (w, want)
    assert torch.equal(M.rtc_weights(5, 0, 0), torch.zeros(5)) and torch.equal(M.rtc_weights(4, 4, 4), torch.ones(4))
    with pytest.raises(ValueError, match='delay'):
        M.rtc_weights(10, 3, 5)


def test_per_dim_losses_average_to_the_loss():
    """forward(per_dim=True) is the same squared error, averaged per action dim: its mean is the loss, the mean of
    its first n entries the loss over the first n dims."""
    torch.manual_seed(0)
    model = M.build('tiny', 'cpu', attn='eager', compute_dtype=torch.float32)
    g = torch.Generator().manual_seed(1)
    batch = data.random_batch(model.cfg, 3, generator=g)
    noise, t = torch.randn(3, model.cfg.action_horizon, model.cfg.action_dim, generator=g), torch.rand(3, generator=g)
    per = model(batch, noise=noise, time=t, per_dim=True)
    assert per.shape == (model.cfg.action_dim,)
    for n in (0, 7):
        want = model(batch, noise=noise, time=t, loss_dims=n)
        got = per[:n].mean() if n else per.mean()
        assert torch.allclose(got, want, rtol=1e-6), (n, float(got), float(want))
