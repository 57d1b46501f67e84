"""Where do push-v3 and pick-place-v3 policies go wrong? Runs a checkpoint in this process on evaluation seeds
(eval.py's loop: replan every 5 actions, stop at success, 400 steps) and, at every replan, compares the policy's first
(dx, dy, dz) with the scripted expert's at the same state, split by the expert's phase: 'align' (the hand more than
2 cm from the puck in xy: the expert moves over it), 'descend' (over it, more than 4 cm above), 'contact' (at the puck:
push or grasp and carry); phases by geometry, close to but not exactly the experts' own rules (pick-place descends to
5 cm, its grasp waits without moving). Per phase: the cosine in 3D and in xy alone, the mean dz of both, the hand's
height above the puck. Per episode: success, the hand's closest xy distance to the puck, whether the puck moved
(> 2 cm), its final distance to the goal, and the share of replans in each phase. With drive='expert' the expert's
actions run the robot and the policy is only asked (open loop on the demonstrations' kind of states).
    MUJOCO_GL=osmesa python docs/closed_loop/n_puck_trace.py <checkpoint dir> <task> <first seed> <episodes> [weights]
        [policy|expert]"""
import os
import sys

import numpy as np

os.environ.setdefault('MUJOCO_GL', 'osmesa')
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import serve  # noqa: E402
import sim  # noqa: E402

ckpt, task, seed0, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pol = serve.Policy(ckpt, device='cpu', weights=sys.argv[5] if len(sys.argv) > 5 else 'auto', noise_seed=0)
drive = sys.argv[6] if len(sys.argv) > 6 else 'policy'
keys = pol.metadata()['observation_keys']
env = sim.MetaWorld(task, 128)
phases = {'align': [], 'descend': [], 'contact': []}
for k in range(n):
    env.reset(seed0 + k)
    puck0, goal = env.obs[4:7].copy(), np.asarray(env.env._target_pos).copy()
    plan, xy_min, seen = [], 1.0, {p: 0 for p in phases}
    xy0 = float(np.linalg.norm(env.obs[:2] - puck0[:2]))
    for t in range(sim.MAX_STEPS):
        hand, puck = env.obs[:3], env.obs[4:7]
        xy = float(np.linalg.norm(hand[:2] - puck[:2]))
        xy_min = min(xy_min, xy)
        if not plan:
            v = env.images()
            obs = {keys['image']: v[0], keys['wrist_image']: v[1], keys['state']: env.state(),
                   keys['prompt']: env.instruction}
            a = np.asarray(pol.infer(obs)['actions'])
            e = env.expert_action()
            c = float(a[0, :3] @ e[:3] / (np.linalg.norm(a[0, :3]) * np.linalg.norm(e[:3]) + 1e-9))
            cxy = float(a[0, :2] @ e[:2] / (np.linalg.norm(a[0, :2]) * np.linalg.norm(e[:2]) + 1e-9))
            phase = 'align' if xy > 0.02 else 'descend' if hand[2] - puck[2] > 0.04 else 'contact'
            phases[phase].append((c, cxy, a[0, 2], e[2], hand[2] - puck[2]))
            seen[phase] += 1
            plan = list(a[:5])
        act = plan.pop(0)
        if env.step(env.expert_action() if drive == 'expert' else act):
            break
    moved = float(np.linalg.norm(env.obs[4:6] - puck0[:2]))
    total = sum(seen.values())
    print(f'seed {seed0 + k}: success {int(env.success)} steps {t + 1} | hand-puck xy: start {xy0 * 100:.1f}, '
          f'closest {xy_min * 100:.1f} cm | puck moved '
          f'{moved * 100:.1f} cm, final puck-goal {np.linalg.norm(env.obs[4:7] - goal) * 100:.1f} cm | replans '
          + ', '.join(f'{p} {seen[p] / total:.0%}' for p in phases), flush=True)
for p, v in phases.items():
    if v:
        v = np.array(v)
        print(f'{p} ({len(v)} replans): cos(policy, expert) {v[:, 0].mean():.2f}, in xy alone {v[:, 1].mean():.2f} | '
              f'dz policy {v[:, 2].mean():+.2f}, expert {v[:, 3].mean():+.2f} | hand above the puck {v[:, 4].mean() * 100:.1f} cm')
env.close()
