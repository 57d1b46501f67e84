"""
Tests of serve.py and eval.py on the CPU: a checkpoint of the tiny model serves on its own, the policy's
preprocessing is the training pipeline's, openpi's own client (the `openpi-client` package) talks to the server,
bad requests get an error string and the server goes on, the api key is enforced, concurrent clients get their own
replies, the simulator replays the dataset and the closed loop succeeds with an expert and fails at random.
Servers bind 127.0.0.1 on a free port and every test stops what it starts.

    python -m pytest -q test_serve.py
"""
import importlib.util
import os
import runpy
import shutil
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

import data
import sim
import eval as evaluation
import model as M
import serve

ROOT = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    """A 3-iteration tiny run on a synthetic dataset: (checkpoint directory, data directory)."""
    root = tmp_path_factory.mktemp('serve')
    sim.make_synthetic(str(root / 'data'), episodes=12, image_size=28, seed=0, max_token_len=24)
    argv = sys.argv
    sys.argv = ['train.py', '--model_name=tiny', f'--data_dir={root / "data"}', f'--out_dir={root / "out"}',
                '--device=cpu', '--attn=eager', '--compile=False', '--max_iters=3', '--micro_batch=4',
                '--eval_interval=0', '--ckpt_interval=0', '--learning_rate=1e-3', '--warmup_iters=1', '--ema=True']
    try:
        runpy.run_path(os.path.join(ROOT, 'train.py'), run_name='__main__')
    finally:
        sys.argv = argv
    return str(root / 'out' / 'ckpt_3'), str(root / 'data')


def frame_obs(data_dir, f):
    """The observation a robot would send for dataset frame f: HWC uint8 frames, the raw state, the task."""
    meta = data.check_prepared(data_dir)
    ims = [np.load(os.path.join(data_dir, f'images_{c}.npy'), mmap_mode='r') for c in range(2)]
    state = np.load(os.path.join(data_dir, 'state.npy'))
    task = meta['tasks'][np.load(os.path.join(data_dir, 'task_index.npy'))[f]]
    return {'observation/image': np.array(ims[0][f].transpose(1, 2, 0)),
            'observation/wrist_image': np.array(ims[1][f].transpose(1, 2, 0)),
            'observation/state': state[f], 'prompt': task}


@pytest.fixture
def server(trained):
    srv = serve.PolicyServer(serve.Policy(trained[0], noise_seed=0), '127.0.0.1', 0).start()
    yield srv
    srv.stop()


def test_policy_preprocessing_is_the_training_pipeline(trained):
    """Policy.prepare on a robot-style observation of dataset frames == the loader's batch of those frames, and
    the actions are sample_actions on that batch unnormalised to the dataset's units and dims."""
    ckpt, d = trained
    pol = serve.Policy(ckpt, noise_seed=0)
    ld = data.Loader(d, 'all', 3, 1, prefetch=0, horizon=pol.cfg.action_horizon, token_len=pol.cfg.max_token_len,
                     prompt_bucket=pol.info['prompt_bucket'])
    mb, frames = ld.get(0)[0], ld.indices(0)[:3]
    batch = pol.prepare([frame_obs(d, f) for f in frames])
    for k in ('images', 'image_mask', 'tokens', 'token_mask'):
        assert torch.equal(batch[k], mb[k]), f'{k}: policy {batch[k].shape} vs loader {mb[k].shape}'
    want = ld.unnormalize_actions(pol.model.sample_actions(mb, noise=pol.noise(batch)).numpy())
    got = np.stack([r['actions'] for r in pol.infer_batch([frame_obs(d, f) for f in frames])])
    assert got.shape == (3, pol.cfg.action_horizon, 7) and np.allclose(got, want, atol=1e-5), np.abs(got - want).max()


GOLDEN_NOISE = [0.8259396, 1.9563507, 1.0868452]  # serve.Policy.noise of the hand-made batch below, noise seed 0


