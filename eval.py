"""
Closed-loop evaluation of a policy served over the websocket protocol (serve.py): episodes of a simulator driven
through the client, an action chunk executed and re-planned every `replan` actions (openpi's LIBERO client: 5),
and the success rate over seeded episodes. The simulators are in sim.py.

    python eval.py --ckpt=out/demo                              # serves the run's newest checkpoint on 127.0.0.1 here
    python eval.py --ckpt=out/demo --weights=init               # the same model with random weights, for contrast
    python eval.py --server=127.0.0.1:8000 --episodes=200       # a server already running (python serve.py ...)
    python eval.py --env=metaworld --tasks=mt10 --ckpt=out/metaworld/ckpt_6000 --workers=10   # Meta-World
    python eval.py --env=metaworld --tasks=mt10 --baseline=random --workers=2     # the floor; --baseline=expert: the ceiling
    python eval.py --env=libero --suite=libero_spatial --server=127.0.0.1:8000   # LIBERO (hf-libero + MuJoCo)

synthetic: episode e starts from sim.Scene.random(np.random.default_rng([seed, e])), scenes the training data (one
generator seeded 0) does not hold. metaworld: episode k of each task resets with seed --seed + k (default
sim.EVAL_SEED; the demonstrations use seeds from sim.DEMO_SEED), ends at the first success or after 400 steps
(LeRobot's protocol), in `workers` processes (a task's episodes split among several when there are more processes
than tasks: the same episodes with a noise seed). Writes out_dir/episodes.csv (one row per episode), for Meta-World also
tasks.md (success per task and difficulty group), and strips of the first episodes as PNG.
"""
import csv
import math
import os
import time
import zlib

import numpy as np
from tqdm import tqdm

import data
import model as M
import serve
import sim

# -----------------------------------------------------------------------------
# config (python eval.py --key=value)
ckpt = ''                  # a checkpoint to serve here (on 127.0.0.1, a free port); or:
server = ''                # host:port of a running serve.py
api_key = ''
weights = 'auto'           # with ckpt: 'auto' | 'ema' | 'model' | 'init' (random weights)
noise_seed = 0             # with ckpt: noise from the seed and each observation (serve.Policy.noise), so a run
                           # repeats exactly; -1: fresh noise every request
noise_scale = 1.0          # with ckpt: the sampling noise's std (serve.py's noise_scale; 0: deterministic sampling)
device = 'auto'
env = 'synthetic'          # 'synthetic' | 'metaworld' | 'libero' (openpi's LIBERO client loop; needs hf-libero, not run here)
episodes = 50              # synthetic: seeded episodes
objects = 0                # synthetic: objects per scene; 0: as in the checkpoint's training data (else 3)
tasks = 'mt10'             # metaworld: mt10 | mt50 | comma-separated names (reach-v3,push-v3)
trials = 0                 # metaworld / libero: episodes per task; 0: the benchmark's protocol (10 / 50)
replan = 5                 # actions executed from each chunk before asking again
delay = 0                  # synthetic: simulated inference delay, steps the robot runs the old chunk meanwhile
rtc = False                # real-time chunking: each request carries the old chunk's rest (and, synthetic, the delay;
                           # metaworld: delay 0), so the new chunk is guided to continue it
max_steps = 0              # steps per episode; 0: synthetic 60 (the expert needs 20-37), metaworld 400
image_size = 0             # synthetic / metaworld: rendered camera side; 0: the policy's own image size
workers = 1                # metaworld: processes running episodes against the one server (a task each, or parts of
                           # a task's episodes when there are more processes than tasks)
baseline = ''              # metaworld, instead of a policy: 'random' (uniform actions, the floor) | 'expert' (the
                           # scripted expert with the full simulator state, the ceiling)
seed = -1                  # episode seeds; < 0: each env's default. synthetic: episode e is scene (seed, e), default
                           # 1000; metaworld: episode k resets with seed + k, default sim.EVAL_SEED (--seed=0: the
                           # demonstrations' seeds, but one whose expert try failed is not in the data); libero:
                           # env.seed, default 7 (openpi's)
strip = 4                  # synthetic: episodes drawn in episodes.png (metaworld: every task's first
                           # episode, 10 tasks per tasks_<k>.png); 0: none
