"""Are push-v3 / pick-place-v3 learnable from these cameras at all by plain behaviour cloning? A small CNN per camera
(three stride-2 convolutions, 4x4 average pool) and an MLP head regress the expert's next H actions from the two
camera images (the dataset's 'image' and 'wrist_image', rendered by sim.MetaWorld at `size` px) and the real 4-dim
state (hand xyz, gripper; standardised numbers), trained on 50 expert episodes (seeds 0-49, MSE, Adam, `steps`
steps of batch 64), then run closed loop like eval.py (execute `replan` actions of each chunk, stop at success, 400
steps) on seeds 10000+. The baseline the pi05-shaped policy is measured against (docs/closed_loop/t_results.txt).
With 'fm' the head is a flow-matching head as pi05's (it also sees the noisy chunk and the time, learns the velocity
noise - actions, samples with 10 Euler steps from Gaussian noise) instead of a regression. With 'vit' each camera's
encoder is model.py's SigLIP tower in the 'demo' shape (8 px patches, 3 layers of width 128, trained from scratch)
whose tokens are flattened into the head, in place of the CNN; 'vit conv' gives that tower model.py's convolutional
stem (vision_stem='conv'). Options of the flow-matching head (added 2026-12-04, session 9): 'beta' draws t as pi05
does (model.sample_time) instead of uniformly; 'skip' adds a linear map of the noisy chunk to the head's output (the
pi05 expert's residual stream passes x_t through; the MLP head has to learn that identity); 'k4' draws 4 noise/time
pairs per frame of each batch (each frame through the encoders 4 times); 'k4shared' the same with the encoders run
once per frame and their features repeated for the 4 draws (the head alone sees 4x the rows); 'det' samples from zero noise; 'steps20' integrates with 20 Euler steps.
Camera options (added 2026-12-05, session 12): 'camdrop' zeroes each camera's features of a training frame with
probability 0.3, one camera always kept (train.py --camera_dropout's rule); 'tableonly' zeroes the wrist camera's
features always (training and evaluation).
Runs on CUDA where there is one.
    python docs/closed_loop/u_cnn_bc.py <task> [size] [steps] [episodes] [nostate] [fm] [vit] [conv] [beta] [skip] [k4|k4shared] [det] [steps20] [camdrop|tableonly]"""
import dataclasses
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

os.environ.setdefault('MUJOCO_GL', 'osmesa')
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import model as M  # noqa: E402
import sim  # noqa: E402

task = sys.argv[1]
size, steps, n_eval = (int(a) for a in (sys.argv[2:5] + ['64', '3000', '20'][len(sys.argv[2:5]):]))
use_state = 'nostate' not in sys.argv[5:]
fm = 'fm' in sys.argv[5:]
vit, stem = 'vit' in sys.argv[5:], 'conv' if 'conv' in sys.argv[5:] else 'patch'
beta, skip, det = 'beta' in sys.argv[5:], 'skip' in sys.argv[5:], 'det' in sys.argv[5:]
K = 4 if {'k4', 'k4shared'} & set(sys.argv[5:]) else 1
n_steps = 20 if 'steps20' in sys.argv[5:] else 10
shared = 'k4shared' in sys.argv[5:]
camdrop, table_only = 'camdrop' in sys.argv[5:], 'tableonly' in sys.argv[5:]
dev = 'cuda' if torch.cuda.is_available() else 'cpu'
H, replan = 10, 5
torch.manual_seed(0)
env = sim.MetaWorld(task, size)
T0 = time.time()
I, S, Y = [], [], []
for seed in range(50):
    env.reset(seed)
    a = []
    for _ in range(sim.MAX_STEPS):
        I.append(env.images()), S.append(env.state()), a.append(env.expert_action())
        if env.step(a[-1]):
            break
    a = np.array(a + [a[-1]] * H)
    Y += [a[t:t + H].ravel() for t in range(len(a) - H)]
I = torch.tensor(np.array(I)).permute(0, 1, 4, 2, 3).contiguous()  # uint8 (n, 2, 3, S, S)
S, Y = np.array(S), torch.tensor(np.array(Y))
mu, sd = S.mean(0), S.std(0) + 1e-6
St = torch.tensor((S - mu) / sd).float()
I, Y, St = I.to(dev), Y.to(dev), St.to(dev)
print(f'{task}: {len(Y)} frames at {size} px rendered in {time.time() - T0:.0f} s', flush=True)

