"""
Tests for sim.py: Meta-World's scripted experts written as a LeRobot dataset, prepared by prepare.py and replayed
through eval.py's client loop; the synthetic scene's object-count variants. CPU only (Meta-World renders with
OSMesa here: apt-get install libosmesa6).

    python -m pytest -q test_sim.py
"""
import itertools
import json
import os
import threading

import numpy as np
import pytest

import data
import prepare
import sim


class Replay:
    """A stand-in policy for serve.PolicyServer: for each task (known by its prompt) it serves the recorded actions
    of the prepared dataset's episodes in order, and keeps every observation it was sent."""

    def __init__(self, prepared, horizon=10):
        self.meta = meta = data.check_prepared(prepared)
        self.actions = np.load(os.path.join(prepared, 'actions.npy'))
        starts = np.load(os.path.join(prepared, 'episode_starts.npy'))
        task = np.load(os.path.join(prepared, 'task_index.npy'))
        self.episodes = {}  # prompt -> [(start, end)] in episode order
        for e in range(len(starts) - 1):
            self.episodes.setdefault(meta['tasks'][task[starts[e]]], []).append((int(starts[e]), int(starts[e + 1])))
        self.pos = {p: (0, 0) for p in self.episodes}  # prompt -> (episode, step)
        self.horizon, self.seen, self.lock = horizon, [], threading.Lock()

    def metadata(self):
        keys = {c: f'observation/{c}' for c in self.meta['cameras']}
        return dict(observation_keys=dict(keys, state='observation/state', prompt='prompt'), action_horizon=self.horizon,
                    image_size=self.meta['image_size'])

    def infer(self, obs):
        with self.lock:
            prompt = obs['prompt']
            e, t = self.pos[prompt]
            start, end = self.episodes[prompt][e]
            self.seen.append((start + t, obs))
            idx = np.minimum(np.arange(start + t, start + t + self.horizon), end - 1)
            t += 5  # eval.py's replan
            self.pos[prompt] = (e + 1, 0) if start + t >= end else (e, t)
            return {'actions': self.actions[idx]}


