"""Does a vision tower trained from scratch place reach-v3's goal better with another position embedding? d1_goal_probe
found that every encoder it tried places the goal within 5 cm on only ~10% of first frames (the hand at its start
pose, the goal a 2-pixel ball in the table camera), where the ball's exact pixel alone places it on ~70%. The policy
reads SigLIP's tokens through attention, so where a token is must be in its content: with pi05's init (a learned
position table of std width^-0.5, tiny next to the patch content) that signal starts weak. This probe trains the
tower as the policy builds it (model.Siglip with Pi05.init_weights' rules for the vision part, patch or conv stem)
with the position table started three ways: 'learn' (pi05's init), 'learn1' (std 1) and 'sincos' (fixed-frequency 2D
sines and cosines, MAE's and 'Better plain ViT baselines'' choice, left trainable), and reads it out by attention
('pool': learned queries, as the expert reads the prefix) or by flattening ('flat'). A record of 2026-12-05 session
14 (2-core CPU, torch 2.13.0+cpu), run from the repository root on d1_goal_probe.py's collected data:
    MUJOCO_GL=osmesa python docs/closed_loop/d1_goal_probe.py collect reach-v3 0 400 /tmp/probe/reach_train.npz
    MUJOCO_GL=osmesa python docs/closed_loop/d1_goal_probe.py collect reach-v3 10000 100 /tmp/probe/reach_eval.npz
    python docs/closed_loop/ab_posemb_probe.py /tmp/probe/reach <N> <steps> <stem> <posemb> <readout>
Target: the goal relative to the hand (images only), as d1's 'relative'; scored on the 100 evaluation seeds."""
import dataclasses
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import model as M  # noqa: E402