suite = 'libero_spatial'   # libero: libero_spatial | libero_object | libero_goal | libero_10 | libero_90
out_dir = ''               # '': out/eval/<env>_<date-time>, a new directory each run
# -----------------------------------------------------------------------------


def synthetic_episode(infer, scene, keys, size, replan, max_steps, delay=0, rtc=False, log=None):
    """One closed-loop episode of the synthetic task. infer: observation dict -> reply with 'actions'. A new chunk
    is asked for every `replan` actions; with `delay` d > 0 the answer arrives d steps after the observation it
    answers, the robot running d more actions of the old chunk meanwhile (d < replan, replan + d <= the horizon),
    then the new chunk from its action d (the first request is waited for). replan is cut to the horizon. rtc: the request carries the old chunk's remaining actions and the delay
    (real-time chunking). log: a list that gets (action, first of a new chunk) per executed step.
    Returns (success, steps, final distance to the named object, table-camera frames HWC, gripper path)."""
    frames, path = [], [scene.grip.copy()]
    chunk, k, pending = None, 0, None  # the chunk executed, its next index, [steps until the next lands, next]
    for t in range(max_steps):
        views = scene.images(size)
        frames.append(views[0].transpose(1, 2, 0))
        obs = {keys['image']: views[0].transpose(1, 2, 0), keys['wrist_image']: views[1].transpose(1, 2, 0),
               keys['state']: scene.state(), keys['prompt']: scene.task}
        first = False
        if chunk is None:  # the first request: the robot waits for it
            chunk, k, first = np.asarray(infer(obs)['actions']), 0, True
            replan = min(replan, len(chunk))
            if not 0 <= delay < replan or replan + delay > len(chunk):
                raise ValueError(f'delay {delay}: needs 0 <= delay < replan ({replan}) and replan + delay <= the '
                                 f'horizon ({len(chunk)})')
        elif pending is None and k == replan:  # every `replan` steps: a chunk runs from index d to replan + d - 1
            if rtc:
                obs.update(prev_chunk=chunk[k:].astype(np.float32), delay=delay)
            pending = [delay, np.asarray(infer(obs)['actions'])]
        if pending is not None and pending[0] == 0:  # the new chunk lands, d steps after its observation
            chunk, k, first, pending = pending[1], delay, True, None
        action = chunk[k]
        k += 1
        if pending is not None:
            pending[0] -= 1
        if log is not None:
            log.append((action, first))
        done = scene.step(action)
        path.append(scene.grip.copy())
        if done:
            break
    frames.append(scene.images(size)[0].transpose(1, 2, 0))
    return scene.success(), t + 1, scene.distance(), frames, np.array(path)


def run_synthetic(infer, keys, n, replan=5, max_steps=60, size=64, seed=1000, objects=3, delay=0, rtc=False,
                  progress=True):
    """n seeded episodes; returns one dict per episode, with the mean |a_k - a_(k-1)| over consecutive executed
    actions where a_k is the first of a new chunk (seam_jump) and where it is not (inner_jump)."""
    rows = []
    bar = tqdm(range(n), desc='episodes', disable=not progress)
    for e in bar:
        scene = sim.Scene.random(np.random.default_rng([seed, e]), objects)
        task, log = scene.task, []
        ok, steps, dist, frames, path = synthetic_episode(infer, scene, keys, size, replan, max_steps, delay, rtc, log)
        jumps = [(np.abs(a - b).mean(), first) for (b, _), (a, first) in zip(log, log[1:])]
        seam, inner = [j for j, f in jumps if f], [j for j, f in jumps if not f]
        rows.append(dict(episode=e, task=task, success=int(ok), steps=steps, distance=round(dist, 4),
                         seam_jump=round(float(np.mean(seam)), 5) if seam else '',
                         inner_jump=round(float(np.mean(inner)), 5) if inner else '',
                         frames=frames, path=path * size - 0.5, label=f"{task[12:]}\n{'success' if ok else 'failure'}"))
        bar.set_postfix(success=f"{np.mean([r['success'] for r in rows]):.0%}")
    return rows


