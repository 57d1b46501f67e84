"""Does a Meta-World policy use its instruction? For the frames of the tasks that share one scene (reach, push,
pick-place), the first predicted action (dx, dy, dz) under each task's instruction vs the expert's action:
rows = the frame's task, columns = the instruction sent. A policy that ignores the prompt has equal columns.
    python docs/closed_loop/l_promptswap.py <ckpt> <prepared dir> [device]   (from the repository root)"""
import os
import sys

import numpy as np

sys.path.insert(0, os.getcwd())
import data
import serve

ckpt, d = sys.argv[1], sys.argv[2]
device = sys.argv[3] if len(sys.argv) > 3 else 'cuda'
meta = data.check_prepared(d)
pol = serve.Policy(ckpt, device=device, noise_seed=0)
ims = [np.load(os.path.join(d, f'images_{c}.npy'), mmap_mode='r') for c in range(2)]
state = np.load(os.path.join(d, 'state.npy'))
acts = np.load(os.path.join(d, 'actions.npy'))
ti = np.load(os.path.join(d, 'task_index.npy'))
starts = np.load(os.path.join(d, 'episode_starts.npy'))
names = {'reach-v3': 'Reach a goal position', 'push-v3': 'Push the puck to a goal',
         'pick-place-v3': 'Pick and place a puck to a goal'}
tasks = [t for t in names.values() if t in meta['tasks']]
for when, offsets in (('first frame', [0]), ('steps 5-30', [5, 10, 20, 30])):
    print(f"\n{when}: cosine of the first predicted (dx,dy,dz) with the expert's (mean over frames)")
    print('frame task \\ instruction sent | ' + ' | '.join(t.split()[0] for t in tasks))
    for t in tasks:
        k = meta['tasks'].index(t)
        frames = [s + o for s, e in zip(starts[:-1], starts[1:]) if ti[s] == k for o in offsets if s + o < e]
        frames = frames[:400]
        row = []
        for p in tasks:
            obs = [{'observation/image': np.array(ims[0][f].transpose(1, 2, 0)),
                    'observation/wrist_image': np.array(ims[1][f].transpose(1, 2, 0)),
                    'observation/state': state[f], 'prompt': p} for f in frames]
            got = np.concatenate([np.stack([r['actions'][0, :3] for r in pol.infer_batch(obs[i:i + 64])])
                                  for i in range(0, len(obs), 64)])
            want = acts[frames, :3]
            cos = (got * want).sum(-1) / (np.linalg.norm(got, axis=-1) * np.linalg.norm(want, axis=-1) + 1e-9)
            row.append(f'{cos.mean():+.3f}')
        print(f'{t.split()[0]:<10} ({len(frames)} frames) | ' + ' | '.join(row))
