"""
Train Pi0.5 with flow matching on one GPU, many GPUs (DDP through torchrun, also multi-node) or the CPU.

    python train.py config/demo.py                                      # CPU demo on a synthetic dataset, minutes
    torchrun --standalone --nproc_per_node=8 train.py config/pi05_libero.py
    torchrun --standalone --nproc_per_node=8 train.py config/pi05_libero.py --init_from=resume   # continue
    torchrun --nnodes=2 --node_rank=0 --rdzv_backend=c10d --rdzv_endpoint=host0:29500 --nproc_per_node=8 \
        train.py config/pi05_libero.py                                   # and --node_rank=1 on the second node

The script reads top to bottom: config globals -> configurator -> distributed init -> model (build or load) -> fp8 ->
recompute -> per-layer compile -> DDP -> optimizer -> loop (lr, eval/checkpoint, micro-steps with no_sync on all but
the last, clip, step, EMA, log). The functions between the globals and the script (setup_model, make_optimizer,
prepare_micro_batch, train_step, evaluate, ...) take the config as a dict and are what bench.py imports, so the
benchmark runs exactly the trainer's code; the script itself runs only under `if __name__ == '__main__'`.

Randomness is a pure function of (seed, step): the whole global batch's noise, flow time and augmentation parameters
come from one generator seeded by (seed, step) and are sliced by each sample's position in the global batch, so a
2-process run equals a 1-process run with the same global batch and a resumed run equals an uninterrupted one.
"""
import csv
import math
import os
import re
import resource
import shutil
import time
from contextlib import nullcontext
from types import MappingProxyType

import numpy as np
import torch
import torch._dynamo
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

import data
from model import build, configs, load_pretrained, save_pretrained, trim_batch

# -----------------------------------------------------------------------------
# config: defaults, overridden by config/*.py and --key=value (configurator.py)
# I/O
out_dir = 'out'                 # ckpt_<iter>/, losses.csv, log.txt
init_from = 'scratch'           # 'scratch' | 'resume' (newest checkpoint in out_dir) | <model.safetensors or its dir>
eval_interval = 500             # iterations between evaluations (also at the start and the end); 0: never
eval_iters = 4                  # validation micro-batches per rank per evaluation
ckpt_interval = 1000            # iterations between checkpoints (and one at the end); 0: only at the end; -1: never
keep_last = 3                   # newest checkpoints kept; 0: all
log_interval = 10               # iterations between log lines (each line is one host sync)
timing_warmup = 3               # first iterations (compilation) are logged one by one and left out of the averages
# data
data_dir = 'data_cache/libero'  # a directory prepared by data.py
synthetic_episodes = 0          # >0: write a synthetic dataset of this many episodes to data_dir if it is missing
val_fraction = 0.05             # share of episodes held out for validation
prompt_format = 'pi05'          # 'pi05' (task + discretized state) | 'pi0' (task only: openpi's pi05_libero)
camera_slots = 0                # 0: the dataset's cameras; 3: openpi's fixed slots (empty ones are dropped by trim_batch)
prune_cameras = True            # drop camera slots masked in every sample before the GPU (case study section 1)
prompt_bucket = 32              # prompt padding cut to a multiple of this many slots; 0: keep max_token_len
augment = True                  # openpi's training augmentation (crop, rotate, colour jitter) on the device
# model
model_name = 'pi05'             # 'pi05' | 'demo' | 'tiny' (model.configs)
action_horizon = 50             # H, actions per chunk
max_token_len = 200             # L, prompt slots
attn = 'flex'                   # 'flex' | 'sdpa' | 'eager'
recompute = 'none'              # 'none' | 'vit' | 'full' | patterns (Pi05.set_recompute); H200, micro-batch 32:
                                # none 553 ms 96 GiB, vit 584 ms 82 GiB (bench.py); 'vit' on 80 GB GPUs