def metaworld_task(job, on_episode=None):
    """Episodes job['first'], ..., job['first'] + job['trials'] - 1 of one Meta-World task against the server at
    job['address'] (its own connection, so jobs can run in parallel processes), or with job['baseline'] 'random'
    (uniform actions in [-1, 1]) or 'expert' (the scripted expert, seeing the full simulator state) instead of a
    policy. Returns one dict per episode (on_episode is called with each); episode 0 keeps its table-camera frames."""
    os.environ.setdefault('MUJOCO_GL', sim.default_gl())
    baseline = job.get('baseline')
    if baseline:
        rng, keys = np.random.default_rng([job['seed'], zlib.crc32(job['task'].encode())]), dict.fromkeys(
            ('image', 'wrist_image', 'state', 'prompt'), '')
        client = None
    else:
        client = serve.Client(*job['address'], job['api_key'])
        keys = client.metadata['observation_keys']
    env_ = sim.MetaWorld(job['task'], job['size'])
    rows = []
    try:
        for k in range(job['first'], job['first'] + job['trials']):
            env_.reset(job['seed'] + k)
            frames, plan, rest = [], [], ()
            for t in range(job['max_steps']):
                views = env_.images()
                if k == 0 and t % 4 == 0:
                    frames.append(views[0])
                if baseline:
                    plan = [rng.uniform(-1, 1, 4) if baseline == 'random' else env_.expert_action()]
                elif not plan:
                    obs = {keys['image']: views[0], keys['wrist_image']: views[1], keys['state']: env_.state(),
                           keys['prompt']: env_.instruction}
                    if job.get('rtc') and len(rest):  # the old chunk's unexecuted actions
                        obs.update(prev_chunk=rest, delay=0)
                    chunk = np.asarray(client.infer(obs)['actions'])
                    plan, rest = list(chunk[:job['replan']]), chunk[job['replan']:].astype(np.float32)
                if env_.step(plan.pop(0)):
                    break
            if k == 0:
                frames.append(env_.images()[0])
            rows.append(dict(task=job['task'], episode=k, seed=job['seed'] + k, success=int(env_.success), steps=t + 1,
                             distance=round(env_.distance, 4), closest=round(env_.closest, 4),
                             difficulty=sim.difficulty(job['task']), frames=frames if k == 0 else None,
                             label=f"{job['task']}\n{'success' if env_.success else 'failure'}"))
            if on_episode:
                on_episode(rows[-1])
    finally:
        env_.close()
        if client is not None:
            client.close()
    return rows


def metaworld_jobs(task_names, trials, workers, baseline='', **common):
    """The jobs of run_metaworld: a task each, or with more processes than tasks each task's episodes in contiguous
    parts (about two per process, for balance), except for the random baseline's one-stream-per-task episodes."""
    if not task_names or trials < 1 or workers < 1:
        raise ValueError(f'Meta-World evaluation of tasks {task_names} with trials={trials}, workers={workers}: '
                         f'expected at least one task, trial and worker')
    ranges = sim.task_parts(len(task_names), trials, 1 if baseline == 'random' else workers)
    return [dict(task=t, first=first, trials=n, baseline=baseline, **common) for t in task_names for first, n in ranges]


def run_metaworld(address, task_names, trials=10, replan=5, max_steps=400, size=128, workers=1, api_key=None,
                  seed=sim.EVAL_SEED, baseline='', progress=True, rtc=False):
    """Every task's `trials` episodes (seeds seed, seed + 1, ...) against the policy server at address (host, port),
    or a baseline ('random' | 'expert'), in `workers` processes: a task each, and with more processes than tasks a
    task's episodes split among several (an episode depends on its seed alone, except with 'random', which draws one
    stream per task: its tasks stay whole). rtc: real-time chunking with no delay, every request after an episode's
    first carries the previous chunk's unexecuted actions. Returns one dict per episode, in task and episode order."""
    import multiprocessing as mp
    jobs = metaworld_jobs(task_names, trials, workers, baseline, address=address, api_key=api_key, replan=replan,
                          max_steps=max_steps, size=size, seed=seed, rtc=rtc)
    rows = []
    with tqdm(total=len(task_names) * trials, desc='episodes', disable=not progress) as bar:
        def done(new):
            rows.extend(new)
            bar.update(len(new))
            bar.set_postfix(success=f"{np.mean([r['success'] for r in rows]):.0%}")
        if workers > 1:  # spawn: every worker starts its own MuJoCo and GL context
            with mp.get_context('spawn').Pool(min(workers, len(jobs))) as pool:
                for new in pool.imap_unordered(metaworld_task, jobs):
                    done(new)
        else:
            for job in jobs:
                metaworld_task(job, lambda row: done([row]))
    order = {t: i for i, t in enumerate(task_names)}
    return sorted(rows, key=lambda r: (order[r['task']], r['episode']))