def test_seeded_noise_follows_the_observation(trained):
    """With a noise seed, each observation gets its own noise, the same whatever else is in the batch and however
    often it is asked (so an evaluation repeats exactly), and other observations or seeds get other noise; without
    a seed every request draws anew."""
    ckpt, d = trained
    pol = serve.Policy(ckpt, noise_seed=0)
    frames = [0, 7, 3]
    together = pol.noise(pol.prepare([frame_obs(d, f) for f in frames]))
    alone = [pol.noise(pol.prepare([frame_obs(d, f)]))[0] for f in frames]
    assert together.shape == (3, pol.cfg.action_horizon, pol.cfg.action_dim)
    for j, f in enumerate(frames):
        assert torch.equal(together[j], alone[j]), f'frame {f}: its noise must not depend on its place in the batch'
    assert not torch.equal(alone[0], alone[1]) and not torch.equal(alone[1], alone[2]), 'one draw for every request'
    obs = frame_obs(d, 0)
    assert np.array_equal(pol.infer(obs)['actions'], pol.infer(obs)['actions'])
    other = dict(obs, prompt=obs['prompt'] + ' now')
    assert not torch.equal(pol.noise(pol.prepare([other]))[0], alone[0]), 'the prompt is part of the observation'
    assert not torch.equal(serve.Policy(ckpt, noise_seed=1).noise(pol.prepare([obs]))[0], alone[0])
    fresh = serve.Policy(ckpt)
    assert not torch.equal(fresh.noise(pol.prepare([obs])), fresh.noise(pol.prepare([obs])))
    a = pol.infer_batch([frame_obs(d, f) for f in frames])[1]['actions']
    assert np.allclose(a, pol.infer(frame_obs(d, 7))['actions'], atol=1e-5), 'a batched reply is the single reply'
    batch = pol.prepare([obs], to_device=False)
    padded = dict(batch, tokens=torch.cat([batch['tokens'], torch.zeros(1, 8, dtype=torch.long)], 1),
                  token_mask=torch.cat([batch['token_mask'], torch.zeros(1, 8, dtype=torch.bool)], 1))
    assert torch.equal(pol.noise(padded), pol.noise(batch)), 'padding (set by the other prompts) must not matter'
    pixel = obs['observation/wrist_image'].copy()
    pixel[0, 0, 0] ^= 1
    assert not torch.equal(pol.noise(pol.prepare([dict(obs, **{'observation/wrist_image': pixel})])), pol.noise(batch))
    fixed = dict(images=torch.zeros(1, 2, 3, 4, 4, dtype=torch.uint8), tokens=torch.tensor([[5, 6, 0]]),
                 token_mask=torch.tensor([[True, True, False]]))  # pinned: a new hash would change every seeded result
    assert np.allclose(pol.noise(fixed)[0, 0, :3].numpy(), GOLDEN_NOISE, atol=1e-6), pol.noise(fixed)[0, 0, :3]


def test_noise_scale_scales_the_draw(trained):
    """noise_scale multiplies the seeded draw (1 leaves it exactly as it was); at 0 sampling is deterministic, the
    same reply for any noise seed and sample_actions from zero noise; a bad scale is refused with its value."""
    ckpt, d = trained
    obs = frame_obs(d, 4)
    base = serve.Policy(ckpt, noise_seed=0)
    batch = base.prepare([obs])
    assert torch.equal(serve.Policy(ckpt, noise_seed=0, noise_scale=1).noise(batch), base.noise(batch))
    assert torch.equal(serve.Policy(ckpt, noise_seed=0, noise_scale=0.5).noise(batch), base.noise(batch) * 0.5)
    zero = [serve.Policy(ckpt, noise_seed=s, noise_scale=0) for s in (0, 1)]
    a, b = (p.infer(obs)['actions'] for p in zero)
    assert np.array_equal(a, b), 'with no noise the seed must not matter'
    assert not np.allclose(a, base.infer(obs)['actions'], atol=1e-4), 'scale 0 must change the reply'
    want = base.model.sample_actions(batch, noise=torch.zeros_like(base.noise(batch)))
    st = base.stats['actions']
    want = data.unnormalize(want.numpy(), st['q01'], st['q99'])[0, :, :base.info['action_dim']]
    assert np.allclose(a, want, atol=1e-5), np.abs(a - want).max()
    assert zero[0].metadata()['noise_scale'] == 0
    with pytest.raises(ValueError, match='noise_scale=-1'):
        serve.Policy(ckpt, noise_scale=-1)


def test_a_checkpoint_copied_alone_serves(trained, tmp_path):
    ckpt, d = trained
    alone = tmp_path / 'ckpt'
    shutil.copytree(ckpt, alone)
    assert {'policy.json', 'norm_stats.json', 'ema.safetensors'} <= set(os.listdir(alone))
    obs = frame_obs(d, 5)
    a, b = serve.Policy(str(alone), noise_seed=0).infer(obs), serve.Policy(ckpt, noise_seed=0).infer(obs)
    assert np.array_equal(a['actions'], b['actions'])
    assert serve.Policy(str(alone), weights='model').weights == 'model' and serve.Policy(str(alone)).weights == 'ema'


