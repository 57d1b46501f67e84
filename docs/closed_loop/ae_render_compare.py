"""Do the GPU (EGL) and the CPU (osmesa) render Meta-World's first frames alike? The tower probe placed reach's goal
from first frames on 48% of held-out seeds on a 2-core CPU and 18% on an H100 (ac_results.txt), the goal being a
2-pixel ball in the table camera. Session 15 (2026-12-05), issue 16.
    PYTHONPATH=. python docs/closed_loop/ae_render_compare.py dump <out.npz> [task] [n]   first frames of seeds 10000.. (sim.py)
    PYTHONPATH=. python docs/closed_loop/ae_render_compare.py compare <a.npz> <b.npz>      per camera: pixels that differ, by how much"""
import sys

import numpy as np


def dump(out, task='reach-v3', n=20):
    import sim
    m = sim.MetaWorld(task)
    frames = []
    for s in range(sim.EVAL_SEED, sim.EVAL_SEED + int(n)):
        m.reset(s)
        frames.append(m.images())
    m.close()
    np.savez_compressed(out, images=np.stack(frames))  # (n, 2 cameras, S, S, 3) uint8
    print(f'{out}: {len(frames)} first frames of {task}, MUJOCO_GL={sim.os.environ.get("MUJOCO_GL")}')


def compare(a, b):
    x, y = np.load(a)['images'].astype(np.int16), np.load(b)['images'].astype(np.int16)
    for c, cam in enumerate(('image (table)', 'wrist_image')):
        d = np.abs(x[:, c] - y[:, c]).max(-1)  # (n, S, S): the largest channel difference per pixel
        print(f'{cam}: {np.mean(d > 0):.2%} of pixels differ, {np.mean(d > 16):.2%} by more than 16 levels, '
              f'mean |diff| {d.mean():.2f}, max {d.max()}')


if __name__ == '__main__':
    {'dump': dump, 'compare': compare}[sys.argv[1]](*sys.argv[2:])