compile = True                  # per-layer torch.compile
compile_vision = True           # also compile each SigLIP layer (measured on the H200: -38 ms/step at micro-batch 32)
skip_unused = True              # skip the last layer's prefix work whose result feeds nothing; False: the reference path
batched_vision = True           # one SigLIP call over all cameras; False: one per camera (openpi)
fused_adamw = True              # fused AdamW with the clip folded into its grad_scale; False: foreach AdamW + clip_grad_norm_
fp8 = False                     # torchao float8 Linears (fp8.py), CUDA
fp8_keep_list = 'fp8_keep.txt'  # the Linears `fp8.py --validate` measured faster in fp8; '': fp8.py's static rules only
dtype = 'auto'                  # compute dtype 'bfloat16' | 'float32' | 'auto' (bf16 on CUDA, fp32 on CPU)
param_dtype = 'float32'         # 'float32' (fp32 master weights and AdamW moments) | 'bfloat16' (pure bf16, openpi torch)
loss_dims = 0                   # 0: loss over all 32 action dims (openpi); n: over the first n (LeRobot)
# batch: global batch = micro_batch * grad_accum * world size
micro_batch = 32                # samples per process per micro-step
grad_accum = 1                  # micro-steps per optimizer step
max_iters = 30000               # optimizer steps
# optimizer and schedule: openpi pi05_libero (src/openpi/training/config.py, optimizer.py; spec section 7.1)
learning_rate = 5e-5            # peak lr
decay_lr = 5e-5                 # lr at the end of the cosine decay
warmup_iters = 10000            # linear warmup from learning_rate / (warmup_iters + 1) to learning_rate
lr_decay_iters = 1_000_000      # iteration where the cosine reaches decay_lr (optax decay_steps)
beta1 = 0.9
beta2 = 0.95
eps = 1e-8
weight_decay = 1e-10            # decoupled, applied to every parameter (openpi: mask None)
grad_clip = 1.0                 # global-norm clip before the step; 0: off
ema = False                     # fp32 EMA of the weights, evaluated and saved (openpi's JAX trainer; +4 bytes/param)
ema_decay = 0.999
# system
device = 'auto'                 # 'auto' (cuda if available) | 'cuda' | 'cpu'
ddp_bucket_mb = 0               # DDP gradient bucket size, MiB; 0: one joint layer's gradients, so buckets follow layers
peak_tflops = 0.0               # per-GPU bf16 peak for MFU; 0: measure a bf16 matmul at startup (CUDA), n/a on CPU
sample_steps = 10               # Euler steps of sample_actions in evaluation
seed = 42
# -----------------------------------------------------------------------------
_DEFAULTS = {k: v for k, v in globals().items() if not k.startswith('_') and isinstance(v, (bool, int, float, str))}

# -----------------------------------------------------------------------------
# the pieces of training, shared with bench.py (they read the config from a dict, never from globals)


def default_config():
    """The defaults above as a dict (what bench.py starts from before changing keys)."""
    return dict(_DEFAULTS)


def check_config(conf):
    unknown = sorted(set(conf) - set(_DEFAULTS))
    if unknown:
        raise KeyError(f"unknown config keys {unknown}; train.py knows {sorted(_DEFAULTS)}")
    for key, allowed in (('attn', ('flex', 'sdpa', 'eager')), ('dtype', ('auto', 'bfloat16', 'float32')),
                         ('param_dtype', ('float32', 'bfloat16')), ('prompt_format', ('pi05', 'pi0'))):
        if conf[key] not in allowed:
            raise ValueError(f"{key}={conf[key]!r}: expected one of {allowed}")


def compute_dtype_of(conf, device):
    if conf['dtype'] == 'auto':
        return torch.bfloat16 if str(device).startswith('cuda') else torch.float32
    return getattr(torch, conf['dtype'])


