"""
Closed-loop evaluation of a policy served over the websocket protocol (serve.py): episodes of a simulator driven
through the client, an action chunk executed and re-planned every `replan` actions (openpi's LIBERO client: 5),
and the success rate over seeded episodes.

    python eval.py --ckpt=out/demo/ckpt_300                     # serves the checkpoint on 127.0.0.1 in this process
    python eval.py --ckpt=out/demo/ckpt_300 --weights=init      # the same model with random weights, for contrast
    python eval.py --server=127.0.0.1:8000 --episodes=200       # a server already running (python serve.py ...)
    python eval.py --env=libero --suite=libero_spatial --server=127.0.0.1:8000   # LIBERO (hf-libero + MuJoCo)

The synthetic task is data.Scene: the simulator whose expert made the demo dataset (same rendering, same dynamics).
Episode e starts from Scene.random(np.random.default_rng([seed, e])), scenes the training data (one generator seeded
0) does not hold. Writes out_dir/episodes.csv (one row per episode) and out_dir/episodes.png (the first episodes).
"""
import csv
import math
import os
import time

import numpy as np
from tqdm import tqdm

import data
import serve

# -----------------------------------------------------------------------------
# config (python eval.py --key=value)
ckpt = ''                  # a checkpoint to serve here (on 127.0.0.1, a free port); or:
server = ''                # host:port of a running serve.py
api_key = ''
weights = 'auto'           # with ckpt: 'auto' | 'ema' | 'model' | 'init' (random weights)
device = 'auto'
env = 'synthetic'          # 'synthetic' | 'libero'
episodes = 50              # synthetic: seeded episodes
replan = 5                 # actions executed from each chunk before asking again
max_steps = 60             # synthetic: steps per episode (the expert needs 20-37)
image_size = 64            # synthetic: rendered camera size (the policy resizes to its own)
seed = 1000
strip = 4                  # episodes drawn in episodes.png; 0: none
suite = 'libero_spatial'   # libero: libero_spatial | libero_object | libero_goal | libero_10 | libero_90
trials = 50                # libero: episodes per task (its fixed initial states)
out_dir = 'out/eval'
# -----------------------------------------------------------------------------


def synthetic_episode(infer, scene, keys, size, replan, max_steps):
    """One closed-loop episode of the synthetic task. infer: observation dict -> reply with 'actions'.
    Returns (success, steps, final distance to the named object, table-camera frames, gripper path)."""
    frames, path, plan = [], [scene.grip.copy()], []
    for t in range(max_steps):
        views = scene.images(size)
        frames.append(views[0])
        if not plan:
            obs = {keys['image']: views[0].transpose(1, 2, 0), keys['wrist_image']: views[1].transpose(1, 2, 0),
                   keys['state']: scene.state(), keys['prompt']: scene.task}
            plan = list(np.asarray(infer(obs)['actions'])[:replan])
        done = scene.step(plan.pop(0))
        path.append(scene.grip.copy())
        if done:
            break
    frames.append(scene.images(size)[0])
    return scene.success(), t + 1, scene.distance(), frames, np.array(path)


def run_synthetic(infer, keys, n, replan=5, max_steps=60, size=64, seed=1000, progress=True):
    """n seeded episodes; returns one dict per episode."""
    rows = []
    bar = tqdm(range(n), desc='episodes', disable=not progress)
    for e in bar:
        scene = data.Scene.random(np.random.default_rng([seed, e]))
        task = scene.task
        ok, steps, dist, frames, path = synthetic_episode(infer, scene, keys, size, replan, max_steps)
        rows.append(dict(episode=e, task=task, success=int(ok), steps=steps, distance=round(dist, 4),
                         frames=frames, path=path))
        bar.set_postfix(success=f"{np.mean([r['success'] for r in rows]):.0%}")
    return rows


