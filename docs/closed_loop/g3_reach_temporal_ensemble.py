"""ACT-style temporal ensembling on a reach-v3 policy (raw weights, noise seed 0 as eval.py): ask at every step and
act on the weighted mean of every stored chunk's prediction for this step (weights exp(-m * i), i = 0 for the oldest,
as in ACT). A record of 2026-12-02 (2-core CPU); output g3_reach_temporal_ensemble.txt.
    MUJOCO_GL=osmesa python docs/closed_loop/g3_reach_temporal_ensemble.py <checkpoint dir> <m> <seed> [<seed> ...]"""
import os
import sys

import numpy as np

os.environ.setdefault('MUJOCO_GL', 'osmesa')
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import serve  # noqa: E402
import sim  # noqa: E402
ckpt, m, seeds = sys.argv[1], float(sys.argv[2]), [int(s) for s in sys.argv[3:]]
pol = serve.Policy(ckpt, device='cpu', weights='model', noise_seed=0)
keys = pol.metadata()['observation_keys']
env = sim.MetaWorld('reach-v3', 128)
wins = 0
for seed in seeds:
    env.reset(seed)
    chunks = []  # (start step, chunk)
    for t in range(sim.MAX_STEPS):
        v = env.images()
        obs = {keys['image']: v[0], keys['wrist_image']: v[1], keys['state']: env.state(), keys['prompt']: env.instruction}
        chunks.append((t, np.asarray(pol.infer(obs)['actions'])))
        preds = [c[t - s] for s, c in chunks if t - s < len(c)]  # oldest first
        w = np.exp(-m * np.arange(len(preds)))
        a = (w[:, None] * np.stack(preds)).sum(0) / w.sum()
        if env.step(a):
            break
    wins += env.success
    print(f'seed {seed}: success {int(env.success)} steps {t + 1}', flush=True)
print(f'm={m}: {wins} of {len(seeds)}')