def setup_model(conf, device, weights=None):
    """Build the model exactly as training does: build (fresh init, or weights loaded from `weights` / a path in
    init_from) -> param dtype -> fp8 -> recompute -> per-layer compile -> DDP (when torch.distributed is
    initialized). Returns (model, raw): model is what to call (maybe DDP), raw the Pi05 inside."""
    check_config(conf)
    if weights is None and conf['init_from'] not in ('scratch', 'resume'):
        weights = conf['init_from']
    raw = build(conf['model_name'], device, attn=conf['attn'], compute_dtype=compute_dtype_of(conf, device),
                init_from=weights, skip_unused=conf['skip_unused'], action_horizon=conf['action_horizon'],
                max_token_len=conf['max_token_len'])
    raw.batched_vision = conf['batched_vision']
    if conf['param_dtype'] == 'bfloat16':
        raw.set_param_dtype(torch.bfloat16)
    if conf['fp8']:
        import fp8  # torchao, only when asked for
        quiet = dist.is_available() and dist.is_initialized() and dist.get_rank() > 0
        # _scaled_mm's weight-gradient GEMM contracts over tokens, which must be a multiple of 16, else pad
        aligned = fp8.rows_aligned(raw.cfg, conf['micro_batch'], prompt_slots=conf['prompt_bucket'] or conf['max_token_len'])
        keep = conf['fp8_keep_list']
        if keep and not os.path.exists(keep):  # a relative name: the file next to train.py
            keep = os.path.join(os.path.dirname(os.path.abspath(__file__)), keep)
        fp8.convert_to_fp8(raw, keep_list=keep or None, pad_inner_dim=not aligned, verbose=not quiet)
    raw.set_recompute(conf['recompute'])
    if conf['compile']:
        # per-layer compile already splits the graph for DDP's buckets; DDPOptimizer would compile around the
        # compiled layers and crash on FakeTensors (case study section 5.1)
        torch._dynamo.config.optimize_ddp = False
        # each prompt bucket (up to max_token_len / prompt_bucket lengths) and each eval batch shape is one more
        # compiled variant of the same layer code: keep them all instead of falling back to eager after 8
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
        raw.compile_layers(vision=conf['compile_vision'])
    model = raw
    if dist.is_available() and dist.is_initialized():
        cuda = str(device).startswith('cuda')
        # frozen parameters never get a gradient, so no find_unused_parameters (and its graph walk every step)
        model = DDP(raw, device_ids=[torch.device(device).index] if cuda else None,
                    bucket_cap_mb=conf['ddp_bucket_mb'] or layer_grad_mib(raw), gradient_as_bucket_view=True)
    return model, raw


def layer_grad_mib(raw):
    """Gradient bytes of one joint layer (both streams): the bucket size at which DDP's buckets follow the layers,
    each all-reduced as soon as that compiled layer's backward has produced it (case study section 5.3)."""
    return sum(p.numel() * p.element_size() for p in raw.layers[0].parameters() if p.requires_grad) / 2 ** 20


def make_optimizer(raw, conf):
    """AdamW over the trainable parameters. Moments take each parameter's dtype: fp32 with fp32 master weights (the
    default). fused_adamw: one fused kernel (CUDA and CPU) that also applies the gradient clip (train_step);
    otherwise torch's default multi-tensor AdamW, as openpi's trainer uses it."""
    params = [p for p in raw.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=conf['learning_rate'], betas=(conf['beta1'], conf['beta2']), eps=conf['eps'],
                             weight_decay=conf['weight_decay'], fused=conf['fused_adamw'] or None)


def lr_at(it, conf):
    """optax warmup_cosine_decay_schedule (openpi CosineDecaySchedule; spec section 7.1)."""
    peak, warmup, end = conf['learning_rate'], conf['warmup_iters'], conf['decay_lr']
    if it < warmup:
        lr0 = peak / (warmup + 1)
        return lr0 + (peak - lr0) * it / warmup
    frac = min(1.0, (it - warmup) / max(1, conf['lr_decay_iters'] - warmup))
    return end + (peak - end) * 0.5 * (1 + math.cos(math.pi * frac))


def step_generator(seed, it, device, stream=0):
    """A generator on `device` seeded by (seed, stream, it): stream 0 trains, stream 1 evaluates."""
    key = int(np.random.SeedSequence([seed, stream, it]).generate_state(1, np.uint64)[0])
    return torch.Generator(device=device).manual_seed(key)


def draw_randomness(gen, G, horizon, action_dim, n_slots, augment):
    """Noise (G, H, A), flow time (G,) and augmentation parameters for a whole global batch of G samples.
    t = 0.999 * Beta(1.5, 1) + 0.001; Beta(1.5, 1) has CDF x^1.5, so U^(2/3) samples it exactly (openpi pi0.py)."""
    dev = gen.device
    noise = torch.randn(G, horizon, action_dim, generator=gen, device=dev)
    t = torch.rand(G, generator=gen, device=dev) ** (2.0 / 3.0) * 0.999 + 0.001
    aug = data.sample_augment_params(G, n_slots, generator=gen, device=dev) if augment else None
    return noise, t, aug


