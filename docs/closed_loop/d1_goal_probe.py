"""Can an image encoder trained from scratch find reach-v3's goal (a 2-pixel red ball at 128 px) from N demonstrations?
A record of session 2026-12-01d (2-core CPU, torch 2.13.0+cpu), run from the repository root with
`export MUJOCO_GL=osmesa` (a machine without a display):
  python docs/closed_loop/d1_goal_probe.py collect reach-v3 0 400 /tmp/probe/reach_train.npz
  python docs/closed_loop/d1_goal_probe.py collect reach-v3 10000 100 /tmp/probe/reach_eval.npz
  python docs/closed_loop/d1_goal_probe.py fit /tmp/probe/reach 50,400 1500 --target=goal+state
  python docs/closed_loop/d1_goal_probe.py fit /tmp/probe/reach 50,400 1500 --target=relative
  python docs/closed_loop/d1_goal_probe.py fit /tmp/probe/reach 50 1500 --encoder=vit --patch=16   (and 400)
  python docs/closed_loop/d1_goal_probe.py bound reach-v3
collect: every 4th of the first 40 expert steps of each seed, both cameras at 128 px, the hand state, the goal.
fit: an encoder + MLP regresses the goal (goal+state: absolute xyz, the hand xyz given as input) or the goal relative
to the hand (relative: images only) from the frames of the first N training seeds (N distinct goals), 1500 AdamW
steps of 32 frames; scored on 100 evaluation seeds: frames whose prediction is within 5 cm (reach's success radius),
first frames alone (the hand at its start pose, the goal seen only in the images), median error.
Encoders: cnn (4 convolutions, a spatial soft-argmax per camera: keypoints) or vit (model.Siglip at width 128, depth
3, pooled by learned queries). Both cameras share the encoder, as they share pi05's vision tower.
bound: the goal's exact pixel in the table camera (128 px) of 400 training seeds, k nearest pixels' goals averaged
for 100 evaluation seeds: how well the ball's exact pixel in one view places the goal in 3D by a nearest-neighbour
lookup (the depth along the camera ray is not in the pixel)."""
import dataclasses
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, '.')


def collect(task, first, count, out):
    import sim
    m = sim.MetaWorld(task, size=int(os.environ.get('PROBE_SIZE', 128)))  # PROBE_SIZE: added session 18
    imgs, states, goals, seeds = [], [], [], []
    for s in range(first, first + count):
        m.reset(s)
        goal = np.asarray(m.env._target_pos, np.float32).copy()
        for k in range(40):
            if k % 4 == 0:
                imgs.append(m.images()); states.append(m.state()); goals.append(goal); seeds.append(s)
            if m.step(m.expert_action()):
                break
    os.makedirs(os.path.dirname(out) or '.', exist_ok=True)
    np.savez_compressed(out, images=np.stack(imgs), states=np.stack(states), goals=np.stack(goals), seeds=np.array(seeds))