def test_metaworld_demos_prepare_and_replay_through_eval(tmp_path):
    """Expert episodes of two tasks -> LeRobot v3.0 -> prepare.py -> the recorded actions served back through eval.py's
    client loop from the same seeds: every episode succeeds, and every frame and state the policy is sent equals
    the prepared one exactly (PNG frames, rendered at the model's size)."""
    os.environ.setdefault('MUJOCO_GL', 'osmesa')
    pytest.importorskip('metaworld')
    import eval as ev
    import serve
    tasks, size = ['reach-v3', 'drawer-close-v3'], 32
    src, prepared = str(tmp_path / 'lerobot'), str(tmp_path / 'prepared')
    info = sim.write_metaworld(src, tasks, episodes=2, size=size, workers=1)
    assert info['total_episodes'] == 4 and info['codebase_version'] == 'v3.0'
    import pyarrow.parquet as pq
    episodes = pq.read_table(os.path.join(src, 'meta', 'episodes', 'chunk-000', 'file-000.parquet')).to_pylist()
    assert [e['seed'] for e in episodes] == [0, 1, 0, 1], 'the replay below assumes no expert failure'
    meta = prepare.prepare(src, prepared, 'words', image_size=size, max_token_len=48, workers=1)
    assert meta['cameras'] == ['image', 'wrist_image'] and meta['wrist'] == [False, True]
    assert (meta['state_dim'], meta['action_dim']) == (4, 4) and meta['tokenizer'] == 'words'
    assert sorted(meta['tasks']) == sorted(sim.INSTRUCTIONS[t] for t in tasks)

    policy = Replay(prepared)
    server = serve.PolicyServer(policy, '127.0.0.1', 0).start()
    try:
        rows = ev.run_metaworld(('127.0.0.1', server.port), tasks, trials=2, size=size, workers=2, seed=sim.DEMO_SEED,
                                progress=False)
    finally:
        server.stop()
    assert [r['success'] for r in rows] == [1, 1, 1, 1], rows
    assert all(0 <= r['closest'] <= r['distance'] < 0.3 for r in rows), [(r['closest'], r['distance']) for r in rows]
    assert all(r['distance'] <= 0.05 for r in rows if r['task'] == 'reach-v3'), 'reach succeeds within 5 cm of its goal'
    images = [np.load(os.path.join(prepared, f'images_{c}.npy')) for c in range(2)]
    state = np.load(os.path.join(prepared, 'state.npy'))
    assert len(policy.seen) >= 8
    for frame, obs in policy.seen:
        for c, cam in enumerate(meta['cameras']):
            got = np.asarray(obs[f'observation/{cam}']).transpose(2, 0, 1)
            assert np.array_equal(got, images[c][frame]), f'frame {frame} camera {cam}: max diff ' \
                f'{np.abs(got.astype(int) - images[c][frame]).max()}'
        np.testing.assert_array_equal(obs['observation/state'], state[frame])
    lines = ev.task_table(rows)
    assert lines[-1].startswith('| **average (2 tasks)** | | **100.0%**'), lines

    # real-time chunking (eval.py --rtc): every request after an episode's first carries the actions of the previous
    # reply that were not executed (the 5 after the 5 run), with delay 0
    policy = Replay(prepared)
    server = serve.PolicyServer(policy, '127.0.0.1', 0).start()
    try:
        rows = ev.run_metaworld(('127.0.0.1', server.port), tasks[:1], trials=1, size=size, seed=sim.DEMO_SEED,
                                progress=False, rtc=True)
    finally:
        server.stop()
    assert rows[0]['success'] == 1 and len(policy.seen) >= 3
    assert 'prev_chunk' not in policy.seen[0][1]
    for (before, _), (frame, obs) in zip(policy.seen, policy.seen[1:]):
        want = policy.actions[np.minimum(np.arange(before + 5, before + 10), policy.episodes[obs['prompt']][0][1] - 1)]
        np.testing.assert_array_equal(obs['prev_chunk'], want.astype(np.float32))
        assert obs['delay'] == 0 and frame == before + 5