def task_table(rows):
    """Markdown lines: success per task, per difficulty group and the average over tasks."""
    names = list(dict.fromkeys(r['task'] for r in rows))
    rate = {t: np.mean([r['success'] for r in rows if r['task'] == t]) for t in names}
    lines = ['| task | difficulty | success |', '|---|---|---|']
    lines += [f"| {t} | {sim.difficulty(t)} | {100 * rate[t]:.0f}% |" for t in names]
    for g in ('easy', 'medium', 'hard', 'very hard'):
        members = [rate[t] for t in names if sim.difficulty(t) == g]
        if members and len(members) < len(names):
            lines.append(f"| {g} ({len(members)} tasks) | | {100 * np.mean(members):.1f}% |")
    lines.append(f"| **average ({len(names)} tasks)** | | **{100 * np.mean(list(rate.values())):.1f}%** |")
    return lines


def plot_strip(rows, path, n=4):
    """The first n rows' episodes, four frames each from start to end (HWC), labelled; a row's 'path' (pixel
    coordinates) is drawn on its last frame."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    rows = rows[:n]
    fig, axes = plt.subplots(len(rows), 4, figsize=(8, 2.1 * len(rows)), squeeze=False)
    for ax_row, r in zip(axes, rows):
        frames = r['frames']
        for j, ax in enumerate(ax_row):
            i = round(j * (len(frames) - 1) / 3)
            ax.imshow(frames[i])
            ax.set_xticks([]), ax.set_yticks([])
            ax.set_title('start' if j == 0 else 'end' if j == 3 else '', fontsize=8)
        if r.get('path') is not None:
            ax_row[-1].plot(r['path'][:, 0], r['path'][:, 1], color='w', lw=1)
        ax_row[0].set_ylabel(r['label'], fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def axis_angle(quat):
    """(x, y, z, w) quaternion -> axis * angle, as LIBERO's state stores the end-effector orientation."""
    x, y, z, w = (float(v) for v in quat)
    w = max(-1.0, min(1.0, w))
    s = math.sqrt(max(0.0, 1.0 - w * w))
    return np.zeros(3) if s < 1e-9 else np.array([x, y, z]) * 2.0 * math.acos(w) / s


def run_libero(infer, keys, suite_name, trials, replan, seed=7):
    """LIBERO through the same client path, as openpi's LIBERO client does it: 256 px renders rotated 180 degrees
    and resized with padding to 224, state = end-effector position, axis-angle and gripper joints (8), 10 waiting
    steps with the dummy action, re-planning every `replan` actions. Not run by this repository's tests."""
    from libero.libero import benchmark, get_libero_path
    from libero.libero.envs import OffScreenRenderEnv
    longest = {'libero_spatial': 220, 'libero_object': 280, 'libero_goal': 300, 'libero_10': 520, 'libero_90': 400}
    wait, dummy = 10, [0.0] * 6 + [-1.0]
    tasks = benchmark.get_benchmark_dict()[suite_name]()
    rows = []
    for task_id in tqdm(range(tasks.n_tasks), desc=suite_name):
        task = tasks.get_task(task_id)
        bddl = os.path.join(get_libero_path('bddl_files'), task.problem_folder, task.bddl_file)
        venv = OffScreenRenderEnv(bddl_file_name=bddl, camera_heights=256, camera_widths=256)
        venv.seed(seed)
        for trial, init in enumerate(tasks.get_task_init_states(task_id)[:trials]):
            venv.reset()
            o, done, plan = venv.set_init_state(init), False, []
            for t in range(longest[suite_name] + wait):
                if t < wait:
                    o, _, done, _ = venv.step(dummy)
                    continue
                if not plan:
                    img = data.resize_with_pad(np.ascontiguousarray(o['agentview_image'][::-1, ::-1]), 224)
                    wrist = data.resize_with_pad(np.ascontiguousarray(o['robot0_eye_in_hand_image'][::-1, ::-1]), 224)
                    state = np.concatenate([o['robot0_eef_pos'], axis_angle(o['robot0_eef_quat']), o['robot0_gripper_qpos']])
                    obs = {keys['image']: img, keys['wrist_image']: wrist, keys['state']: state.astype(np.float32),
                           keys['prompt']: str(task.language)}
                    plan = list(np.asarray(infer(obs)['actions'])[:replan])
                o, _, done, _ = venv.step(plan.pop(0).tolist())
                if done:
                    break
            rows.append(dict(episode=len(rows), task=task.language, success=int(done), steps=t + 1, distance=''))
        venv.close()
    return rows