class CNN(nn.Module):
    def __init__(self, with_state, kp=16):
        super().__init__()
        self.trunk = nn.Sequential(nn.Conv2d(3, 16, 5, 2, 2), nn.GELU(), nn.Conv2d(16, 32, 3, 2, 1), nn.GELU(),
                                   nn.Conv2d(32, 32, 3, 1, 1), nn.GELU(), nn.Conv2d(32, kp, 3, 1, 1))
        self.head = nn.Sequential(nn.Linear(4 * kp + 3 * with_state, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(),
                                  nn.Linear(256, 3))
        self.temp = nn.Parameter(torch.ones(1))

    def keypoints(self, x):
        f = self.trunk(x)
        B, K, H, W = f.shape
        p = F.softmax(f.flatten(2) / self.temp, -1).view(B, K, H, W)
        ys, xs = torch.linspace(-1, 1, H), torch.linspace(-1, 1, W)
        return torch.stack([(p.sum(3) * ys).sum(2), (p.sum(2) * xs).sum(2)], -1).flatten(1)

    def forward(self, img, state):  # img (B, 2, S, S, 3) uint8
        x = img.permute(0, 1, 4, 2, 3).float() / 255
        return self.head(torch.cat([self.keypoints(x[:, 0]), self.keypoints(x[:, 1])] + [state] * (state is not None), 1))


class ViT(nn.Module):
    def __init__(self, with_state, patch):
        super().__init__()
        import model
        cfg = dataclasses.replace(model.configs['small'], patch=patch, vit_width=128, vit_depth=3, vit_mlp=512)
        self.vit = model.Siglip(cfg)
        self.query = nn.Parameter(torch.randn(1, 4, 128) * 0.02)
        self.pool = nn.MultiheadAttention(128, 4, batch_first=True)
        self.head = nn.Sequential(nn.Linear(2 * 4 * 128 + 3 * with_state, 256), nn.GELU(), nn.Linear(256, 256),
                                  nn.GELU(), nn.Linear(256, 3))

    def forward(self, img, state):
        B = img.shape[0]
        t = self.vit(img.permute(0, 1, 4, 2, 3).flatten(0, 1).float() / 255 * 2 - 1, torch.float32)
        p, _ = self.pool(self.query.expand(len(t), -1, -1), t, t)
        return self.head(torch.cat([p.reshape(B, -1)] + [state] * (state is not None), 1))


def bound(task):
    import mujoco
    import sim
    m = sim.MetaWorld(task, size=128)
    cam = mujoco.mj_name2id(m.env.model, mujoco.mjtObj.mjOBJ_CAMERA, 'corner4')
    f = 0.5 * 128 / np.tan(np.deg2rad(m.env.model.cam_fovy[cam]) / 2)
    goals, pixels = [], []
    for s in list(range(400)) + list(range(10000, 10100)):
        m.reset(s)
        g = np.array(m.env._target_pos)
        p = m.env.data.cam_xmat[cam].reshape(3, 3).T @ (g - m.env.data.cam_xpos[cam])  # camera frame, looking down -z
        goals.append(g)
        pixels.append(f * p[:2] / -p[2])
    G, P = np.array(goals), np.array(pixels)
    print(f'{task}: the goals span {P[:400].std(0).round(1)} px (std) of the 128 px table camera')
    for k in (1, 5, 10):
        near = np.argsort(np.linalg.norm(P[400:, None] - P[None, :400], axis=2), 1)[:, :k]
        e = np.linalg.norm(G[:400][near].mean(1) - G[400:], axis=1)
        print(f'goal from its exact pixel, {k} nearest training goals: within 5 cm {np.mean(e < 0.05):.0%}, '
              f'median {np.median(e) * 100:.1f} cm')


def fit(prefix, N, steps, target, encoder, patch):
    torch.manual_seed(0)
    tr, ev = np.load(f'{prefix}_train.npz'), np.load(f'{prefix}_eval.npz')
    X, S, G, SEED = tr['images'], tr['states'][:, :3], tr['goals'], tr['seeds']
    Xe, Se, Ge, SEe = ev['images'], ev['states'][:, :3], ev['goals'], ev['seeds']
    with_state = target == 'goal+state'
    if not with_state:
        G, Ge = G - S, Ge - Se
    first = np.r_[True, SEe[1:] != SEe[:-1]]
    idx = np.flatnonzero(np.isin(SEED, np.unique(SEED)[:N]))
    gm, gs, sm, ss = G[idx].mean(0), G[idx].std(0) + 1e-6, S[idx].mean(0), S[idx].std(0) + 1e-6
    net = CNN(with_state) if encoder == 'cnn' else ViT(with_state, patch)
    opt = torch.optim.AdamW(net.parameters(), 1e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, 1e-3, total_steps=steps, pct_start=0.05)
    Xt, St, Gt = torch.from_numpy(X[idx]), torch.from_numpy((S[idx] - sm) / ss), torch.from_numpy((G[idx] - gm) / gs)
    g = torch.Generator().manual_seed(0)
    t0 = time.time()
    for _ in range(steps):
        b = torch.randint(len(idx), (32,), generator=g)
        loss = F.mse_loss(net(Xt[b], St[b] if with_state else None), Gt[b])
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
    net.eval()

    @torch.no_grad()
    def error(Xa, Sa, Ga):
        st = torch.from_numpy((Sa - sm) / ss)
        out = torch.cat([net(torch.from_numpy(Xa[i:i + 256]), st[i:i + 256] if with_state else None)
                         for i in range(0, len(Xa), 256)]).numpy() * gs + gm
        return np.linalg.norm(out - Ga, axis=1)
    e, et = error(Xe, Se, Ge), error(X[idx], S[idx], G[idx])
    base = np.linalg.norm(gm - Ge, axis=1)
    name = encoder + (f' patch {patch}' if encoder == 'vit' else '')
    print(f'{name}, target {target}: N={N} goals ({len(idx)} frames), {steps} steps, {time.time() - t0:.0f}s: '
          f'train frames within 5 cm {np.mean(et < 0.05):.0%} (median {np.median(et) * 100:.1f} cm) | held-out seeds: '
          f'within 5 cm {np.mean(e < 0.05):.0%} of frames, {np.mean(e[first] < 0.05):.0%} of first frames, median '
          f'{np.median(e) * 100:.1f} cm | the training mean: {np.mean(base < 0.05):.0%}, median {np.median(base) * 100:.1f} cm',
          flush=True)


if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    opts = dict(a[2:].split('=', 1) for a in sys.argv[1:] if a.startswith('--'))
    if args[0] == 'collect':
        collect(args[1], int(args[2]), int(args[3]), args[4])
    elif args[0] == 'bound':
        bound(args[1])
    else:
        for n in args[2].split(','):
            fit(args[1], int(n), int(args[3]), opts.get('target', 'relative'), opts.get('encoder', 'cnn'),
                int(opts.get('patch', 16)))
