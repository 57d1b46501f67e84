"""Where does a reach-v3 policy go? Runs a checkpoint in this process on evaluation seeds (eval.py's loop: replan
every 5 actions, stop at success, 400 steps) and prints per episode the distance of the tool centre point (the point
Meta-World's success test measures) to the goal at the start, at its closest and at the end, the hand's path every 10
steps for the first three episodes, and the cosine of the policy's first (dx, dy, dz) with the expert's at each replan.
    MUJOCO_GL=osmesa python docs/closed_loop/e3_reach_trace.py <checkpoint dir> <first seed> <episodes>"""
import os
import sys

import numpy as np

os.environ.setdefault('MUJOCO_GL', 'osmesa')
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import serve  # noqa: E402
import sim  # noqa: E402

ckpt, seed0, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pol = serve.Policy(ckpt, device='cpu')
keys = pol.metadata()['observation_keys']
env = sim.MetaWorld('reach-v3', 128)
for k in range(n):
    env.reset(seed0 + k)
    goal = np.asarray(env.env._target_pos).copy()
    d, cos, plan, path = [], [], [], []
    for t in range(sim.MAX_STEPS):
        if not plan:
            v = env.images()
            obs = {keys['image']: v[0], keys['wrist_image']: v[1], keys['state']: env.state(),
                   keys['prompt']: env.instruction}
            a = np.asarray(pol.infer(obs)['actions'])
            e = env.expert_action()
            cos.append(float(a[0, :3] @ e[:3] / (np.linalg.norm(a[0, :3]) * np.linalg.norm(e[:3]) + 1e-9)))
            plan = list(a[:5])
        d.append(np.linalg.norm(np.asarray(env.env.tcp_center) - goal))
        path.append(env.obs[:3].copy())
        if env.step(plan.pop(0)):
            break
    d = np.array(d)
    if k < 3:
        print('hand path (every 10 steps):', np.array(path)[::10][:16].round(2).tolist())
    print(f'seed {seed0 + k}: success {int(env.success)} steps {t + 1} | goal {goal.round(2)} | tcp to goal: start '
          f'{d[0] * 100:.1f} cm, closest {d.min() * 100:.1f} cm at step {d.argmin()}, final {d[-1] * 100:.1f} cm | final '
          f'hand {env.obs[:3].round(2)} | cos(policy, expert) first 3 replans {np.round(cos[:3], 2)}, mean {np.mean(cos):.2f}',
          flush=True)
env.close()