def test_openpi_client_gets_the_policys_replies(trained, server):
    websocket_client_policy = pytest.importorskip('openpi_client.websocket_client_policy')
    ckpt, d = trained
    client = websocket_client_policy.WebsocketClientPolicy('127.0.0.1', server.port)
    try:
        meta = client.get_server_metadata()
        assert meta['action_horizon'] == 5 and meta['action_dim'] == 7 and meta['cameras'] == ['image', 'wrist_image']
        local = serve.Policy(ckpt, noise_seed=0)
        for f in (0, 7):
            reply = client.infer(frame_obs(d, f))
            assert np.array_equal(reply['actions'], local.infer(frame_obs(d, f))['actions']), f'frame {f}'
            assert reply['actions'].dtype == np.float32 and reply['server_timing']['infer_ms'] > 0
        bad = frame_obs(d, 0)
        del bad['observation/wrist_image']
        with pytest.raises(RuntimeError, match="bad request: missing key 'observation/wrist_image'"):
            client.infer(bad)
        with pytest.raises(RuntimeError, match=r"observation/image: expected an image \(H, W, 3\), got shape \(28, 28\)"):
            client.infer(dict(frame_obs(d, 0), **{'observation/image': np.zeros((28, 28), np.uint8)}))
        with pytest.raises(RuntimeError, match='expected 3 state values, got 2'):
            client.infer(dict(frame_obs(d, 0), **{'observation/state': np.zeros(2, np.float32)}))
        assert np.array_equal(client.infer(frame_obs(d, 7))['actions'], local.infer(frame_obs(d, 7))['actions']), \
            'the server must go on serving after bad requests'
    finally:
        client._ws.close()


def test_api_key_is_enforced(trained):
    websocket_client_policy = pytest.importorskip('openpi_client.websocket_client_policy')
    from websockets.exceptions import InvalidStatus
    srv = serve.PolicyServer(serve.Policy(trained[0]), '127.0.0.1', 0, api_key='s3cret').start()
    try:
        for key in (None, 'wrong'):
            with pytest.raises(InvalidStatus, match='401'):
                websocket_client_policy.WebsocketClientPolicy('127.0.0.1', srv.port, api_key=key)
        ok = websocket_client_policy.WebsocketClientPolicy('127.0.0.1', srv.port, api_key='s3cret')
        assert ok.infer(frame_obs(trained[1], 1))['actions'].shape == (5, 7)
        ok._ws.close()
    finally:
        srv.stop()


