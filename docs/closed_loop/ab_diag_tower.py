"""A record of 2026-12-05 session 14 (2-core CPU): the first 300 steps of ab_posemb_probe.py's tower (conv stem,
pi05's position init, attention readout), loss every 50 steps, for comparison with ab_diag_pipeline.py.
    OMP_NUM_THREADS=1 python docs/closed_loop/ab_diag_tower.py"""
import sys, numpy as np, torch, torch.nn.functional as F
sys.path.insert(0, '.'); sys.path.insert(0, 'docs/closed_loop')
import ab_posemb_probe as P
tr = np.load('/tmp/probe/reach_train.npz')
X, G = tr['images'], tr['goals'] - tr['states'][:, :3]
idx = np.flatnonzero(np.isin(tr['seeds'], np.unique(tr['seeds'])[:50]))
gm, gs = G[idx].mean(0), G[idx].std(0) + 1e-6
torch.manual_seed(0)
net = P.Tower('conv', 'learn', 'pool')
opt = torch.optim.AdamW(net.parameters(), 1e-3, weight_decay=1e-4)
g = torch.Generator().manual_seed(0)
Xt, Gt = torch.from_numpy(X[idx]), torch.from_numpy((G[idx] - gm) / gs).float()
for step in range(301):
    b = torch.randint(len(idx), (32,), generator=g)
    loss = F.mse_loss(net(Xt[b]), Gt[b])
    if step % 50 == 0: print(step, f'tower alone loss {loss.item():.4f}', flush=True)
    opt.zero_grad(); loss.backward(); opt.step()
