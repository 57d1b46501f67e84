"""Why does a reach-v3 policy fail when it replans after every action (g1)? Runs a checkpoint in this process as
eval.py does (noise seed 0, stop at success, 400 steps), executing `replan` actions of each chunk, and prints per
episode: success, steps, the tool centre point's distance to the goal (start, closest, end), and over the requests
made before the closest approach (so that overshooting, where the expert turns back, does not count) the mean cosine of
the policy's first (dx, dy, dz) with the expert's, the range of the norms of both, and the mean cosine between
consecutive requests' first actions (how steadily the policy aims).
    MUJOCO_GL=osmesa python docs/closed_loop/g2_reach_replan_trace.py <checkpoint dir> <replan> <seed> [<seed> ...]"""
import os
import sys

import numpy as np

os.environ.setdefault('MUJOCO_GL', 'osmesa')
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import serve  # noqa: E402
import sim  # noqa: E402

ckpt, replan, seeds = sys.argv[1], int(sys.argv[2]), [int(s) for s in sys.argv[3:]]
pol = serve.Policy(ckpt, device='cpu', weights='model', noise_seed=0)
keys = pol.metadata()['observation_keys']
env = sim.MetaWorld('reach-v3', 128)
cos = lambda a, b: float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-9))
for seed in seeds:
    env.reset(seed)
    goal = np.asarray(env.env._target_pos).copy()
    d, asked, plan = [], [], []  # asked: (step, policy's first action, expert's action)
    for t in range(sim.MAX_STEPS):
        if not plan:
            v = env.images()
            obs = {keys['image']: v[0], keys['wrist_image']: v[1], keys['state']: env.state(),
                   keys['prompt']: env.instruction}
            a = np.asarray(pol.infer(obs)['actions'])
            asked.append((t, a[0, :3].copy(), env.expert_action()[:3]))
            plan = list(a[:replan])
        d.append(np.linalg.norm(np.asarray(env.env.tcp_center) - goal))
        if env.step(plan.pop(0)):
            break
    closest = int(np.argmin(d))
    early = [x for x in asked if x[0] <= closest]
    steady = np.mean([cos(p[1], q[1]) for p, q in zip(early, early[1:])])
    span = lambda v: f'{min(v):.2f}-{max(v):.2f}'
    print(f'replan {replan} seed {seed}: success {int(env.success)} steps {t + 1} | tcp to goal start '
          f'{d[0] * 100:.1f} cm, closest {min(d) * 100:.1f} cm at step {closest}, end {d[-1] * 100:.1f} cm | '
          f'{len(early)} requests up to the closest approach: cos(policy, expert) mean '
          f'{np.mean([cos(p, e) for _, p, e in early]):.2f}, |policy| {span([np.linalg.norm(p) for _, p, _ in early])}, '
          f'|expert| {span([np.linalg.norm(e) for _, _, e in early])}, cos(consecutive requests) {steady:.2f}',
          flush=True)
env.close()