def trim_micro_batch(batch, conf, wrist=None):
    """The CPU side of a micro-batch, run on the loader's prefetch thread (data.Loader transform): model.trim_batch
    drops camera slots masked in every sample and prompt padding beyond the bucket. Adds 'slots' (the kept camera
    slots, to slice augmentation parameters), 'n_slots' and 'wrist' (the kept slots' wrist flags; default openpi's
    slot order: base camera, then wrist cameras)."""
    n_slots = batch['images'].shape[1]
    wrist = list(wrist) if wrist is not None else [i > 0 for i in range(n_slots)]
    keep = batch['image_mask'].any(0) if conf['prune_cameras'] else torch.ones(n_slots, dtype=torch.bool)
    kept = keep.nonzero()[:, 0]  # the slots trim_batch keeps
    out = trim_batch(batch, bucket=conf['prompt_bucket'], cameras=conf['prune_cameras'])
    out.update(slots=kept, n_slots=n_slots, wrist=tuple(wrist[i] for i in kept.tolist()))
    return out


def prepare_micro_batch(batch, conf, device, wrist=None):
    """A CPU micro-batch -> trimmed (unless the loader thread did it) -> on the device without blocking."""
    if 'slots' not in batch:
        batch = trim_micro_batch(batch, conf, wrist)
    return {k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()}


def train_step(model, raw, optimizer, micro_batches, conf, lr, gen):
    """One optimizer step over this process's prepared micro-batches. The global batch's randomness is drawn from
    `gen` and sliced by each sample's `sample_id`. Returns the mean loss and the pre-clip gradient norm as device
    tensors: nothing here waits for the device."""
    A = len(micro_batches)
    mb0 = micro_batches[0]
    world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
    G = mb0['actions'].shape[0] * A * world
    noise, t, aug = draw_randomness(gen, G, raw.cfg.action_horizon, raw.cfg.action_dim, mb0['n_slots'], conf['augment'])
    for group in optimizer.param_groups:
        group['lr'] = lr
    total = 0.0
    for i, mb in enumerate(micro_batches):
        sid = mb['sample_id']
        batch = dict(mb)
        if aug is not None:
            params = {k: v[sid][:, mb['slots']] for k, v in aug.items()}
            batch['images'] = data.augment_images(mb['images'], mb['wrist'], params)
        sync = nullcontext() if i == A - 1 or not isinstance(model, DDP) else model.no_sync()
        with sync:  # gradients are all-reduced only on the last micro-step
            loss = model(batch, noise=noise[sid], time=t[sid], loss_dims=conf['loss_dims']) / A
            loss.backward()
        total = total + loss.detach()
    params = [p for p in raw.parameters() if p.grad is not None]
    if optimizer.defaults.get('fused'):
        # the clip rides in the fused kernel: it divides every gradient by grad_scale as it reads it, which saves a
        # pass over all gradients; a non-finite norm sets found_inf and the kernel leaves the weights untouched
        gnorm = torch.nn.utils.get_total_norm([p.grad for p in params])
        if conf['grad_clip'] > 0:  # clip_grad_norm_'s coefficient: max_norm / (norm + 1e-6), at most 1
            optimizer.grad_scale = 1.0 / (conf['grad_clip'] / (gnorm + 1e-6)).clamp(max=1.0)
        optimizer.found_inf = (~torch.isfinite(gnorm)).float()
    elif conf['grad_clip'] > 0:
        gnorm = torch.nn.utils.clip_grad_norm_(params, conf['grad_clip'])
    else:
        gnorm = torch.nn.utils.get_total_norm([p.grad for p in params])
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return total, gnorm


class EMA:
    """Exponential moving average of the trainable weights, kept in fp32 in an eager copy of the model
    (openpi JAX: ema = decay * ema + (1 - decay) * params after every step, initialised to the loaded weights)."""

    def __init__(self, raw, decay, attn):
        self.decay = decay
        self.model = build(raw.cfg, raw.embed_tokens.weight.device, attn=attn, compute_dtype=raw.compute_dtype)
        self.model.requires_grad_(False)
        self.model.load_state_dict(raw.state_dict())  # same keys after fp8 and in-place compile; cast to fp32
        mine = dict(self.model.named_parameters())
        pairs = [(mine[n], p) for n, p in raw.named_parameters() if p.requires_grad]
        self.dst, self.src = [d for d, _ in pairs], [s for _, s in pairs]

    @torch.no_grad()
    def update(self):
        src = [s if s.dtype == torch.float32 else s.float() for s in self.src]
        torch._foreach_lerp_(self.dst, src, 1.0 - self.decay)