if __name__ == '__main__':
    exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'configurator.py')).read())
    if not (ckpt or server or baseline):
        raise SystemExit('eval.py: pass --ckpt=<checkpoint or run directory> (served here) or --server=host:port')
    if env not in ('synthetic', 'metaworld', 'libero'):
        raise SystemExit(f"eval.py: env={env!r}: expected 'synthetic', 'metaworld' or 'libero'")
    if env == 'libero':
        try:
            import libero  # noqa: F401  (run_libero imports what it uses)
        except ImportError:
            raise SystemExit("eval.py: env='libero' needs LIBERO and MuJoCo in this Python (pip install hf-libero), "
                             "run where LIBERO's assets are") from None
    if env == 'metaworld':
        try:
            task_names = sim.metaworld_tasks(tasks)
        except ValueError as err:
            raise SystemExit(f'eval.py: {err}')
    for key, low, note in (('episodes', 1, ''), ('trials', 0, " (0: the benchmark's protocol)"), ('workers', 1, ''),
                           ('replan', 1, ''), ('delay', 0, ''), ('max_steps', 0, ' (0: the env\'s default)'),
                           ('image_size', 0, " (0: the policy's own)"), ('strip', 0, '')):
        if globals()[key] < low:
            raise SystemExit(f'eval.py: {key}={globals()[key]}: expected an int >= {low}{note}')
    if objects not in (0, 1, 2, 3):
        raise SystemExit(f"eval.py: objects={objects}: expected 1, 2 or 3 (0: as the checkpoint's training data)")
    if server and (ckpt or weights != 'auto' or noise_seed != 0 or noise_scale != 1 or device != 'auto'):
        raise SystemExit('eval.py: --ckpt, --weights, --noise_seed, --noise_scale and --device choose the policy served '
                         'here; with --server= the running serve.py decides them (set them there)')
    if delay and env != 'synthetic' or rtc and env == 'libero':
        raise SystemExit('eval.py: --delay simulates inference delay on the synthetic task only, and --rtc runs on the '
                         'synthetic task and Meta-World')
    if rtc and baseline:
        raise SystemExit('eval.py: --rtc guides a policy\'s chunks; a baseline has none')
    local, client, address = None, None, None
    if baseline:
        if env != 'metaworld' or baseline not in ('random', 'expert') or ckpt or server:
            raise SystemExit(f"eval.py: baseline={baseline!r}: 'random' or 'expert', with env='metaworld' and no "
                             f"--ckpt or --server (a baseline replaces the policy)")
        meta = dict(checkpoint=f'{baseline} baseline', weights='no', action_horizon=1, action_dim=4, observation_keys={})
    elif server:
        h, _, p = server.removeprefix('ws://').rpartition(':')
        if not p.isdigit():
            raise SystemExit(f'eval.py: server={server!r}: expected host:port, e.g. 127.0.0.1:8000')
        address = (h or '127.0.0.1', int(p))
    else:
        try:
            dev = M.resolve_device(device)
            policy = serve.Policy(ckpt, dev, weights, fast=True, noise_seed=noise_seed if noise_seed >= 0 else None,
                                  noise_scale=noise_scale)
        except (FileNotFoundError, ValueError) as err:
            raise SystemExit(f'eval.py: {err}')
        local = serve.PolicyServer(policy, '127.0.0.1', 0).start()
        address = ('127.0.0.1', local.port)
    if address:
        try:
            client = serve.Client(*address, api_key or None)
        except OSError as err:
            raise SystemExit(f'eval.py: no policy server at {address[0]}:{address[1]} ({err}); start one with '
                             f'python serve.py --ckpt=<checkpoint>, or pass --ckpt= to serve one here')
        meta = client.metadata
        H = meta['action_horizon']
        if env == 'synthetic' and not (0 <= delay < min(replan, H) and min(replan, H) + delay <= H):
            raise SystemExit(f'eval.py: delay={delay} with replan={replan}: needs 0 <= delay < replan and '
                             f'replan + delay <= the policy\'s horizon ({H})')
    keys = meta['observation_keys']
    size = image_size or meta.get('image_size') or (128 if env == 'metaworld' else 64)
    out_dir = out_dir or os.path.join('out', 'eval', f"{env}_{time.strftime('%Y%m%d-%H%M%S')}")
    os.makedirs(out_dir, exist_ok=True)
    noise = '' if not local else \
        (f', noise seeded by {noise_seed} and each observation' if noise_seed >= 0 else ', fresh noise') + \
        (f', scaled by {noise_scale}' if noise_scale != 1 else '')
    print(f"policy: {meta['checkpoint']} ({meta['weights']} weights{noise}), horizon {meta['action_horizon']}, "
          f"action dim {meta['action_dim']}, keys {keys} | writing {out_dir}")
    t0 = time.perf_counter()
    if env == 'libero':
        rows = run_libero(client.infer, keys, suite, trials or 50, replan, 7 if seed < 0 else seed)
    elif env == 'metaworld':
        rows = run_metaworld(address, task_names, trials or 10, replan, max_steps or sim.MAX_STEPS, size, workers,
                             api_key or None, seed=sim.EVAL_SEED if seed < 0 else seed, baseline=baseline, rtc=rtc)
    else:
        n_obj = objects or (meta.get('sim') or {}).get('objects', 3)
        rows = run_synthetic(client.infer, keys, episodes, replan, max_steps or 60, size, 1000 if seed < 0 else seed,
                             n_obj, delay, rtc)
    if client is not None:
        client.close()
    if local is not None:
        local.stop()
    fields = {'synthetic': ['episode', 'task', 'success', 'steps', 'distance', 'seam_jump', 'inner_jump'],
              'metaworld': ['task', 'difficulty', 'episode', 'seed', 'success', 'steps', 'distance', 'closest'],
              'libero': ['episode', 'task', 'success', 'steps']}[env]
    with open(os.path.join(out_dir, 'episodes.csv'), 'w', newline='') as f:
        w = csv.DictWriter(f, fields, extrasaction='ignore')
        w.writeheader()
        w.writerows(rows)
    if env == 'metaworld':
        lines = task_table(rows)
        with open(os.path.join(out_dir, 'tasks.md'), 'w') as f:
            f.write('\n'.join(lines) + '\n')
        print('\n'.join(lines))
    firsts = [r for r in rows if r.get('frames') is not None]  # synthetic: every episode; metaworld: one per task
    if strip and firsts:
        try:
            if env == 'synthetic':
                plot_strip(firsts, os.path.join(out_dir, 'episodes.png'), strip)
            else:
                for i in range(0, len(firsts), 10):
                    plot_strip(firsts[i:i + 10], os.path.join(out_dir, f'tasks_{i // 10}.png'), 10)
        except ImportError:
            print('no matplotlib: no strips')
    if env == 'synthetic':
        mean = lambda k: f'{np.mean(v):.4f}' if (v := [r[k] for r in rows if r[k] != '']) else 'none (no episode got that far)'
        print(f"mean action jump at chunk seams {mean('seam_jump')}, inside chunks {mean('inner_jump')} "
              f"(delay {delay}, {'real-time chunking' if rtc else 'no real-time chunking'})")
    rate = np.mean([r['success'] for r in rows])
    print(f"success rate {rate:.1%} ({sum(r['success'] for r in rows)} of {len(rows)} episodes, {env}"
          f"{' ' + suite if env == 'libero' else ''}, replan every {replan}{', real-time chunking' if rtc else ''}) in {time.perf_counter() - t0:.0f} s | "
          f"{os.path.join(out_dir, 'episodes.csv')}")
