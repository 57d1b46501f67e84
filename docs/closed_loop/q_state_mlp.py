"""Is 50 demonstrations' worth of push-v3 / pick-place-v3 / reach-v3 learnable by plain behaviour cloning when the
policy is given the exact state? An MLP (2 x 256, ReLU) regresses the expert's next H actions from hand xyz, gripper,
object xyz and goal xyz (the oracle state, no images), trained on 50 expert episodes (seeds 0-49, MSE, Adam, 3000
steps), then runs closed loop like eval.py (execute `replan` actions of each chunk, stop at success, 400 steps) on
seeds 10000+. No rendering: well under a minute per run on a 2-core CPU.
With input 'onehot' each value is first cut into 256 bins over its 1-99% quantile range, as the pi05 prompt does,
and given as a one-hot vector (the bins' order unknown to the network, as for a model that learns embeddings for the
word tokens '0'..'255' from scratch); 'ordinal': the same, the first layer starting from a code that is close for
close bins and then trained (as p_ordinal_state.patch does to the token embeddings); 'onehot_hand': one-hot bins for
the four values of the real state (hand xyz, gripper), numbers for the object's and goal's; 'digits': each bin
number's three decimal digits one-hot (what a tokenizer that splits digits, as Gemma's does, makes of it); 'fourier': such a code (64
random Fourier features per value, 0.25 to `top` periods over the 256 bins) as fixed input features.
With 'fm' last, the MLP is a flow-matching head as pi05's (it also sees the noisy chunk and the time, learns the
velocity noise - actions, and samples with 10 Euler steps from Gaussian noise, a fresh draw per request from seed 0)
instead of a regression.
    python docs/closed_loop/q_state_mlp.py <task> [H] [replan] [episodes] [exact|onehot|onehot_hand|ordinal|fourier|digits] [top] [fm]"""
import os
import sys

import numpy as np
import torch

os.environ.setdefault('MUJOCO_GL', 'osmesa')
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import data  # noqa: E402
import sim  # noqa: E402

task = sys.argv[1]
H, replan, n_eval = (int(a) for a in (sys.argv[2:5] + ['10', '5', '20'][len(sys.argv[2:5]):]))
mode = (sys.argv[5:6] or ['exact'])[0]
env = sim.MetaWorld(task, 32)

def state():
    return np.concatenate([env.obs[:7], np.asarray(env.env._target_pos)]).astype(np.float32)

X, Y = [], []
for seed in range(50):
    env.reset(seed)
    s, a = [], []
    for _ in range(sim.MAX_STEPS):
        s.append(state()), a.append(env.expert_action())
        if env.step(a[-1]):
            break
    a = np.array(a + [a[-1]] * H)  # chunks past the end repeat the last action
    X += s
    Y += [a[t:t + H].ravel() for t in range(len(s))]
X, Y = np.array(X), torch.tensor(np.array(Y))
q01, q99 = np.quantile(X, 0.01, 0), np.quantile(X, 0.99, 0)

g = torch.Generator().manual_seed(0)
top = float((sys.argv[6:7] or ['64'])[0])  # 'fourier': the code's fastest variation, periods over the 256 bins
cycles = torch.empty(64).uniform_(np.log(0.25), np.log(top), generator=g).exp()
CODE = torch.cos(2 * np.pi * cycles * torch.arange(256.0)[:, None] / 256 + torch.rand(64, generator=g) * 2 * np.pi)

mu_x, sd_x = X.mean(0), X.std(0) + 1e-6

def features(x):
    """numbers standardised; bins one-hot (0/1, not standardised: a bin unseen in training stays a plain 1) or coded"""
    x, cols = np.asarray(x, np.float32), []
    for d in range(x.shape[-1]):
        if mode == 'exact' or (mode == 'onehot_hand' and d >= 4):
            cols.append(torch.tensor((x[..., d:d + 1] - mu_x[d]) / sd_x[d]))
            continue
        b = torch.tensor(np.clip(data.discretize_state(2 * (x[..., d] - q01[d]) / (q99[d] - q01[d] + 1e-8) - 1), 0, 255))
        if mode == 'digits':  # the bin's three decimal digits, each one-hot (a tokenizer that splits digits)
            cols += [torch.nn.functional.one_hot(b // 10 ** p % 10, 10).float() for p in (2, 1, 0)]
            continue
        cols.append(CODE[b] if mode == 'fourier' else torch.nn.functional.one_hot(b, 256).float())
    return torch.cat(cols, -1).float()

X = features(X)
fm = sys.argv[7:8] == ['fm']
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(X.shape[1] + fm * (Y.shape[1] + 1), 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
                          torch.nn.Linear(256, Y.shape[1]))
if mode == 'ordinal':  # the first layer (an embedding per bin, summed) starts as model.init_ordinal_embeddings's code
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for d in range(X.shape[1] // 256):
            cycles = torch.empty(256).uniform_(np.log(0.25), np.log(64), generator=g).exp()
            phase = torch.rand(256, generator=g) * 2 * np.pi
            code = torch.cos(2 * np.pi * cycles * torch.arange(256.0)[:, None] / 256 + phase)  # (bin, unit)
            net[0].weight[:, d * 256:(d + 1) * 256] = code.T * (2 / X.shape[1] * 256) ** 0.5 / 10
opt = torch.optim.Adam(net.parameters(), 1e-3)
for step in range(int(os.environ.get('Q_STEPS', 3000))):  # Q_STEPS: fewer passes over the frames
    i = torch.randint(0, len(X), (256,))
    if fm:  # x_t = t * noise + (1 - t) * actions, velocity noise - actions (pi0's convention)
        noise, tt = torch.randn(len(i), Y.shape[1]), torch.rand(len(i), 1)
        loss = ((net(torch.cat([X[i], tt * noise + (1 - tt) * Y[i], tt], -1)) - (noise - Y[i])) ** 2).mean()
    else:
        loss = ((net(X[i]) - Y[i]) ** 2).mean()
    opt.zero_grad(), loss.backward(), opt.step()
gen = torch.Generator().manual_seed(0)

def act(x):
    if not fm:
        return net(x)
    a = torch.randn(Y.shape[1], generator=gen)
    for k in range(10):  # Euler from t = 1 (noise) to t = 0 (actions)
        a = a - 0.1 * net(torch.cat([x, a, torch.tensor([1 - 0.1 * k])]))
    return a

wins = 0
for k in range(n_eval):
    env.reset(10000 + k)
    plan = []
    for t in range(sim.MAX_STEPS):
        if not plan:
            with torch.no_grad():
                plan = list(act(features(state())).view(H, 4).numpy()[:replan])
        if env.step(plan.pop(0)):
            wins += 1
            break
print(f'{task}: input {mode}{" top " + str(top) if mode == "fourier" else ""}{", flow matching" if fm else ""}, {len(X)} frames, final train mse {loss.item():.4f}, H {H}, replan {replan}: {wins} of {n_eval} '
      f'closed-loop successes (seeds 10000-{10000 + n_eval - 1})', flush=True)