@torch.no_grad()
def evaluate(raw, loader, conf, device, n_iters):
    """Validation loss with fixed noise and time (the same in every evaluation, so evaluations compare) and the
    open-loop action error of sample_actions: MSE in the dataset's action units over the real action dims and the
    valid chunk positions. Every process takes its share of n_iters global batches; sums are all-reduced."""
    sums, n = torch.zeros(3, dtype=torch.float64, device=device), 0  # loss * B, squared error, valid positions
    for i in range(n_iters):
        for mb in loader.get(i):  # get() leaves the loader's position alone
            mb = prepare_micro_batch(mb, conf, device, loader.wrist)
            gen = step_generator(conf['seed'], i, device, stream=1)
            G, H, A = loader.global_batch, raw.cfg.action_horizon, raw.cfg.action_dim
            noise, t, _ = draw_randomness(gen, G, H, A, 0, False)
            x1 = torch.randn(G, H, A, generator=gen, device=device)  # sampling starts from this noise
            sid, B = mb['sample_id'], mb['actions'].shape[0]
            loss = raw(mb, noise=noise[sid], time=t[sid], loss_dims=conf['loss_dims'])
            pred = raw.sample_actions(mb, noise=x1[sid], num_steps=conf['sample_steps'])
            err = (loader.unnormalize_actions(pred.float()) - loader.unnormalize_actions(mb['actions'].float())) ** 2
            valid = mb['action_mask'].double()
            sums += torch.stack([loss.double() * B, (err.mean(-1).double() * valid).sum(), valid.sum()])
            n += B
    sums = torch.cat([sums, sums.new_tensor([n])])
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(sums)
    loss_sum, sq, count, n = sums.tolist()
    return loss_sum / n, sq / max(count, 1.0)


def measure_matmul_tflops(device, n=8192, iters=20):
    """Sustained bf16 matmul TFLOP/s of this GPU, measured now (MFU is quoted against it)."""
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    for _ in range(iters):
        a @ b
    torch.cuda.synchronize(device)
    return 2 * n ** 3 * iters / (time.perf_counter() - t0) / 1e12


def tflops_str(x):
    return f'{x:.0f}' if x >= 100 else f'{x:.3g}'


def memory_gib(device):
    """(peak used, total) GiB: CUDA allocator peak and device memory, or the process's peak RSS and the RAM."""
    if str(device).startswith('cuda'):
        return torch.cuda.max_memory_allocated(device) / 2 ** 30, torch.cuda.get_device_properties(device).total_memory / 2 ** 30
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return rss / 2 ** 30, os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2 ** 30

# -----------------------------------------------------------------------------
# checkpoints: out_dir/ckpt_<iter>/{model.safetensors, ema.safetensors, state.pt}, each directory complete or absent


def list_checkpoints(out_dir):
    """[(iter, path)] of the complete checkpoints in out_dir, oldest first."""
    found = []
    for name in os.listdir(out_dir) if os.path.isdir(out_dir) else []:
        m = re.fullmatch(r'ckpt_(\d+)', name)
        if m and os.path.exists(os.path.join(out_dir, name, 'state.pt')):
            found.append((int(m.group(1)), os.path.join(out_dir, name)))
    return sorted(found)


def _fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(out_dir, it, raw, ema_model, state, keep_last):
    """Write the files into a temporary directory, fsync, then rename it into place: a crash leaves either the
    whole checkpoint or none. Then delete all but the newest keep_last."""
    final = os.path.join(out_dir, f'ckpt_{it}')
    tmp = os.path.join(out_dir, f'.tmp_ckpt_{it}')
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    save_pretrained(raw, tmp)  # model.safetensors in openpi's key format
    if ema_model is not None:
        save_pretrained(ema_model, os.path.join(tmp, 'ema.safetensors'))
    with open(os.path.join(tmp, 'state.pt'), 'wb') as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    _fsync(tmp)
    if os.path.exists(final):  # re-saving an iteration: move the old one aside first (rename is atomic)
        os.replace(final, tmp + '.old')
    os.replace(tmp, final)
    _fsync(out_dir)
    shutil.rmtree(tmp + '.old', ignore_errors=True)
    if keep_last:
        for _, old in list_checkpoints(out_dir)[:-keep_last]:
            shutil.rmtree(old)
    return final

# -----------------------------------------------------------------------------
# the training script


CSV_FIELDS = ['iter',  # row `iter`: measured on the weights after `iter` optimizer steps (lr: of the step from there)
              'loss', 'lr', 'gnorm', 'val_loss', 'action_mse', 'ema_val_loss', 'ema_action_mse']

