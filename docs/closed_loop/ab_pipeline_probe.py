"""Where is reach-v3's goal lost: in the vision tower, or after it? ab_posemb_probe.py trains the policy's tower alone
to regress the goal (relative to the hand) from the two cameras; this trains the whole pi05-shaped policy on the
same frames and target: the 'demo' shape at 128 px with 16 px tokens and the conv stem (its tower is the probe's:
width 128, 3 layers), a fixed 4-token prompt, no state, the target as every action of a 10-action chunk (dims 0-2,
flow-matching loss over those dims, Pi05.forward), then reads the goal off the first action of `sample_actions`
(10 Euler steps from zero noise, and from seeded Gaussian noise). 'regress': the same network and loss at t = 1 from
zero noise only, where the flow target is minus the chunk: a plain regression through the identical pipeline, read
off as -velocity(zero noise, t = 1). Same 50 training goals, 1500 AdamW steps of 32
with the same schedule, the same 100 held-out seeds. A record of 2026-12-05 session 14 (2-core CPU, torch
2.13.0+cpu), on d1_goal_probe.py's collected data (see ab_posemb_probe.py):
    python docs/closed_loop/ab_pipeline_probe.py /tmp/probe/reach <N> <steps> [lr] [regress] [proj]
'proj' (added after these runs, for the GPU session that follows): the image projector initialised lecun-normal
like every other Linear instead of zero. Runs on CUDA where there is one (fp32)."""
import dataclasses
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import model as M  # noqa: E402


def main(prefix, N, steps, lr=1e-3, regress=False, proj=False):
    torch.manual_seed(0)
    tr, ev = np.load(f'{prefix}_train.npz'), np.load(f'{prefix}_eval.npz')
    X, G = tr['images'], tr['goals'] - tr['states'][:, :3]
    Xe, Ge, SEe = ev['images'], ev['goals'] - ev['states'][:, :3], ev['seeds']
    first = np.r_[True, SEe[1:] != SEe[:-1]]
    idx = np.flatnonzero(np.isin(tr['seeds'], np.unique(tr['seeds'])[:N]))
    gm, gs = G[idx].mean(0), G[idx].std(0) + 1e-6
    cfg = dataclasses.replace(M.configs['demo'], image_size=128, patch=16, max_token_len=8, vision_stem='conv')
    dev = 'cuda' if torch.cuda.is_available() else 'cpu'
    net = M.build(cfg, dev, attn='sdpa', compute_dtype=torch.float32)
    if proj:
        fan_in = net.projector.weight.shape[1]
        with torch.no_grad():
            torch.nn.init.trunc_normal_(net.projector.weight, std=fan_in ** -0.5, a=-2 * fan_in ** -0.5, b=2 * fan_in ** -0.5)
    H, A = cfg.action_horizon, cfg.action_dim

    def batch(imgs, target=None):
        B = len(imgs)
        b = dict(images=torch.from_numpy(imgs).permute(0, 1, 4, 2, 3).contiguous(),
                 image_mask=torch.ones(B, 2, dtype=torch.bool), tokens=torch.tensor([[5, 6, 7, 8]]).expand(B, -1),
                 token_mask=torch.ones(B, 4, dtype=torch.bool))
        b = {k: v.to(dev) for k, v in b.items()}
        if target is not None:
            a = torch.zeros(B, H, A)
            a[:, :, :3] = torch.from_numpy((target - gm) / gs).float()[:, None]
            b['actions'] = a.to(dev)
        return b
    opt = torch.optim.AdamW(net.parameters(), lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps, pct_start=0.05)
    g = torch.Generator().manual_seed(0)
    t0 = time.time()
    for _ in range(steps):
        b = torch.randint(len(idx), (32,), generator=g).numpy()
        bb = batch(X[idx][b], G[idx][b])
        if regress:  # t = 1 from zero noise: v's target is -a
            loss = net(bb, noise=torch.zeros(32, H, A, device=dev), time=torch.ones(32, device=dev), loss_dims=3)
        else:
            noise = torch.randn(32, H, A, generator=g).to(dev)
            time_ = M.sample_time(32, g).to(dev)
            loss = net(bb, noise=noise, time=time_, loss_dims=3)
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
    net.eval()

    def error(Xa, Ga, noisy):
        out = []
        for i in range(0, len(Xa), 128):
            bb = batch(Xa[i:i + 128])
            n = len(bb['images'])
            if regress:
                with torch.no_grad():
                    out.append(-net.velocity(bb, torch.zeros(n, H, A, device=dev), torch.ones(n, device=dev))[:, 0, :3])
                continue
            noise = torch.randn(n, H, A, generator=torch.Generator().manual_seed(i)) if noisy else torch.zeros(n, H, A)
            out.append(net.sample_actions(bb, noise=noise.to(dev))[:, 0, :3])
        p = torch.cat(out).float().cpu().numpy() * gs + gm
        return np.linalg.norm(p - Ga, axis=1)
    for noisy in ((False,) if regress else (False, True)):
        e, et = error(Xe, Ge, noisy), error(X[idx], G[idx], noisy)
        how = ('projector lecun-init, ' if proj else '') + ('regression at t = 1' if regress else f'flow loss, sampled from {"seeded noise" if noisy else "zero noise"}')
        print(f'pi05-shaped policy (demo shape, 128 px, conv stem), {how}, lr {lr}: N={N} goals ({len(idx)} frames), {steps} steps, '
              f'{time.time() - t0:.0f}s: train frames within 5 cm {np.mean(et < 0.05):.0%} | held-out seeds: within 5 cm '
              f'{np.mean(e < 0.05):.0%} of frames (median {np.median(e) * 100:.1f} cm), first frames '
              f'{np.mean(e[first] < 0.05):.0%} (median {np.median(e[first]) * 100:.1f} cm)', flush=True)


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 1e-3,
         'regress' in sys.argv[5:], 'proj' in sys.argv[5:])