def sincos_2d(grid, dim, temperature=10000.0):
    """(grid * grid, dim) fixed 2D sin-cos position codes: a quarter of the channels each for sin(y), cos(y), sin(x),
    cos(x) over geometric frequencies (MAE, big_vision's posemb_sincos_2d)."""
    y, x = torch.meshgrid(torch.arange(grid, dtype=torch.float64), torch.arange(grid, dtype=torch.float64), indexing='ij')
    omega = 1.0 / temperature ** (torch.arange(dim // 4, dtype=torch.float64) / (dim // 4 - 1))
    y, x = y.flatten()[:, None] * omega, x.flatten()[:, None] * omega
    return torch.cat([x.sin(), x.cos(), y.sin(), y.cos()], 1).float()


class Tower(nn.Module):
    def __init__(self, stem, posemb, readout, width=128):
        super().__init__()
        cfg = dataclasses.replace(M.configs['small'], vit_width=width, vit_depth=3, vit_mlp=4 * width, vit_heads=4,
                                  vision_stem=stem)
        # PROBE_SIZE / PROBE_PATCH (added session 18): frames collected at another size (d1_goal_probe.py's PROBE_SIZE)
        cfg = dataclasses.replace(cfg, image_size=int(os.environ.get('PROBE_SIZE', cfg.image_size)),
                                  patch=int(os.environ.get('PROBE_PATCH', cfg.patch)))
        self.vit, self.readout = M.Siglip(cfg), readout
        with torch.no_grad():  # Pi05.init_weights' rules for the vision tower
            for m in self.vit.modules():
                if isinstance(m, (nn.Linear, nn.Conv2d)):
                    fan_in = m.weight[0].numel()
                    nn.init.trunc_normal_(m.weight, std=fan_in ** -0.5, a=-2 * fan_in ** -0.5, b=2 * fan_in ** -0.5)
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)
                elif isinstance(m, M.LayerNorm):
                    nn.init.ones_(m.weight), nn.init.zeros_(m.bias)
            pos = self.vit.embeddings.position_embedding.weight
            if posemb == 'learn':
                nn.init.normal_(pos, std=width ** -0.5)
            elif posemb == 'learn1':
                nn.init.normal_(pos, std=1.0)
            else:
                pos.copy_(sincos_2d(int(math.isqrt(cfg.patches)), width))
        P = cfg.patches
        if readout == 'pool':
            self.query = nn.Parameter(torch.randn(1, 4, width) * 0.02)
            self.pool = nn.MultiheadAttention(width, 4, batch_first=True)
            feat = 4 * width
        else:
            self.reduce = nn.Linear(width, 8)
            feat = P * 8
        self.head = nn.Sequential(nn.Linear(2 * feat, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 3))

    def forward(self, img, state=None):  # img (B, 2, S, S, 3) uint8
        B = img.shape[0]
        t = self.vit(img.permute(0, 1, 4, 2, 3).flatten(0, 1).float() / 255 * 2 - 1, torch.float32)
        if self.readout == 'pool':
            f, _ = self.pool(self.query.expand(len(t), -1, -1), t, t)
        else:
            f = self.reduce(t)
        return self.head(f.reshape(B, -1))


def fit(prefix, N, steps, stem, posemb, readout):
    seed = int(os.environ.get('PROBE_SEED', 0))  # the init's and the batches' seed (added 2026-12-06, session 16)
    torch.manual_seed(seed)
    tr, ev = np.load(f'{prefix}_train.npz'), np.load(f'{prefix}_eval.npz')
    X, S, G, SEED = tr['images'], tr['states'][:, :3], tr['goals'], tr['seeds']
    Xe, Se, Ge, SEe = ev['images'], ev['states'][:, :3], ev['goals'], ev['seeds']
    G, Ge = G - S, Ge - Se  # the goal relative to the hand
    first = np.r_[True, SEe[1:] != SEe[:-1]]
    idx = np.flatnonzero(np.isin(SEED, np.unique(SEED)[:N]))
    gm, gs = G[idx].mean(0), G[idx].std(0) + 1e-6
    dev = 'cuda' if torch.cuda.is_available() else 'cpu'  # (CUDA added after the CPU runs, for the device call)
    net = Tower(stem, posemb, readout).to(dev)
    opt = torch.optim.AdamW(net.parameters(), 1e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, 1e-3, total_steps=steps, pct_start=0.05)
    Xt, Gt = torch.from_numpy(X[idx]), torch.from_numpy((G[idx] - gm) / gs)
    g = torch.Generator().manual_seed(seed)
    t0 = time.time()
    for _ in range(steps):
        b = torch.randint(len(idx), (32,), generator=g)
        loss = F.mse_loss(net(Xt[b].to(dev)), Gt[b].to(dev))
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
    net.eval()

    @torch.no_grad()
    def error(Xa, Ga):
        out = torch.cat([net(torch.from_numpy(Xa[i:i + 256]).to(dev)).cpu() for i in range(0, len(Xa), 256)]).numpy() * gs + gm
        return np.linalg.norm(out - Ga, axis=1)
    e, et = error(Xe, Ge), error(X[idx], G[idx])
    base = np.linalg.norm(gm - Ge, axis=1)  # the training mean as the prediction
    print(f'{stem} stem, posemb {posemb}, readout {readout}, seed {seed}: N={N} goals ({len(idx)} frames), {steps} steps, '
          f'{time.time() - t0:.0f}s: train frames within 5 cm {np.mean(et < 0.05):.0%} | held-out seeds: within 5 cm '
          f'{np.mean(e < 0.05):.0%} of frames (median {np.median(e) * 100:.1f} cm), first frames {np.mean(e[first] < 0.05):.0%} '
          f'(median {np.median(e[first]) * 100:.1f} cm) | the training mean: first frames {np.mean(base[first] < 0.05):.0%} '
          f'(median {np.median(base[first]) * 100:.1f} cm)', flush=True)


if __name__ == '__main__':
    prefix, N, steps, stem, posemb, readout = sys.argv[1:7]
    fit(prefix, int(N), int(steps), stem, posemb, readout)