class ViT(nn.Module):  # the pi05 vision tower, small, its patch tokens flattened
    def __init__(self):
        super().__init__()
        self.cfg = dataclasses.replace(M.configs['demo'], image_size=size, vision_stem=stem)
        self.tower, self.out = M.Siglip(self.cfg), nn.Linear(self.cfg.patches * self.cfg.vit_width, 1024)

    def forward(self, x):
        return self.out(self.tower(x, torch.float32).flatten(1))

def cnn():
    if vit:
        return ViT()
    return nn.Sequential(nn.Conv2d(3, 32, 5, 2, 2), nn.ReLU(), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(),
                         nn.Conv2d(64, 64, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten())

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.cams = nn.ModuleList([cnn(), cnn()])
        self.head = nn.Sequential(nn.Linear(2 * 1024 + 4 * use_state + fm * (4 * H + 1), 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                  nn.Linear(512, 4 * H))
        self.skip = nn.Linear(4 * H, 4 * H) if fm and skip else None

    def forward(self, img, st, xt=None, repeat=1, keep=None):
        x = img.float() / 127.5 - 1
        f = [c(x[:, k]) for k, c in enumerate(self.cams)]
        if table_only:
            f[1] = f[1] * 0
        if keep is not None:  # camdrop: (n, 2) cameras kept
            f = [y * keep[:, k, None] for k, y in enumerate(f)]
        f += [st] if use_state else []
        if repeat > 1:  # k4shared: the features of each frame for each of its draws
            f = [y.repeat(repeat, *[1] * (y.ndim - 1)) for y in f]
        f += [xt] if fm else []
        out = self.head(torch.cat(f, -1))
        return out if self.skip is None else out + self.skip(xt[:, :-1])

net = Net().to(dev)
opt = torch.optim.Adam(net.parameters(), 1e-3)
T0 = time.time()
for step in range(steps):
    i = torch.randint(0, len(Y), (64,), device=dev)
    keep = None
    if camdrop:
        u = torch.rand(64, 2, device=dev)
        keep = ((u >= 0.3) | (u == u.max(1, keepdim=True).values)).float()
    if fm:  # x_t = t * noise + (1 - t) * actions, velocity noise - actions (pi0's convention)
        j = i.repeat(K)
        noise = torch.randn(len(j), Y.shape[1], device=dev)
        tt = (M.sample_time(len(j), device=dev) if beta else torch.rand(len(j), device=dev))[:, None]
        xt = torch.cat([tt * noise + (1 - tt) * Y[j], tt], -1)
        v = (net(I[i], St[i], xt, repeat=K, keep=keep) if shared else
             net(I[j], St[j], xt, keep=None if keep is None else keep.repeat(K, 1)))
        loss = ((v - (noise - Y[j])) ** 2).mean()
    else:
        loss = ((net(I[i], St[i], keep=keep) - Y[i]) ** 2).mean()
    opt.zero_grad(), loss.backward(), opt.step()
print(f'trained {steps} steps in {time.time() - T0:.0f} s, final train mse {loss.item():.4f}', flush=True)

gen = torch.Generator().manual_seed(0)

def act(img, st):
    if not fm:
        return net(img, st)
    a = torch.randn(1, 4 * H, generator=gen).to(dev) * (0 if det else 1)
    for k in range(n_steps):  # Euler from t = 1 (noise) to t = 0 (actions)
        a = a - net(img, st, torch.cat([a, torch.full((1, 1), 1 - k / n_steps, device=dev)], -1)) / n_steps
    return a

wins, T0 = 0, time.time()
net.eval()
for k in range(n_eval):
    env.reset(10000 + k)
    plan = []
    for t in range(sim.MAX_STEPS):
        if not plan:
            with torch.no_grad():
                img = torch.tensor(env.images()).permute(0, 3, 1, 2)[None].to(dev)
                st = torch.tensor((env.state() - mu) / sd).float()[None].to(dev)
                plan = list(act(img, st).view(H, 4).cpu().numpy()[:replan])
        if env.step(plan.pop(0)):
            wins += 1
            break
print(f'{task}: {("ViT, conv stem" if stem == "conv" else "ViT") if vit else "CNN"} behaviour cloning{(" (flow matching " + " ".join(sys.argv[5:]) + ")") if fm else ""}, {size} px, {"state + " if use_state else ""}2 cameras{" (wrist zeroed)" if table_only else " (camera dropout 0.3)" if camdrop else ""}, {len(Y)} frames, '
      f'{steps} steps: {wins} of {n_eval} closed-loop successes (seeds 10000-{10000 + n_eval - 1}), '
      f'evaluated in {time.time() - T0:.0f} s', flush=True)