def test_metaworld_evaluation_jobs_cover_every_episode_once():
    """eval.metaworld_jobs: every (task, episode) exactly once, in contiguous parts when there are more processes than
    tasks (about two per process), the random baseline's tasks whole, bad counts refused."""
    import eval as ev
    for n_tasks, trials, workers in itertools.product((1, 2, 3, 10), (1, 2, 5, 10, 13), (1, 2, 3, 7, 16, 40)):
        names = [f't{i}' for i in range(n_tasks)]
        for baseline in ('', 'expert', 'random'):
            jobs = ev.metaworld_jobs(names, trials, workers, baseline)
            got = sorted((j['task'], j['first'] + k) for j in jobs for k in range(j['trials']))
            assert got == sorted((t, k) for t in names for k in range(trials)), (n_tasks, trials, workers, baseline)
            assert all(j['trials'] >= 1 for j in jobs)
            whole = baseline == 'random' or workers <= n_tasks
            assert len(jobs) == (n_tasks if whole else n_tasks * min(trials, -(-2 * workers // n_tasks)))
    for bad in (([], 10, 2), (['t'], 0, 2), (['t'], 5, 0)):
        with pytest.raises(ValueError, match='expected at least one task, trial and worker'):
            ev.metaworld_jobs(*bad)


def test_metaworld_evaluation_splits_a_task_over_processes():
    """eval.py with more processes than tasks runs a task's episodes in several processes (here 4 jobs): the same
    episodes (seeds, outcomes, lengths) in the same order as one process, and the first episode's frames kept."""
    os.environ.setdefault('MUJOCO_GL', 'osmesa')
    pytest.importorskip('metaworld')
    import eval as ev
    assert len(ev.metaworld_jobs(['reach-v3'], 5, 2, 'expert')) == 4
    runs = [ev.run_metaworld(None, ['reach-v3'], trials=5, size=16, workers=w, baseline='expert', progress=False)
            for w in (1, 2)]
    key = lambda rows: [(r['episode'], r['seed'], r['success'], r['steps'], r['frames'] is not None) for r in rows]
    assert key(runs[0]) == key(runs[1]) == [(k, sim.EVAL_SEED + k, 1, runs[0][k]['steps'], k == 0) for k in range(5)]
    assert len({r['steps'] for r in runs[0]}) > 1, 'the episodes should differ'


def test_metaworld_action_noise_records_the_experts_action(tmp_path):
    """--action_noise: the robot runs the expert's action plus noise, the dataset holds the expert's action at every
    visited state (re-simulated here with the same noise), and the visited states leave the clean run's path."""
    os.environ.setdefault('MUJOCO_GL', 'osmesa')
    pytest.importorskip('metaworld')
    import pyarrow.parquet as pq
    src = str(tmp_path / 'noisy')
    info = sim.write_metaworld(src, ['reach-v3'], episodes=1, size=16, workers=1, action_noise=0.3)
    assert info['action_noise'] == 0.3
    table = pq.read_table(os.path.join(src, 'data', 'chunk-000', 'file-000.parquet'))
    actions, states = np.stack(table.column('action').to_pylist()), np.stack(table.column('observation.state').to_pylist())
    env = sim.MetaWorld('reach-v3', 16)
    try:
        env.reset(sim.DEMO_SEED)
        clean = [env.state()]
        for _ in range(len(actions)):
            env.step(env.expert_action())
            clean.append(env.state())
        env.reset(sim.DEMO_SEED)
        rng = np.random.default_rng([sim.DEMO_SEED, 0, 1])  # seed, task index, 1
        for t in range(len(actions)):
            np.testing.assert_allclose(env.state(), states[t], atol=1e-6)
            np.testing.assert_allclose(env.expert_action(), actions[t], atol=1e-6)
            env.step(actions[t] + np.r_[rng.normal(0.0, 0.3, 3), 0.0].astype(np.float32))
        assert env.success, 'the noisy run recorded must end in success'
    finally:
        env.close()
    assert np.abs(np.stack(clean[:len(states)]) - states).max() > 0.01, 'the noise must move the robot off the clean path'


def test_metaworld_hold_steps_go_on_past_the_first_success(tmp_path, monkeypatch):
    os.environ.setdefault('MUJOCO_GL', 'osmesa')
    pytest.importorskip('metaworld')
    import pyarrow.parquet as pq
    runs = {}
    for hold in (0, 5):
        src = str(tmp_path / f'hold{hold}')
        assert sim.write_metaworld(src, ['reach-v3'], episodes=1, size=16, workers=1, hold_steps=hold)['hold_steps'] == hold
        table = pq.read_table(os.path.join(src, 'data', 'chunk-000', 'file-000.parquet'))
        runs[hold] = np.stack(table.column('observation.state').to_pylist()), np.stack(table.column('action').to_pylist())
    (s0, a0), (s5, a5) = runs[0], runs[5]
    assert len(s5) == len(s0) + 5, (len(s0), len(s5))
    assert np.array_equal(s5[:len(s0)], s0) and np.array_equal(a5[:len(a0)], a0), 'the run up to the success must not change'
    with pytest.raises(ValueError, match='hold_steps=-1'):
        sim.write_metaworld(str(tmp_path / 'bad'), ['reach-v3'], episodes=1, size=16, workers=1, hold_steps=-1)
    sim.main(['metaworld', f'--out={tmp_path / "cli"}', '--tasks=reach-v3', '--episodes=1', '--size=16', '--workers=1',
              '--hold_steps=2'])
    with open(tmp_path / 'cli' / 'meta' / 'info.json') as f:
        assert json.load(f)['hold_steps'] == 2 and len(s0) + 2 == pq.read_metadata(
            str(tmp_path / 'cli' / 'data' / 'chunk-000' / 'file-000.parquet')).num_rows
    monkeypatch.setattr(sim, 'MAX_STEPS', 3)  # no success within 3 steps: holding on must not keep a failed episode
    with pytest.raises(ValueError, match='failed all'):
        sim.write_metaworld(str(tmp_path / 'short'), ['reach-v3'], episodes=1, size=16, workers=1, hold_steps=5)


def test_metaworld_writer_splits_a_task_and_keeps_the_one_process_episodes(tmp_path):
    """More processes than tasks: a task's seeds are split among spawned processes, and the dataset is the one a
    single process writes: the same seeds, episode numbers, lengths, frames, states and actions (the bookkeeping of
    expert failures is tested with a stand-in recorder below)."""
    os.environ.setdefault('MUJOCO_GL', 'osmesa')
    pytest.importorskip('metaworld')
    import pyarrow.parquet as pq

    def read(src):
        eps = pq.read_table(os.path.join(src, 'meta', 'episodes', 'chunk-000', 'file-000.parquet')).to_pylist()
        files = sorted(os.listdir(os.path.join(src, 'data', 'chunk-000')))
        table = pq.read_table(os.path.join(src, 'data', 'chunk-000'))
        order = np.lexsort((table.column('frame_index').to_numpy(), table.column('episode_index').to_numpy()))
        return eps, files, table.take(order).to_pydict()

    for name, workers in (('one', 1), ('split', 4)):
        sim.write_metaworld(str(tmp_path / name), ['reach-v3'], episodes=10, size=16, workers=workers)
    one, split = read(str(tmp_path / 'one')), read(str(tmp_path / 'split'))
    assert [e['seed'] for e in one[0]] == list(range(10)), [e['seed'] for e in one[0]]
    assert len(one[1]) == 1 and len(split[1]) == 2, (one[1], split[1])  # seeds 0-4 and 5-9
    drop = lambda rows: [{k: v for k, v in r.items() if k not in ('data/file_index', 'file_episode')} for r in rows]
    assert drop(split[0]) == drop(one[0])
    assert split[2].keys() == one[2].keys() and all(split[2][k] == one[2][k] for k in one[2]), \
        [k for k in one[2] if split[2][k] != one[2][k]]
    arrays = {}  # and prepare.py reads the split files into the same prepared dataset
    for name in ('one', 'split'):
        prepare.prepare(str(tmp_path / name), str(tmp_path / f'{name}_prepared'), 'words', image_size=16,
                        max_token_len=48, workers=1)
        arrays[name] = {f: np.load(tmp_path / f'{name}_prepared' / f) for f in
                        ('actions.npy', 'state.npy', 'images_0.npy', 'images_1.npy', 'episode_starts.npy')}
    assert all(np.array_equal(arrays['one'][f], arrays['split'][f]) for f in arrays['one'])


def test_metaworld_writer_numbers_split_jobs_as_one_process_does(tmp_path, monkeypatch):
    """The bookkeeping of split jobs, with a stand-in recorder (no simulator; jobs run in this process): for every
    task the first `episodes` successes of seeds 0, 1, ..., episode numbers and frame ranges in task and seed order,
    the data files in number order holding exactly those frames, the same metadata as one job per task; a part
    without a success writes no file; a task whose every try fails is named."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    fails = {('reach-v3', s) for s in (1, 4, 5, 7)} | {('pick-place-v3', s) for s in range(100)}
    length = lambda seed: 2 + seed % 3

    def record(job):
        kept, tries, seed = [], 0, job['seed']
        while len(kept) < job['need'] and tries < job['max_tries']:
            if (job['task'], seed) not in fails:
                kept.append(seed)
            tries, seed = tries + 1, seed + 1
        if kept:
            e = [job['first_episode'] + k for k, s in enumerate(kept) for _ in range(length(s))]
            path = os.path.join(job['out'], 'data', 'chunk-000', f"file-{job['file']:03d}.parquet")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            pq.write_table(pa.table({'episode_index': e, 'seed': [s for s in kept for _ in range(length(s))]}), path)
        return job, [dict(seed=s, length=length(s)) for s in kept], tries

    monkeypatch.setattr(sim, '_record_task', record)
    metas = {}
    for parts in (1, 3):
        out = str(tmp_path / f'parts{parts}')
        sim.write_metaworld(out, ['reach-v3', 'push-v3'], episodes=6, workers=1, parts=parts)
        metas[parts] = pq.read_table(os.path.join(out, 'meta', 'episodes', 'chunk-000', 'file-000.parquet')).to_pylist()
        files = sorted(os.listdir(os.path.join(out, 'data', 'chunk-000')))
        frames = pa.concat_tables([pq.read_table(os.path.join(out, 'data', 'chunk-000', f)) for f in files])
        expect = [(r['episode_index'], r['seed']) for r in metas[parts] for _ in range(r['length'])]
        assert list(zip(frames['episode_index'].to_pylist(), frames['seed'].to_pylist())) == expect, parts
        assert [r['dataset_from_index'] for r in metas[parts]] == [0] + list(np.cumsum([r['length'] for r in metas[parts]])[:-1])
    # reach-v3: parts of seeds 0-1, 2-3, 4-5 (the last without a success: no file), then seeds 6-9 after them
    assert files == ['file-000.parquet', 'file-001.parquet', 'file-003.parquet', 'file-004.parquet',
                     'file-005.parquet', 'file-006.parquet'], files
    assert [r['seed'] for r in metas[3]] == [0, 2, 3, 6, 8, 9] + list(range(6))
    drop = lambda rows: [{k: v for k, v in r.items() if k not in ('data/file_index', 'file_episode')} for r in rows]
    assert drop(metas[3]) == drop(metas[1])
    with pytest.raises(ValueError, match=r'pick-place-v3: the scripted expert failed all 18 tries \(seeds 0-17\)'):
        sim.write_metaworld(str(tmp_path / 'fail'), ['push-v3', 'pick-place-v3'], episodes=6, workers=1, parts=3)
    # written again into the same directory: the earlier run's files go; a directory of anything else is refused
    sim.write_metaworld(str(tmp_path / 'parts3'), ['push-v3'], episodes=2, workers=1, parts=1)
    assert os.listdir(tmp_path / 'parts3' / 'data' / 'chunk-000') == ['file-000.parquet']
    (tmp_path / 'other').mkdir()
    (tmp_path / 'other' / 'notes.txt').write_text('mine')
    for bad, match in ((dict(out=str(tmp_path / 'other')), 'holds no dataset this writer wrote'),
                       (dict(out=str(tmp_path / 'new'), parts=0), 'parts=0')):
        with pytest.raises(ValueError, match=match):
            sim.write_metaworld(tasks=['push-v3'], episodes=2, workers=1, **bad)
    assert (tmp_path / 'other' / 'notes.txt').read_text() == 'mine'


def test_metaworld_seeds_reproduce_and_differ():
    os.environ.setdefault('MUJOCO_GL', 'osmesa')
    pytest.importorskip('metaworld')
    env = sim.MetaWorld('reach-v3', 16)
    try:
        env.reset(3)
        a = env.obs.copy()
        env.step(env.expert_action())
        env.reset(3)
        b = env.obs.copy()
        env.reset(4)
        c = env.obs.copy()
    finally:
        env.close()
    assert np.array_equal(a, b), 'the same seed must give the same start'
    assert not np.array_equal(a[36:39], c[36:39]), 'another seed must move the goal'


def test_metaworld_first_frame_draws_the_goal_where_it_is():
    """reset's frame shows the goal where it is (the same pixels as a fully recomputed scene), and the episode's
    physics are Meta-World's own: the expert's run from sim's reset equals its run from a bare env.reset()."""
    os.environ.setdefault('MUJOCO_GL', 'osmesa')
    pytest.importorskip('metaworld')
    import mujoco
    for task in ('reach-v3', 'push-v3'):  # tasks whose goal is a marker placed at reset
        env = sim.MetaWorld(task, 64)
        try:
            for seed in (10_000, 10_001):
                env.reset(seed)
                drawn = env.env.data.site_xpos[env.env.model.site('goal').id]
                assert np.allclose(drawn, env.env._target_pos), f'{task} seed {seed}: goal drawn at {drawn}, ' \
                    f'but the goal is {env.env._target_pos}'
                first = env.images()
                mujoco.mj_forward(env.env.model, env.env.data)
                assert np.array_equal(first, env.images()), f'{task} seed {seed}: the first frame is not the scene'
            if task == 'push-v3':  # seed 0: an mj_forward at reset would change this run's length (64 -> 65 steps)
                runs = []
                for bare in (False, True):
                    env.reset(0)
                    if bare:
                        env.env.seed(0)
                        env.obs, _ = env.env.reset()
                    states = [env.state()]
                    for _ in range(100):
                        env.step(env.expert_action())
                        states.append(env.state())
                    runs.append(np.stack(states))
                assert np.array_equal(*runs), 'reset must not change the physics of the episode'
        finally:
            env.close()


def test_eval_cli_metaworld_seeds(tmp_path):
    """eval.py --env=metaworld runs seeds from sim.EVAL_SEED by default and from --seed when given (--seed=0: the
    demonstrations' seeds), here with the random baseline for 2 steps."""
    os.environ.setdefault('MUJOCO_GL', 'osmesa')
    pytest.importorskip('metaworld')
    import csv
    import runpy
    import sys
    root = os.path.dirname(os.path.abspath(__file__))
    seeds = {}
    for name, extra in (('default', []), ('demo', ['--seed=0'])):
        argv, sys.argv = sys.argv, ['eval.py', '--env=metaworld', '--tasks=reach-v3', '--baseline=random',
                                    '--trials=2', '--max_steps=2', '--image_size=16', '--strip=0',
                                    f'--out_dir={tmp_path / name}'] + extra
        try:
            runpy.run_path(os.path.join(root, 'eval.py'), run_name='__main__')
        finally:
            sys.argv = argv
        with open(tmp_path / name / 'episodes.csv') as f:
            seeds[name] = [int(r['seed']) for r in csv.DictReader(f)]
    assert seeds == {'default': [sim.EVAL_SEED, sim.EVAL_SEED + 1], 'demo': [0, 1]}, seeds


def test_metaworld_task_lists():
    assert len(sim.MT50) == 50 and len(sim.MT10) == 10 and set(sim.MT10) <= set(sim.MT50)
    groups = [sim.difficulty(t) for t in sim.MT50]
    assert [groups.count(g) for g in ('easy', 'medium', 'hard', 'very hard')] == [28, 11, 6, 5]
    assert sim.metaworld_tasks('reach-v3,push-v3') == ['reach-v3', 'push-v3']
    assert sim.metaworld_tasks('reach-v3,push-v3,reach-v3') == ['reach-v3', 'push-v3']
    with pytest.raises(ValueError, match="unknown Meta-World tasks \\['reach'\\]"):
        sim.metaworld_tasks('reach')


def test_synthetic_object_variants_share_the_scene():
    """objects=1 keeps the named object (same position, same start) of the 3-object scene of the same seed."""
    for e in range(20):
        three = sim.Scene.random(np.random.default_rng([5, e]), 3)
        one = sim.Scene.random(np.random.default_rng([5, e]), 1)
        assert len(one.objects) == 1 and one.target == 0
        assert one.objects[0] == three.objects[three.target] and one.task == three.task
        np.testing.assert_array_equal(one.grip, three.grip)


def test_synthetic_parallel_rendering_writes_the_same_files(tmp_path):
    """make_synthetic renders in worker processes for large datasets: byte-identical files to rendering in-process."""
    one, two = tmp_path / 'one', tmp_path / 'two'
    sim.make_synthetic(str(one), episodes=24, image_size=16, seed=3, objects=3, workers=1)
    sim.make_synthetic(str(two), episodes=24, image_size=16, seed=3, objects=3, workers=2)
    names = sorted(os.listdir(one))
    assert names == sorted(os.listdir(two)) and 'images_0.npy' in names and 'images_1.npy' in names
    for name in names:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    assert np.load(one / 'images_1.npy').any()  # the images were written, not left as the zeros they start as