def test_concurrent_clients_get_their_own_replies(trained, server):
    ckpt, d = trained
    local = serve.Policy(ckpt, noise_seed=0)
    frames = {0: [0, 3, 6, 9], 1: [1, 4, 7, 10], 2: [2, 5, 8, 11]}
    want = {f: local.infer(frame_obs(d, f))['actions'] for fs in frames.values() for f in fs}
    got, errors = {}, []

    def run(fs):
        try:
            client = serve.Client('127.0.0.1', server.port)
            for f in fs:
                got[f] = client.infer(frame_obs(d, f))['actions']
            client.close()
        except Exception as err:  # surfaced below
            errors.append(err)
    threads = [threading.Thread(target=run, args=(fs,)) for fs in frames.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and sorted(got) == sorted(want), (errors, sorted(got))
    mixed = [f for f in want if not np.array_equal(got[f], want[f])]
    assert not mixed, f'replies of frames {mixed} are not their own'


def test_simulator_replays_a_dataset_episode(trained):
    """Scene (eval.py's simulator) stepped with a dataset episode's actions reproduces its frames and states."""
    import json
    d = trained[1]
    info = json.load(open(os.path.join(d, 'synthetic.json')))['episodes']
    starts = np.load(os.path.join(d, 'episode_starts.npy'))
    ims = [np.load(os.path.join(d, f'images_{c}.npy')) for c in range(2)]
    state, actions = np.load(os.path.join(d, 'state.npy')), np.load(os.path.join(d, 'actions.npy'))
    for e in (0, 5):
        ep = info[e]
        scene = sim.Scene(ep['objects'], ep['target'], ep['grip'])
        for i in range(starts[e], starts[e + 1]):
            views = scene.images(28)
            assert np.array_equal(views[0], ims[0][i]) and np.array_equal(views[1], ims[1][i]), f'episode {e} frame {i}'
            assert np.array_equal(scene.state(), state[i]), (scene.state(), state[i])
            scene.step(actions[i])
        assert scene.success(), f'the expert episode {e} must end in success'


def test_closed_loop_expert_succeeds_and_random_actions_fail():
    keys = {'image': 'observation/image', 'wrist_image': 'observation/wrist_image', 'state': 'observation/state',
            'prompt': 'prompt'}
    successes = []
    for e in range(10):
        scene = sim.Scene.random(np.random.default_rng([1000, e]))

        def expert(obs, scene=scene):  # privileged: plans a chunk on a copy of the scene as it is now
            copy = sim.Scene(scene.objects, scene.target, scene.grip)
            copy.closed, chunk = scene.closed, []
            for _ in range(10):
                chunk.append(copy.expert_action())
                copy.step(chunk[-1])
            return {'actions': np.array(chunk)}
        ok, steps, dist, frames, path = evaluation.synthetic_episode(expert, scene, keys, 32, 5, 60)
        successes.append(ok)
        assert len(frames) == steps + 1 and len(path) == steps + 1
    assert all(successes), successes
    rng = np.random.default_rng(0)
    random_rows = evaluation.run_synthetic(lambda obs: {'actions': rng.uniform(-1, 1, (10, 7))}, keys, 20, size=32,
                                           progress=False)
    assert np.mean([r['success'] for r in random_rows]) <= 0.2, [r['success'] for r in random_rows]


def test_eval_script_end_to_end_writes_csv_and_plot_and_repeats_exactly(trained, tmp_path):
    """eval.py serving a checkpoint: the CSV and the strip, and a second run gives the same episodes (the local policy
    samples with a fixed noise seed by default)."""
    pytest.importorskip('matplotlib')
    argv = sys.argv
    try:
        for run in ('a', 'b'):
            sys.argv = ['eval.py', f'--ckpt={trained[0]}', '--episodes=3', '--max_steps=8', '--image_size=28',
                        f'--out_dir={tmp_path / run}', '--device=cpu', '--strip=2']
            runpy.run_path(os.path.join(ROOT, 'eval.py'), run_name='__main__')
    finally:
        sys.argv = argv
    rows = (tmp_path / 'a' / 'episodes.csv').read_text().splitlines()
    assert rows[0] == 'episode,task,success,steps,distance,seam_jump,inner_jump' and len(rows) == 4, rows
    assert (tmp_path / 'a' / 'episodes.png').stat().st_size > 1000
    assert (tmp_path / 'b' / 'episodes.csv').read_text().splitlines() == rows, 'evaluation must repeat exactly'


def test_bad_eval_arguments_are_one_line_errors_before_any_policy_is_loaded(trained):
    has_libero = importlib.util.find_spec('libero') is not None
    argv = sys.argv
    try:
        ckpt = f'--ckpt={trained[0]}'
        for args, want in (([ckpt, '--episodes=0'], 'episodes=0: expected an int >= 1'),
                           ([ckpt, '--max_steps=-1'], "max_steps=-1: expected an int >= 0 (0: the env's default)"),
                           ([ckpt, '--image_size=-5'], 'image_size=-5: expected an int >= 0'),
                           ([ckpt, '--objects=7'], 'objects=7: expected 1, 2 or 3'),
                           *(([f'--server=127.0.0.1:1', option], 'with --server= the running serve.py decides')
                             for option in (ckpt, '--noise_scale=0', '--noise_seed=3', '--weights=ema', '--device=cpu')),
                           ([ckpt, '--device=tpu'], "device='tpu': expected 'auto', 'cpu', 'cuda' or 'cuda:<index>'"),
                           *([([ckpt, '--env=libero'], "env='libero' needs LIBERO")] if not has_libero else [])):
            sys.argv = ['eval.py', *args]
            with pytest.raises(SystemExit) as e:
                runpy.run_path(os.path.join(ROOT, 'eval.py'), run_name='__main__')
            assert str(e.value).startswith('eval.py: ') and want in str(e.value), (args, str(e.value))
    finally:
        sys.argv = argv


def test_graphed_sampler_refuses_an_unknown_denoising_attention_when_built():
    """A wrong denoise_attn (the retired 'auto', say) or prefix_attn is refused when the sampler is built, naming the
    allowed values, not at the first request's graph capture."""
    model = M.Pi05(M.configs['tiny'])
    with pytest.raises(ValueError, match="denoise_attn='auto': use one of None, 'sdpa'"):
        serve.GraphedSampler(model, compile=False, fuse=False, denoise_attn='auto')
    assert serve.GraphedSampler(model, compile=False, fuse=False).denoise_attn == 'grouped'
    with pytest.raises(ValueError, match="prefix_attn='triton': use one of None"):
        serve.GraphedSampler(model, compile=False, fuse=False, prefix_attn='triton')


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs CUDA')
class TestGPU:
    def test_cuda_graph_replay_matches_direct_calls(self, trained):
        pol = serve.Policy(trained[0], 'cuda', noise_seed=0)
        torch.manual_seed(0)  # 3 iterations leave the adaRMS gates near their zero init, and in bf16 the attention
        M.perturb_weights(pol.model, 0.1)  # then changes no action (grouped vs sdpa: 0.0): perturbed, paths can differ
        batch = pol.prepare([frame_obs(trained[1], f) for f in (0, 1)])
        noise = torch.randn(2, pol.cfg.action_horizon, 32, device='cuda')
        ref = pol.model.sample_actions(batch, noise=noise, denoise_attn='grouped')  # the sampler's default
        sdpa = pol.model.sample_actions(batch, noise=noise)
        err = ((ref - sdpa).norm() / sdpa.norm()).item()  # > 0: the equalities below can tell the two apart
        assert 0 < err < 2e-2, f'grouped vs sdpa denoising attention: relative error {err:.2e}'
        plain = serve.GraphedSampler(pol.model, compile=False, fuse=False)
        assert torch.equal(plain(batch, noise), ref), 'replaying the eager kernels must give identical actions'
        one = {k: v[:1] for k, v in batch.items()}  # batch 1 too: a graph of its own
        want = pol.model.sample_actions(one, noise=noise[:1], denoise_attn='grouped')
        assert torch.equal(plain(one, noise[:1]), want), 'batch 1 must replay the grouped denoising attention'
        sdpa_plain = serve.GraphedSampler(pol.model, compile=False, fuse=False, denoise_attn=None)
        assert torch.equal(sdpa_plain(batch, noise), sdpa), 'denoise_attn=None must replay the layers own attention'
        fast = serve.GraphedSampler(pol.model, fuse=False)  # compiled (each plain step one graph): bf16 rounding differs
        assert 'denoise' in vars(pol.model), 'whole_step=True must compile Pi05.denoise as one graph'
        got = fast(batch, noise)
        err = ((got - ref).norm() / ref.norm()).item()
        assert err < 2e-2, f'compiled + graph vs eager: relative error {err:.2e}'
        other = torch.randn_like(noise)
        assert not torch.equal(fast(batch, other), got), 'the graph must read its inputs anew on every call'
        H = pol.cfg.action_horizon  # real-time chunking captured with its autograd pass: as the direct guided call
        guide = torch.randn_like(noise)
        weights = M.rtc_weights(H, H // 2, 2).cuda()[None, :, None].expand_as(noise).contiguous()
        direct = pol.model.sample_actions(batch, noise=noise, guide=guide, guide_weights=weights, denoise_attn='grouped')
        replay = fast(batch, noise, (guide, weights, 5.0))
        err = ((replay - direct).norm() / direct.norm()).item()
        assert err < 1e-2 and not torch.equal(replay, got), f'guided graph vs direct guided call: {err:.2e}'
        assert not torch.equal(fast(batch, noise, (-guide, weights, 5.0)), replay), 'the guide is an input'
        assert not torch.equal(fast(batch, noise, (guide, weights / 2, 5.0)), replay), 'so are the weights'
        assert not torch.equal(fast(batch, noise, (guide, weights, 1.0)), replay), 'and the guidance clip'
        assert torch.equal(fast(batch, noise, (guide, weights, 5.0)), replay) and len(fast.graphs) == 2
        fused = serve.GraphedSampler(pol.model, compile=False, fuse=True)  # q/k/v and gate/up as one GEMM each
        err = ((fused(batch, noise) - ref).norm() / ref.norm()).item()
        assert err < 2e-2, f'fused projections + graph vs eager: relative error {err:.2e}'

    def test_cuda_replies_are_the_cpu_replies(self, trained):
        """A noise seed means the same noise on every device: the CUDA policy (bf16 weights, graphed) answers as the
        CPU policy does to bf16 rounding. (Noise drawn by CUDA's own generator once made every CUDA-served reach-v3
        episode fail where the CPU-served ones succeeded.)"""
        obs = [frame_obs(trained[1], f) for f in (0, 5)]
        cpu = serve.Policy(trained[0], noise_seed=0)
        for fast in (False, True):
            cuda = serve.Policy(trained[0], 'cuda', fast=fast, noise_seed=0)
            for o in obs:
                want, got = cpu.infer(o)['actions'], cuda.infer(o)['actions']
                err = np.linalg.norm(got - want) / np.linalg.norm(want)
                assert err < 5e-2, f'fast={fast}: CUDA reply vs CPU reply, relative error {err:.2e}'

    def test_max_autotune_sampler_matches_eager(self, trained):
        """GraphedSampler(compile_mode='max-autotune-no-cudagraphs'), bench.py's --infer_autotune row: autotuned
        GEMMs replayed from the graph give the eager actions to bf16 rounding, and read their inputs anew."""
        pol = serve.Policy(trained[0], 'cuda', noise_seed=0)
        batch = pol.prepare([frame_obs(trained[1], 0)])
        noise = torch.randn(1, pol.cfg.action_horizon, 32, device='cuda')
        ref = pol.model.sample_actions(batch, noise=noise)
        tuned = serve.GraphedSampler(pol.model, compile_mode='max-autotune-no-cudagraphs', denoise_attn=None,
                                     whole_step=False)
        got = tuned(batch, noise)
        err = ((got - ref).norm() / ref.norm()).item()
        assert err < 2e-2, f'max-autotune + graph vs eager: relative error {err:.2e}'
        assert torch.equal(tuned(batch, noise), got) and not torch.equal(tuned(batch, -noise), got)

    def test_policy_serves_real_time_chunking_from_its_graph(self, trained):
        """serve.Policy(fast=True) answers a request with prev_chunk from the guided CUDA graph: the same actions as
        the eager policy's guided call to bf16 rounding, and not the plain reply."""
        obs = frame_obs(trained[1], 0)
        eager = serve.Policy(trained[0], 'cuda', noise_seed=0)
        fast = serve.Policy(trained[0], 'cuda', fast=True, noise_seed=0)
        plain = fast.infer(obs)['actions']
        prev = plain[:4] + 0.05
        req = dict(obs, prev_chunk=prev, delay=2)
        want, got = eager.infer(req)['actions'], fast.infer(req)['actions']
        err = np.linalg.norm(got - want) / np.linalg.norm(want)
        assert err < 2e-2, f'graphed guided reply vs eager guided reply: relative error {err:.2e}'
        assert not np.allclose(got, plain), 'the guidance must change the reply'
        assert len(fast.sampler.graphs) == 2, 'one plain and one guided graph'


def test_float_and_chw_frames_are_read_like_uint8_hwc(trained):
    """openpi's clients may send float frames in [0, 1] and LeRobot's CHW layout: both must reach the model exactly as
    the uint8 HWC frame they stand for (x255, transposed the right way)."""
    policy = serve.Policy(trained[0], 'cpu')
    rng = np.random.default_rng(0)
    hwc = rng.integers(0, 256, (28, 20, 3), dtype=np.uint8)  # not square: a wrong transpose changes the shape
    ref = policy._image({'observation/image': hwc}, 'image')
    for name, frame in (('float [0, 1]', hwc.astype(np.float32) / 255), ('CHW', hwc.transpose(2, 0, 1)),
                        ('float CHW', hwc.transpose(2, 0, 1).astype(np.float64) / 255)):
        got = policy._image({'observation/image': frame}, 'image')
        assert np.array_equal(got, ref), f'{name}: max diff {np.abs(got.astype(int) - ref).max()}'


def test_episodes_execute_each_chunk_from_its_first_action_and_differ():
    """eval.py runs a chunk's actions in order from the first, replanning after `replan` of them, and every episode
    is a scene of its own."""
    keys = {'image': 'i', 'wrist_image': 'w', 'state': 's', 'prompt': 'p'}
    scene = sim.Scene([('red', 'square', 0.9, 0.9)], 0, [0.5, 0.5])
    chunk = np.zeros((10, 7), np.float32)
    chunk[0, 0] = 0.1   # +0.01 in x, then +0.01 in y, then nothing
    chunk[1, 1] = 0.1
    calls = []
    infer = lambda obs: calls.append(obs['s'].copy()) or {'actions': chunk}
    evaluation.synthetic_episode(infer, scene, keys, 16, 5, 2)
    np.testing.assert_allclose(scene.grip, [0.51, 0.51], atol=1e-9)
    assert len(calls) == 1
    rows = evaluation.run_synthetic(lambda obs: {'actions': np.zeros((10, 7))}, keys, 4, max_steps=1, size=16,
                                    progress=False)
    starts = {tuple(np.round(r['path'][0], 6)) for r in rows}
    assert len(starts) == 4 and len({r['task'] for r in rows}) > 1, 'every episode must be a new scene'


def test_success_needs_the_gripper_closed_on_the_named_object():
    scene = sim.Scene([('red', 'square', 0.5, 0.5), ('blue', 'circle', 0.2, 0.2)], 0, [0.5, 0.5])
    assert not scene.success(), 'at the object but open: not done'
    scene.step(np.array([0, 0, 0, 0, 0, 0, 1.0]))
    assert scene.success()
    other = sim.Scene([('red', 'square', 0.5, 0.5), ('blue', 'circle', 0.2, 0.2)], 0, [0.2, 0.2])
    other.step(np.array([0, 0, 0, 0, 0, 0, 1.0]))
    assert other.closed and not other.success(), 'closing on the other object is a failure'


def test_bad_requests_get_one_line_answers_and_the_server_goes_on(trained, server):
    """What a careless client sends, through openpi's own client: each gets a short 'bad request: ...' naming the key
    and the problem (no traceback, no echo of the request at length), and the next good request is answered."""
    websocket_client_policy = pytest.importorskip('openpi_client.websocket_client_policy')
    ckpt, d = trained
    good = frame_obs(d, 3)
    client = websocket_client_policy.WebsocketClientPolicy('127.0.0.1', server.port)
    want = serve.Policy(ckpt, noise_seed=0).infer(good)['actions']
    cases = [
        (dict(good, **{'observation/state': 'abc'}), "observation/state: expected 3 numbers, got 'abc'"),
        (dict(good, **{'observation/state': np.array([np.nan, 0, 0], np.float32)}), 'state values must be finite'),
        (dict(good, **{'observation/state': np.array([np.inf, 0, 0])}), 'state values must be finite'),
        (dict(good, **{'observation/state': np.array([1e30, 0, 0])}), 'state values must be finite and of sensible size'),
        (dict(good, **{'observation/image': np.full((28, 28, 3), np.nan, np.float32)}), 'the image has non-finite values'),
        (dict(good, **{'observation/image': np.full((28, 28, 3), 255.0)}),
         'a float image must be in [0, 1], got values in [255, 255]: send uint8'),
        (dict(good, **{'observation/image': np.zeros((1, 5000, 3), np.uint8)}), 'image 1x5000 is far below'),
        (dict(good, **{'observation/image': np.zeros((1, 1, 3), np.uint8)}), 'send frames of at least 8 px a side'),
        (dict(good, prompt=12345), 'prompt: expected the task instruction as a string, got int 12345'),
        ({f'k{i}': i for i in range(100_000)}, "missing key 'observation/image'"),
    ]
    try:
        for obs, msg in cases:
            with pytest.raises(RuntimeError) as e:
                client.infer(obs)
            text = str(e.value)
            assert 'bad request: ' in text and msg in text, (msg, text[:300])
            assert 'Traceback' not in text and len(text) < 600, text[:300]
        raw = client._ws  # bytes that are not msgpack, and an array in a broken encoding
        for payload, msg in ((b'\xc1\xc1garbage', 'not a msgpack message'),
                             (serve.packb({'x': {b'__ndarray__': True, b'data': b'123', b'dtype': '<f4', b'shape': [7]}}),
                              "not in openpi_client's encoding")):
            raw.send(payload)
            text = raw.recv()
            assert isinstance(text, str) and text.startswith('bad request: ') and msg in text, text[:300]
        assert np.array_equal(client.infer(good)['actions'], want), 'the server must go on serving'
    finally:
        client._ws.close()


def test_a_prompt_too_long_for_the_model_is_cut_as_training_cuts_it_with_one_warning(trained, capsys):
    policy = serve.Policy(trained[0], noise_seed=0)
    obs = frame_obs(trained[1], 3)
    long = dict(obs, prompt=obs['prompt'] + ' then' * 40)
    ids, _ = policy._tokens(long)
    assert len(ids) == policy.cfg.max_token_len == 24
    policy.infer(long)
    policy.infer(long)
    err = capsys.readouterr().err
    assert err.count("with the state is cut to the model's 24 slots") == 1, err


def test_server_errors_keep_the_traceback_in_the_server_log(trained, capsys):
    """An unexpected failure answers 'server error: <type>: <message>' and prints the traceback where the server runs."""
    websocket_client_policy = pytest.importorskip('openpi_client.websocket_client_policy')
    policy = serve.Policy(trained[0], noise_seed=0)
    policy.infer_batch = lambda observations: 1 / 0
    srv = serve.PolicyServer(policy, '127.0.0.1', 0).start()
    client = websocket_client_policy.WebsocketClientPolicy('127.0.0.1', srv.port)
    try:
        with pytest.raises(RuntimeError) as e:
            client.infer(frame_obs(trained[1], 0))
        assert 'server error: ZeroDivisionError: division by zero' in str(e.value) and 'Traceback' not in str(e.value)
    finally:
        client._ws.close()
        srv.stop()
    assert 'Traceback' in capsys.readouterr().err


def test_metadata_says_what_the_policy_expects(trained, server):
    websocket_client_policy = pytest.importorskip('openpi_client.websocket_client_policy')
    client = websocket_client_policy.WebsocketClientPolicy('127.0.0.1', server.port)
    try:
        meta = client.get_server_metadata()
    finally:
        client._ws.close()
    assert (meta['state_dim'], meta['action_dim'], meta['image_size']) == (3, 7, 28), meta
    assert meta['observation_keys'] == {'image': 'observation/image', 'wrist_image': 'observation/wrist_image',
                                        'state': 'observation/state', 'prompt': 'prompt'}, meta


def test_real_time_chunking_follows_the_previous_chunk_and_is_plain_sampling_without_it(trained, server):
    """A request with the previous chunk's overlapping actions (and the delay) gets a chunk whose first `delay`
    actions come close to them; with guidance 0, or no previous chunk, the reply is plain sampling exactly. Through
    openpi's own client, whose protocol is unchanged (the keys are optional)."""
    websocket_client_policy = pytest.importorskip('openpi_client.websocket_client_policy')
    ckpt, d = trained
    obs = frame_obs(d, 4)
    client = websocket_client_policy.WebsocketClientPolicy('127.0.0.1', server.port)
    try:
        plain = client.infer(obs)['actions']
        H = plain.shape[0]
        prev = plain + np.linspace(0.4, -0.4, 7, dtype=np.float32)  # an earlier chunk that disagrees with this one
        delay = 2
        guided = client.infer(dict(obs, prev_chunk=prev[:4], delay=delay))['actions']
        off = client.infer(dict(obs, prev_chunk=prev[:4], delay=delay, guidance=0.0))['actions']
        empty = client.infer(dict(obs, prev_chunk=np.zeros((0, 7), np.float32), delay=0))['actions']
        with pytest.raises(RuntimeError, match=r'bad request: prev_chunk: .* 0 <= delay <= that, got delay 9'):
            client.infer(dict(obs, prev_chunk=prev[:4], delay=9))
        for beta in (float('nan'), -1.0, float('inf')):
            with pytest.raises(RuntimeError, match='bad request: guidance: expected a finite number >= 0'):
                client.infer(dict(obs, prev_chunk=prev[:4], delay=delay, guidance=beta))
        with pytest.raises(RuntimeError, match=r'bad request: prev_chunk: expected \(k, 7\) actions .* shape \(7, 4\)'):
            client.infer(dict(obs, prev_chunk=prev[:4].T.copy(), delay=delay))
    finally:
        client._ws.close()
    assert np.array_equal(off, plain) and np.array_equal(empty, plain), 'no guidance must be plain sampling, exactly'
    st = data.load_stats(d)['actions']
    dims = np.flatnonzero(st['q99'] - st['q01'] > 1e-4)  # the dims the data moves (not the constant 2-5)
    before = np.abs(plain[:delay] - prev[:delay])[:, dims].mean()
    after = np.abs(guided[:delay] - prev[:delay])[:, dims].mean()
    assert after < 0.25 * before, f'the first {delay} actions: |plain - prev| {before:.4f}, |guided - prev| {after:.4f}'
    assert guided.shape == (H, 7) and np.isfinite(guided).all()


def test_simulated_delay_runs_the_old_chunk_then_the_new_one_from_index_delay():
    """With delay d, the request made after `replan` actions is answered d steps later; meanwhile the old chunk goes
    on, then the new chunk runs from its action d. With rtc the request carries old[replan:] and the delay."""
    keys = {'image': 'i', 'wrist_image': 'w', 'state': 's', 'prompt': 'p'}
    sent = []

    def infer(obs):  # chunk n: action j = (n, j) in the first two dims, nowhere near closing the gripper
        sent.append(obs)
        n = len(sent)
        return {'actions': np.array([[n, j, 0, 0, 0, 0, -1] for j in range(10)], np.float32) * [1e-3, 1e-3, 1, 1, 1, 1, 1]}
    log = []
    evaluation.synthetic_episode(infer, sim.Scene([('red', 'square', 0.9, 0.9)], 0, [0.5, 0.5]), keys, 16, 5, 16,
                                 delay=3, rtc=True, log=log)
    got = [(round(a[0] * 1000), round(a[1] * 1000), first) for a, first in log]
    want = ([(1, j, j == 0) for j in range(8)] + [(2, j, j == 3) for j in range(3, 8)] + [(3, 3, True), (3, 4, False),
                                                                                          (3, 5, False)])
    assert got == want, got
    assert sent[1]['delay'] == 3 and len(sent[1]['prev_chunk']) == 5 and 'prev_chunk' not in sent[0]
    assert np.allclose(sent[1]['prev_chunk'][:, 1], np.arange(5, 10) * 1e-3), 'prev_chunk = the old chunk from index 5'
    scene = lambda: sim.Scene([('red', 'square', 0.9, 0.9)], 0, [0.5, 0.5])
    for d in (5, 6):  # a delay as long as the replanning period, or past the horizon, is refused
        with pytest.raises(ValueError, match=f'delay {d}: needs 0 <= delay < replan'):
            evaluation.synthetic_episode(infer, scene(), keys, 16, 5, 16, delay=d)
    log = []  # a replanning period longer than the chunk is cut to it
    evaluation.synthetic_episode(infer, scene(), keys, 16, 50, 25, log=log)
    assert [first for _, first in log] == [j % 10 == 0 for j in range(25)]


def test_bad_serving_options_are_one_line_errors(trained, tmp_path):
    """--weights that is not a choice, or 'ema' where the run kept none; --keys that are not name=key pairs; a port
    another process holds: each a one-line error naming the option, never a traceback."""
    with pytest.raises(ValueError, match="weights='emma': expected 'auto', 'ema', 'model' or 'init'"):
        serve.Policy(trained[0], weights='emma')
    no_ema = tmp_path / 'no_ema'
    shutil.copytree(trained[0], no_ema)
    os.remove(no_ema / 'ema.safetensors')
    with pytest.raises(ValueError, match="weights='ema': .* has no ema.safetensors"):
        serve.Policy(str(no_ema), weights='ema')
    assert serve.Policy(str(no_ema)).weights == 'model', "'auto' falls back to the trained weights"
    with pytest.raises(ValueError, match="keys: this checkpoint reads no 'imag'; its names are image, wrist_image, "):
        serve.Policy(trained[0], keys={'imag': 'agentview'})

    def run(*args):
        proc = subprocess.run([sys.executable, os.path.join(ROOT, 'serve.py'), f'--ckpt={trained[0]}', '--device=cpu',
                               *args], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert proc.returncode != 0 and 'Traceback' not in proc.stderr, proc.stderr[-2000:]
        return proc.stderr.strip().splitlines()[-1]
    assert run('--keys=image').startswith("serve.py: keys='image': expected name=observation_key pairs")
    assert run('--device=tpu') == "serve.py: device='tpu': expected 'auto', 'cpu', 'cuda' or 'cuda:<index>'"
    assert run('--port=99999') == 'serve.py: port=99999: expected 0..65535 (0: any free port)'
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert run(f'--port={port}').startswith(f'serve.py: cannot listen on 127.0.0.1:{port}')