if __name__ == '__main__':
    exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'configurator.py')).read())
    config = MappingProxyType({k: globals()[k] for k in _DEFAULTS})  # frozen: printed, logged, checkpointed
    check_config(config)

    # distributed init: torchrun sets RANK, LOCAL_RANK and WORLD_SIZE (also across nodes); without it, one process
    ddp = 'RANK' in os.environ
    rank, local_rank, world_size = ((int(os.environ['RANK']), int(os.environ['LOCAL_RANK']), int(os.environ['WORLD_SIZE']))
                                    if ddp else (0, 0, 1))
    master = rank == 0
    if device == 'auto':
        device = 'cuda' if torch.cuda.is_available() else 'cpu'
    cuda = device.startswith('cuda')
    if cuda:
        device = f'cuda:{local_rank}' if device == 'cuda' else device  # one GPU per process
        torch.cuda.set_device(device)
        # bf16-valued fp32 operands are exact in TF32, and TF32 is JAX's default fp32 matmul precision on GPU
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    if ddp:
        dist.init_process_group('nccl' if cuda else 'gloo')
    G = micro_batch * grad_accum * world_size  # global batch
    torch.manual_seed(seed)  # fresh init is identical on every process (DDP broadcasts rank 0's weights anyway)

    if master:
        os.makedirs(out_dir, exist_ok=True)
        for name in os.listdir(out_dir):  # temporary directories of checkpoints a crash interrupted
            if name.startswith('.tmp_ckpt_'):
                shutil.rmtree(os.path.join(out_dir, name), ignore_errors=True)
    log_path = os.path.join(out_dir, 'log.txt')

    def log(msg):
        if master:
            tqdm.write(msg)
            with open(log_path, 'a') as f:
                f.write(msg + '\n')

    gpu = torch.cuda.get_device_name(device) if cuda else f'cpu ({torch.get_num_threads()} threads)'
    log(f"== train.py {time.strftime('%Y-%m-%d %H:%M:%S')} | torch {torch.__version__} | {gpu} | "
        f"world size {world_size} | global batch {G} = {micro_batch} x {grad_accum} x {world_size}")
    log('\n'.join(f'{k} = {v!r}' for k, v in config.items()))

    # data (the synthetic dataset is written once, by rank 0, when data_dir has none)
    if synthetic_episodes and master and not os.path.exists(os.path.join(data_dir, 'meta.json')):
        log(f'writing a synthetic dataset of {synthetic_episodes} episodes to {data_dir}')
        data.make_synthetic(data_dir, episodes=synthetic_episodes, image_size=configs[model_name].image_size,
                            seed=0, max_token_len=max_token_len)
    if ddp:
        dist.barrier()

    # model: build or load -> fp8 -> recompute -> per-layer compile -> DDP
    ckpt = None
    if init_from == 'resume':
        found = list_checkpoints(out_dir)
        if not found:
            raise SystemExit(f"init_from='resume' but {out_dir} holds no checkpoint (ckpt_<iter>/state.pt)")
        ckpt = found[-1][1]
        state = torch.load(os.path.join(ckpt, 'state.pt'), map_location='cpu', weights_only=True)
        changed = {k: (state['config'].get(k), v) for k, v in config.items() if state['config'].get(k) != v}
        log(f'resuming from {ckpt}' + (f'; config changed since: {changed}' if changed else ''))
    model, raw_model = setup_model(config, device, weights=ckpt)
    n_params = sum(p.numel() for p in raw_model.parameters())
    n_train = sum(p.numel() for p in raw_model.parameters() if p.requires_grad)
    log(f'{model_name}: {n_params / 1e6:.1f}M parameters, {n_train / 1e6:.1f}M trained')
    ema_model = None
    if ema:  # eval attention without a BlockMask for the eager copy
        ema_model = EMA(raw_model, ema_decay, attn='sdpa' if attn == 'flex' else attn)
        if ckpt:
            load_pretrained(ema_model.model, os.path.join(ckpt, 'ema.safetensors'))
    optimizer = make_optimizer(raw_model, config)
    start_iter, best_val_loss = 0, float('inf')
    if ckpt:
        optimizer.load_state_dict(state['optimizer'])
        start_iter, best_val_loss = state['iter'], state['best_val_loss']
        torch.set_rng_state(state['rng']['torch'])
        if cuda and state['rng'].get('cuda') is not None:
            torch.cuda.set_rng_state(state['rng']['cuda'])

    loader_kw = dict(rank=rank, world_size=world_size, seed=seed, horizon=action_horizon,
                     action_dim=raw_model.cfg.action_dim, prompt_format=prompt_format, camera_slots=camera_slots or None,
                     val_fraction=val_fraction, token_len=max_token_len,
                     transform=lambda b, wrist: trim_micro_batch(b, config, wrist))
    loader = data.Loader(data_dir, 'train', micro_batch, grad_accum, start_step=start_iter, **loader_kw)
    val_loader = data.Loader(data_dir, 'val', micro_batch, 1, prefetch=0, **loader_kw)
    log(f'data: {data_dir}, {len(loader.frames)} train / {len(val_loader.frames)} val frames, cameras '
        f"{loader.meta['cameras']} in {loader.camera_slots} slots, prompt '{prompt_format}'")
    if peak_tflops == 0 and cuda:
        peak_tflops = measure_matmul_tflops(device)
        log(f'bf16 matmul peak measured: {peak_tflops:.0f} TFLOP/s')

    # losses.csv: on resume, keep the rows before the checkpoint, so it reads as one uninterrupted run
    csv_path = os.path.join(out_dir, 'losses.csv')
    if master:
        rows = []
        if ckpt and os.path.exists(csv_path):
            with open(csv_path) as f:
                rows = [r for r in csv.DictReader(f) if int(r['iter']) < start_iter]
        with open(csv_path, 'w', newline='') as f:
            w = csv.DictWriter(f, CSV_FIELDS)
            w.writeheader()
            w.writerows(rows)

    pending = []   # (iter, lr, loss, gnorm) with device tensors, read at the next sync
    evals = {}     # iter -> eval columns, written with that iteration's row
    interval = []  # (iter, loss, gnorm) read since the last log line

    def write_rows(rows):
        if master:
            with open(csv_path, 'a', newline='') as f:
                csv.DictWriter(f, CSV_FIELDS).writerows(rows)

    def flush():
        """The one host sync: read the pending losses and gradient norms (loss averaged over processes), write
        their rows, and stop on a non-finite value before anything else (a checkpoint above all) is written."""
        if not pending:
            return
        losses = torch.stack([p[2] for p in pending]).float()
        if ddp:
            dist.all_reduce(losses)
            losses /= world_size
        values = torch.stack([losses, torch.stack([p[3] for p in pending]).float()], 1).tolist()
        rows, bad = [], None
        for (it, lr, _, _), (loss, gnorm) in zip(pending, values):
            rows.append(dict(iter=it, loss=repr(loss), lr=repr(lr), gnorm=repr(gnorm), **evals.pop(it, {})))
            interval.append((it, loss, gnorm))
            if bad is None and not (math.isfinite(loss) and math.isfinite(gnorm)):
                bad = (it, loss, gnorm)
        pending.clear()
        write_rows(rows)
        if bad:
            good = list_checkpoints(out_dir)
            msg = (f'non-finite loss {bad[1]} / gradient norm {bad[2]} at iter {bad[0]}: stopping. '
                   f"last good checkpoint: {good[-1][1] if good else 'none'} (nothing written after iter {bad[0]})")
            if master:
                with open(log_path, 'a') as f:
                    f.write(msg + '\n')
            raise SystemExit(msg)

    # -------------------------------------------------------------------------
    # the loop
    it = start_iter
    bar = tqdm(total=max_iters, initial=start_iter, disable=None if master else True, dynamic_ncols=True, mininterval=2)  # None: off when not a terminal
    t_run = time.perf_counter()
    t_mark, wait_mark, flops_mark, last_log = time.perf_counter(), loader.wait_time, 0, start_iter
    flops_since = 0
    steady = dict(iters=0, seconds=0.0, flops=0)  # post-warm-up totals for the summary
    warmup_seconds = 0.0
    last_eval = None
    while True:
        paused = time.perf_counter()
        if eval_interval and (it % eval_interval == 0 or it == max_iters):
            fp8_off = nullcontext()
            if fp8:
                import fp8 as fp8_lib
                fp8_off = fp8_lib.fp8_disabled(raw_model)
            with fp8_off:
                val_loss, action_mse = evaluate(raw_model, val_loader, config, device, eval_iters)
            row = dict(val_loss=repr(val_loss), action_mse=repr(action_mse))
            msg = f'eval iter {it} | val loss {val_loss:.4f} | action mse {action_mse:.4g}'
            if ema_model:
                ema_loss, ema_mse = evaluate(ema_model.model, val_loader, config, device, eval_iters)
                row.update(ema_val_loss=repr(ema_loss), ema_action_mse=repr(ema_mse))
                msg += f' | ema val loss {ema_loss:.4f} | ema action mse {ema_mse:.4g}'
            evals[it] = row
            best_val_loss = min(best_val_loss, val_loss)
            last_eval = (val_loss, action_mse)
            log(msg)
        if it > start_iter and ckpt_interval >= 0 and ((ckpt_interval and it % ckpt_interval == 0) or it == max_iters):
            flush()  # never checkpoint weights that saw a non-finite step
            if master:
                state = {'iter': it, 'optimizer': optimizer.state_dict(), 'config': dict(config),
                         'loader': loader.state_dict(), 'best_val_loss': best_val_loss,
                         'rng': {'torch': torch.get_rng_state(), 'cuda': torch.cuda.get_rng_state() if cuda else None},
                         'torch_version': str(torch.__version__)}
                path = save_checkpoint(out_dir, it, raw_model, ema_model.model if ema_model else None, state, keep_last)
                log(f'saved {path}')
            if ddp:
                dist.barrier()
        t_mark += time.perf_counter() - paused  # evaluation and checkpoints are not step time
        if it >= max_iters:
            break

        # one optimizer step
        lr = lr_at(it, config)
        micro_batches = [prepare_micro_batch(b, config, device, loader.wrist) for b in next(loader)]
        flops_since += sum(raw_model.estimate_flops(mb) for mb in micro_batches)
        loss, gnorm = train_step(model, raw_model, optimizer, micro_batches, config, lr, step_generator(seed, it, device))
        if ema_model:
            ema_model.update()
        pending.append((it, lr, loss, gnorm))
        it += 1
        bar.update(1)

        warming = it - start_iter <= timing_warmup
        if warming or it % log_interval == 0 or it == max_iters:
            flush()
            now = time.perf_counter()
            n, dt = it - last_log, now - t_mark
            data_pct = 100 * (loader.wait_time - wait_mark) / dt
            tflops = flops_since / dt / 1e12
            mfu = f'{100 * tflops / peak_tflops:.1f}%' if peak_tflops else 'n/a'
            used, total = memory_gib(device)
            mean_loss = sum(r[1] for r in interval) / len(interval)
            log(f'iter {it}/{max_iters} | loss {mean_loss:.4f} | lr {lr:.1e} | gnorm {interval[-1][2]:.2f} | '
                f'{1000 * dt / n:.1f} ms | data {data_pct:.0f}% | {n * G / dt:.1f} samples/s | '
                f'{tflops_str(tflops)} TFLOP/s/gpu | mfu {mfu} | mem {used:.1f}/{total:.1f} GiB')
            if warming:
                warmup_seconds += dt
            else:
                steady['iters'] += n
                steady['seconds'] += dt
                steady['flops'] += flops_since
            interval.clear()
            t_mark, wait_mark, flops_since, last_log = now, loader.wait_time, 0, it
    bar.close()
    flush()
    write_rows([dict(iter=k, **v) for k, v in sorted(evals.items())])  # the evaluation after the last step

    # summary
    s = steady
    if s['iters']:
        tf = s['flops'] / s['seconds'] / 1e12
        speed = (f"{1000 * s['seconds'] / s['iters']:.1f} ms/iter | {s['iters'] * G / s['seconds']:.1f} samples/s | "
                 f"{tflops_str(tf)} TFLOP/s/gpu | mfu {f'{100 * tf / peak_tflops:.1f}%' if peak_tflops else 'n/a'}")
    else:
        speed = 'no iterations after the warm-up'
    final = f' | final val loss {last_eval[0]:.4f} | final action mse {last_eval[1]:.4g}' if last_eval else ''
    log(f'done: {it - start_iter} iters in {time.perf_counter() - t_run:.1f} s ({warmup_seconds:.1f} s warm-up) | {speed} '
        f'| best val loss {best_val_loss:.4f}{final} | peak mem {memory_gib(device)[0]:.1f} GiB')
    loader.close()
    if ddp:
        dist.destroy_process_group()
