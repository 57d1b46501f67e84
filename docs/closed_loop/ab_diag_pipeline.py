"""A record of 2026-12-05 session 14 (2-core CPU, torch 2.13.0+cpu): the first 300 steps of ab_pipeline_probe.py's regression
at t = 1 (no schedule), loss and gradient norms every 50 steps, then whether the output depends on the images.
VARIANT=base | proj (the projector initialised lecun-normal instead of zero) | clip (gradient clip 1.0, as train.py).
    VARIANT=proj OMP_NUM_THREADS=1 python docs/closed_loop/ab_diag_pipeline.py"""
import sys, os, dataclasses, numpy as np, torch
sys.path.insert(0, '.'); sys.path.insert(0, 'docs/closed_loop')
import model as M
tr = np.load('/tmp/probe/reach_train.npz')
X, G = tr['images'], tr['goals'] - tr['states'][:, :3]
idx = np.flatnonzero(np.isin(tr['seeds'], np.unique(tr['seeds'])[:50]))
gm, gs = G[idx].mean(0), G[idx].std(0) + 1e-6
torch.manual_seed(0)
cfg = dataclasses.replace(M.configs['demo'], image_size=128, patch=16, max_token_len=8, vision_stem='conv')
net = M.build(cfg, 'cpu', attn='sdpa', compute_dtype=torch.float32)
VARIANT = os.environ.get('VARIANT', 'base')
if VARIANT == 'proj':  # the projector initialised like every other Linear (lecun normal) instead of zero
    fan_in = net.projector.weight.shape[1]
    with torch.no_grad():
        torch.nn.init.trunc_normal_(net.projector.weight, std=fan_in ** -0.5, a=-2 * fan_in ** -0.5, b=2 * fan_in ** -0.5)
H, A = cfg.action_horizon, cfg.action_dim
opt = torch.optim.AdamW(net.parameters(), 1e-3, weight_decay=1e-4)
g = torch.Generator().manual_seed(0)
for step in range(301):
    b = torch.randint(len(idx), (32,), generator=g).numpy()
    imgs = X[idx][b]; B = 32
    bb = dict(images=torch.from_numpy(imgs).permute(0, 1, 4, 2, 3).contiguous(), image_mask=torch.ones(B, 2, dtype=torch.bool),
              tokens=torch.tensor([[5, 6, 7, 8]]).expand(B, -1), token_mask=torch.ones(B, 4, dtype=torch.bool))
    a = torch.zeros(B, H, A); a[:, :, :3] = torch.from_numpy((G[idx][b] - gm) / gs).float()[:, None]; bb['actions'] = a
    loss = net(bb, noise=torch.zeros(B, H, A), time=torch.ones(B), loss_dims=3)
    opt.zero_grad(); loss.backward()
    if step % 50 == 0:
        gn = lambda m: sum(p.grad.norm() ** 2 for p in m.parameters() if p.grad is not None) ** 0.5
        print(step, f'loss {loss.item():.4f} | grad vision {gn(net.vision):.2e} projector {gn(net.projector):.2e} '
              f'proj |W| {net.projector.weight.norm():.2e} | layers {gn(net.layers):.2e}', flush=True)
    if VARIANT == 'clip':
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    opt.step()

with torch.no_grad():  # does the output depend on the images? the same batch with its images rolled by one sample
    v = net.velocity(bb, torch.zeros(B, H, A), torch.ones(B))[:, 0, :3]
    rolled = dict(bb, images=bb['images'].roll(1, 0))
    v2 = net.velocity(rolled, torch.zeros(B, H, A), torch.ones(B))[:, 0, :3]
    print('output spread over the batch', v.std(0).tolist(), '| change when the images are swapped', (v - v2).abs().mean().item(),
          '| target spread', a[:, 0, :3].std(0).tolist())