def plot_strip(rows, path, n=4, size=64):
    """The first n episodes, four frames each from start to end, the gripper's path drawn on the last."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    rows = rows[:n]
    fig, axes = plt.subplots(len(rows), 4, figsize=(8, 2.1 * len(rows)), squeeze=False)
    for ax_row, r in zip(axes, rows):
        frames = r['frames']
        for j, ax in enumerate(ax_row):
            i = round(j * (len(frames) - 1) / 3)
            ax.imshow(frames[i].transpose(1, 2, 0))
            ax.set_xticks([]), ax.set_yticks([])
            ax.set_title(f'step {i}', fontsize=8)
        ax_row[-1].plot(r['path'][:, 0] * size - 0.5, r['path'][:, 1] * size - 0.5, color='w', lw=1)
        ax_row[0].set_ylabel(f"{r['task'][12:]}\n{'success' if r['success'] else 'failure'}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def axis_angle(quat):
    """(x, y, z, w) quaternion -> axis * angle, as LIBERO's state stores the end-effector orientation."""
    x, y, z, w = (float(v) for v in quat)
    w = max(-1.0, min(1.0, w))
    s = math.sqrt(max(0.0, 1.0 - w * w))
    return np.zeros(3) if s < 1e-9 else np.array([x, y, z]) * 2.0 * math.acos(w) / s


def run_libero(infer, keys, suite_name, trials, replan):
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
        sim = OffScreenRenderEnv(bddl_file_name=bddl, camera_heights=256, camera_widths=256)
        sim.seed(seed)
        for trial, init in enumerate(tasks.get_task_init_states(task_id)[:trials]):
            sim.reset()
            o, done, plan = sim.set_init_state(init), False, []
            for t in range(longest[suite_name] + wait):
                if t < wait:
                    o, _, done, _ = sim.step(dummy)
                    continue
                if not plan:
                    img = data.resize_with_pad(np.ascontiguousarray(o['agentview_image'][::-1, ::-1]), 224)
                    wrist = data.resize_with_pad(np.ascontiguousarray(o['robot0_eye_in_hand_image'][::-1, ::-1]), 224)
                    state = np.concatenate([o['robot0_eef_pos'], axis_angle(o['robot0_eef_quat']), o['robot0_gripper_qpos']])
                    obs = {keys['image']: img, keys['wrist_image']: wrist, keys['state']: state.astype(np.float32),
                           keys['prompt']: str(task.language)}
                    plan = list(np.asarray(infer(obs)['actions'])[:replan])
                o, _, done, _ = sim.step(plan.pop(0).tolist())
                if done:
                    break
            rows.append(dict(episode=len(rows), task=task.language, success=int(done), steps=t + 1, distance=''))
        sim.close()
    return rows


if __name__ == '__main__':
    exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'configurator.py')).read())
    import torch
    if not (ckpt or server):
        raise SystemExit('eval.py: pass --ckpt=<checkpoint directory> (served here) or --server=host:port')
    local = None
    if server:
        h, _, p = server.rpartition(':')
        client = serve.Client(h or '127.0.0.1', int(p), api_key or None)
    else:
        dev = ('cuda' if torch.cuda.is_available() else 'cpu') if device == 'auto' else device
        try:
            policy = serve.Policy(ckpt, dev, weights, fast=True)
        except (FileNotFoundError, ValueError) as err:
            raise SystemExit(f'eval.py: {err}')
        local = serve.PolicyServer(policy, '127.0.0.1', 0).start()
        client = serve.Client('127.0.0.1', local.port)
    meta = client.metadata
    keys = meta['observation_keys']
    print(f"policy: {meta['checkpoint']} ({meta['weights']} weights), horizon {meta['action_horizon']}, "
          f"action dim {meta['action_dim']}, keys {keys}")
    t0 = time.perf_counter()
    if env == 'libero':
        rows = run_libero(client.infer, keys, suite, trials, replan)
    else:
        rows = run_synthetic(client.infer, keys, episodes, replan, max_steps, image_size, seed)
    client.close()
    if local is not None:
        local.stop()
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, 'episodes.csv'), 'w', newline='') as f:
        w = csv.DictWriter(f, ['episode', 'task', 'success', 'steps', 'distance'], extrasaction='ignore')
        w.writeheader()
        w.writerows(rows)
    if env == 'synthetic' and strip:
        try:
            plot_strip(rows, os.path.join(out_dir, 'episodes.png'), strip, image_size)
        except ImportError:
            print('no matplotlib: no episodes.png')
    rate = np.mean([r['success'] for r in rows])
    print(f"success rate {rate:.1%} ({sum(r['success'] for r in rows)} of {len(rows)} episodes, {env}"
          f"{' ' + suite if env == 'libero' else ''}, replan every {replan}) in {time.perf_counter() - t0:.0f} s | "
          f"{os.path.join(out_dir, 'episodes.csv')}")
