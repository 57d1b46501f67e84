"""
Train Pi0.5 with flow matching on one GPU, many GPUs (DDP through torchrun, also multi-node) or the CPU.

    python train.py config/demo.py                                      # CPU demo on a synthetic dataset, minutes
    torchrun --standalone --nproc_per_node=8 train.py config/pi05_libero.py
    torchrun --standalone --nproc_per_node=8 train.py config/pi05_libero.py --init_from=resume   # continue
    torchrun --nnodes=2 --node_rank=0 --rdzv_backend=c10d --rdzv_endpoint=host0:29500 --nproc_per_node=8 \\
        train.py config/pi05_libero.py                                   # and --node_rank=1 on the second node

The script at the bottom reads top to bottom: config -> distributed init -> data -> model (build or load) -> fp8 ->
recompute -> per-layer compile -> DDP -> optimizer -> loop (eval/checkpoint, micro-steps with no_sync on all but the
last, clip, step, EMA, log). The functions above it take the config as a dict and are what bench.py imports, so the
benchmark runs exactly the trainer's code.

Randomness is a pure function of (seed, step, sample): the whole global batch's noise, flow time and augmentation
parameters come from one generator seeded by (seed, step) and are sliced by each sample's position in the global
batch, so a 2-process run equals a 1-process run with the same global batch and a resumed run an uninterrupted one.
"""
import csv
import math
import os
import resource
import time
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from types import MappingProxyType

import numpy as np
import torch
import torch._dynamo
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.profiler import record_function
from tqdm import tqdm

import checkpoint
import data
import memory
import model as M
import sim

# -----------------------------------------------------------------------------
# config: defaults, overridden by config/*.py and --key=value (configurator.py)
# I/O
out_dir = 'out'                 # ckpt_<iter>/, losses.csv, log.txt
init_from = 'scratch'           # 'scratch' | 'resume' (newest checkpoint in out_dir) | <model.safetensors or its dir>
                                # | <a run's out_dir> (its newest good checkpoint's weights)
eval_interval = 500             # iterations between evaluations (also at the start and the end); 0: never
eval_iters = 4                  # validation global batches per evaluation
ckpt_interval = 1000            # iterations between checkpoints (and one at the end); 0: only at the end; -1: never
keep_last = 3                   # newest checkpoints kept; 0: all
log_interval = 10               # iterations between log lines (each line is one host sync)
timing_warmup = 3               # first iterations (compilation) are logged one by one and left out of the averages
# data
data_dir = 'data_cache/libero'  # a directory prepared by prepare.py (or sim.py)
synthetic_episodes = 0          # >0: write a synthetic dataset of this many episodes to data_dir if it is missing
synthetic_objects = 3           # objects per synthetic scene: 3 (the instruction names one) | 1 (the image suffices)
val_fraction = 0.05             # share of episodes held out for validation
prompt_format = 'pi05'          # 'pi05' (task + discretized state) | 'pi0' (task only: openpi's pi05_libero)
prompt_bucket = 32              # prompt padding cut to a multiple of this many slots; 0: keep max_token_len
augment = 'openpi'              # training augmentation on the device: 'openpi' (crop, rotate, colour jitter), 'shift'
                                # (images moved by up to 1/32 of their side, DrQ's random shift) or 'none'
camera_dropout = 0.0            # training: each camera of each sample left out (masked, as a missing camera) with this
                                # probability, one camera always kept; 0: every camera, as openpi trains
# model: shapes come from model.configs[model_name]; a value here overrides that field
model_name = 'pi05'             # 'pi05' | 'medium' | 'small' | 'demo' | 'tiny' (model.configs)
action_horizon = None           # H, actions per chunk; None: the model config's (pi05: 50)
max_token_len = None            # L, prompt slots; None: the model config's (pi05: 200)
image_size = None               # S, image side (a multiple of the patch); None: the model config's (pi05: 224)
vision_stem = None              # 'patch' (SigLIP's) | 'conv' (stride-2 3x3 convs, for training from scratch); None: the model config's
patch = None                    # image pixels per vision token side (from scratch only); None: the model config's (pi05: 14)
attn = 'sdpa'                   # 'sdpa' | 'flex' | 'eager'; H200, micro-batch 32: sdpa 530 ms, flex 544 ms,
                                # the same memory (bench.py, 2026-12-01)
recompute = 'none'              # 'none' | 'vit' | 'full' | patterns (model.apply_recompute); H200, micro-batch 32:
                                # none 533 ms 96 GiB, vit 560 ms 82 GiB (bench.py, README)
compile = True                  # per-layer torch.compile (model.apply_compile)
compile_vision = True           # also compile each SigLIP layer (H200, micro-batch 32: -43 ms/step, the README's ladder)
compile_mode = 'default'        # torch.compile mode of each unit: 'default' | 'reduce-overhead' (CUDA graphs)
cat_projections = False         # q/k/v and gate/up (and SigLIP's q/k/v) as one GEMM each over their weights
                                # concatenated every step (model.cat_projections); fp8 and LoRA Linears run alone;
                                # on an H100 +2% a step with bf16 weights, +0.8% with fp32 master (docs/performance.md): off
fp8 = False                     # torchao float8 Linears (fp8.py), CUDA
fp8_keep_list = 'fp8_keep.txt'  # the Linears `bench.py --fp8_validate` measured faster in fp8; '': static rules only
dtype = 'auto'                  # compute dtype 'bfloat16' | 'float32' | 'auto' (bf16 on CUDA, fp32 on CPU)
param_dtype = 'float32'         # 'float32' (fp32 master weights and AdamW moments) | 'bfloat16' (pure bf16, openpi torch)
loss_dims = 0                   # 0: loss over all 32 action dims (openpi); n: over the first n (LeRobot)
flow_draws = 1                  # noise/time draws per sample, all on one prefix pass (each draw's actions see the
                                # prefix and themselves only); 1: openpi's single draw
lora = False                    # openpi's LoRA fine-tuning (model.apply_lora): adapters on both Gemma streams, their
                                # base weights frozen in bf16; SigLIP, projector and heads trained (no EMA, no fp8)
# batch: global batch = micro_batch * grad_accum * world size
micro_batch = 32                # samples per process per micro-step
grad_accum = 1                  # micro-steps per optimizer step
fit = False                     # True: micro_batch, grad_accum and recompute chosen to fit gpu_mem_gib (memory.py's
                                # plan_fit), keeping micro_batch x grad_accum; the log and checkpoints say what was used
max_iters = 30000               # optimizer steps
# optimizer and schedule: openpi pi05_libero (src/openpi/training/config.py, optimizer.py)
learning_rate = 5e-5            # peak lr
decay_lr = 5e-5                 # lr at the end of the cosine decay
warmup_iters = 10000            # linear warmup from learning_rate / (warmup_iters + 1) to learning_rate
lr_decay_iters = 1_000_000      # iteration where the cosine reaches decay_lr (optax decay_steps)
beta1 = 0.9
beta2 = 0.95
eps = 1e-8
weight_decay = 1e-10            # decoupled, applied to every parameter (openpi: mask None)
grad_clip = 1.0                 # global-norm clip before the step; 0: off
max_skipped_steps = 0           # steps whose gradient norm is non-finite (finite loss) that are skipped, weights and
                                # moments left as they were, before the run stops; 0: stop at the first (fused AdamW)
ema = False                     # fp32 EMA of the weights, evaluated and saved (openpi's JAX trainer; +4 bytes/param)
ema_decay = 0.999
# system
device = 'auto'                 # 'auto' (cuda if available) | 'cuda' | 'cpu'
gpu_mem_gib = 0.0               # GiB that fit=True plans for (and, on a larger GPU, the cap this process runs
                                # under); 0: this GPU's memory
shard = False                   # multi-GPU: FSDP2 (fully_shard) per joint layer, per SigLIP layer and the rest, fp32
                                # master shards, instead of DDP's full copy of weights, gradients and moments per GPU
ddp_bucket_mb = 0               # DDP gradient bucket size, MiB; 0: one joint layer's gradients, so buckets follow layers
peak_tflops = 0.0               # per-GPU bf16 peak for MFU; 0: measure a bf16 matmul at startup (CUDA), n/a on CPU
sample_steps = 10               # Euler steps of sample_actions in evaluation
direction_dims = 0              # >0: evaluation logs the direction cosine of the first action over these dims
                                # (Meta-World: 3, dx dy dz); 0: the dataset's meta.json says (synthetic: 2)
seed = 42
# -----------------------------------------------------------------------------
_DEFAULTS = {k: v for k, v in globals().items() if not k.startswith('_') and isinstance(v, (bool, int, float, str, type(None)))}

# -----------------------------------------------------------------------------
# the pieces of training, shared with bench.py (they read the config from a dict, never from globals)


def default_config():
    """The defaults above as a dict (what bench.py starts from before changing keys)."""
    return dict(_DEFAULTS)


def check_config(conf):
    unknown = sorted(set(conf) - set(_DEFAULTS))
    if unknown:
        raise KeyError(f"unknown config keys {unknown}; train.py knows {sorted(_DEFAULTS)}")
    if str(conf['augment']).lower() in ('true', 'false'):  # a bool until 2026-12-01
        was = str(conf['augment']).lower() == 'true'
        raise ValueError(f"augment={conf['augment']!r}: augment is a choice now: "
                         f"augment={'openpi' if was else 'none'!r} does what {was} did")
    for key, allowed in (('attn', ('flex', 'sdpa', 'eager')), ('dtype', ('auto', 'bfloat16', 'float32')),
                         ('param_dtype', ('float32', 'bfloat16')), ('prompt_format', ('pi05', 'pi0')),
                         ('model_name', tuple(M.configs)),
                         ('compile_mode', ('default', 'reduce-overhead')), ('augment', ('openpi', 'shift', 'none')),
                         ('vision_stem', (None, 'patch', 'conv'))):
        if conf[key] not in allowed:
            raise ValueError(f"{key}={conf[key]!r}: expected one of {allowed}")
    for key in ('action_horizon', 'max_token_len', 'patch'):
        if conf[key] is not None and (not isinstance(conf[key], int) or isinstance(conf[key], bool) or conf[key] < 1):
            raise ValueError(f"{key}={conf[key]!r}: expected a positive int, or None for the model config's")
    base = M.configs[conf['model_name']]
    patch = conf['patch'] or base.patch
    if conf['patch'] is not None and conf['init_from'] not in ('scratch', 'resume'):
        raise ValueError(f"patch={conf['patch']} changes the vision tower's shape, which {conf['init_from']!r} "
                         f"fixes: train from scratch (init_from='scratch') or leave patch unset")
    size = conf['image_size'] if conf['image_size'] is not None else base.image_size
    if not isinstance(size, int) or isinstance(size, bool) or size < 1 or size % patch:
        raise ValueError(f"image_size={size!r}: expected a positive multiple of the patch size ({patch}) of "
                         f"model_name={conf['model_name']!r}{' and patch' if conf['patch'] else ''}")
    if (conf['vision_stem'] or base.vision_stem) == 'conv' and patch & (patch - 1):
        raise ValueError(f"vision_stem='conv' halves the image log2(patch) times: patch {patch} (model_name="
                         f"{conf['model_name']!r}) is not a power of two; use vision_stem='patch' or another patch")
    if not isinstance(conf['flow_draws'], int) or isinstance(conf['flow_draws'], bool) or conf['flow_draws'] < 1:
        raise ValueError(f"flow_draws={conf['flow_draws']!r}: expected a positive int (1: openpi's single draw)")
    if conf['flow_draws'] > 1 and (conf['fp8'] or conf['fit']):
        raise ValueError(f"flow_draws={conf['flow_draws']} runs without fp8 and fit for now (fp8's token alignment "
                         "and fit's memory account count one draw): set flow_draws=1 or fp8=False, fit=False")
    if conf['synthetic_objects'] not in (1, 2, 3):
        raise ValueError(f"synthetic_objects={conf['synthetic_objects']!r}: expected 1, 2 or 3")
    if not isinstance(conf['camera_dropout'], (int, float)) or not 0 <= conf['camera_dropout'] < 1:
        raise ValueError(f"camera_dropout={conf['camera_dropout']!r}: expected a probability in [0, 1)")
    if not isinstance(conf['max_skipped_steps'], int) or conf['max_skipped_steps'] < 0:
        raise ValueError(f"max_skipped_steps={conf['max_skipped_steps']!r}: expected an int >= 0")
    for key, low in (('micro_batch', 1), ('grad_accum', 1), ('max_iters', 1), ('log_interval', 1), ('eval_iters', 1),
                     ('eval_interval', 0), ('keep_last', 0), ('timing_warmup', 0), ('warmup_iters', 0),
                     ('synthetic_episodes', 0), ('ckpt_interval', -1), ('prompt_bucket', 0), ('loss_dims', 0),
                     ('direction_dims', 0), ('ddp_bucket_mb', 0), ('sample_steps', 1)):
        if not isinstance(conf[key], int) or isinstance(conf[key], bool) or conf[key] < low:
            raise ValueError(f"{key}={conf[key]!r}: expected an int >= {low}")
    for key in ('loss_dims', 'direction_dims'):
        if conf[key] > base.action_dim:
            raise ValueError(f"{key}={conf[key]}: expected 0..{base.action_dim} (the action dims of model_name="
                             f"{conf['model_name']!r}; 0: {'all' if key == 'loss_dims' else 'from meta.json'})")
    positive, nonneg, below_one = (lambda v: v > 0, '> 0'), (lambda v: v >= 0, '>= 0'), (lambda v: 0 <= v < 1, 'in [0, 1)')
    for key, (ok, what) in (('learning_rate', positive), ('eps', positive), ('decay_lr', nonneg),
                            ('weight_decay', nonneg), ('grad_clip', nonneg), ('peak_tflops', nonneg),
                            ('gpu_mem_gib', nonneg), ('beta1', below_one), ('beta2', below_one),
                            ('ema_decay', below_one)):
        v = conf[key]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or not ok(v):
            raise ValueError(f"{key}={v!r}: expected a number {what}")
    if not isinstance(conf['val_fraction'], float) or not 0 < conf['val_fraction'] < 1:
        raise ValueError(f"val_fraction={conf['val_fraction']!r}: expected a share of the episodes in (0, 1)")
    try:
        M.resolve_recompute(model_config(conf), conf['recompute'])
    except ValueError as err:
        raise ValueError(f"recompute={conf['recompute']!r}: {err}") from None
    if conf['shard'] and (conf['ema'] or conf['lora'] or conf['fp8']):
        raise ValueError('shard=True runs without ema, lora and fp8 for now (each untested with sharding)')
    if conf['lora'] and (conf['ema'] or conf['fp8']):
        raise ValueError('lora=True trains without EMA (openpi: ema_decay=None for LoRA) and without fp8: '
                         'set ema=False and fp8=False')


def weights_error(err, path, model_name):
    """train.py's line for a weights file that does not fit the model, naming the model_name of the checkpoint's
    policy.json (train.py writes one beside its weights) when that differs from the config's."""
    try:
        was = checkpoint.read_policy(path if os.path.isdir(path) else os.path.dirname(path))[0].get('model_name')
    except (OSError, ValueError, KeyError, AttributeError):  # none there, or not one of train.py's
        was = None
    hint = f'; its policy.json says model_name={was!r}: pass --model_name={was}' if isinstance(was, str) and was != model_name else ''
    return f'train.py: {err}{hint}'


def model_config(conf, **overrides):
    """model.configs[model_name] with the fields the config sets explicitly (action_horizon, max_token_len,
    image_size, vision_stem, patch)."""
    fields = {k: conf[k] for k in ('action_horizon', 'max_token_len', 'image_size', 'vision_stem', 'patch')
              if conf[k] is not None}
    return replace(M.configs[conf['model_name']], **fields, **overrides)


def compute_dtype_of(conf, device):
    if conf['dtype'] == 'auto':
        return torch.bfloat16 if str(device).startswith('cuda') else torch.float32
    return getattr(torch, conf['dtype'])


def build_model(conf, device, weights=None, skip_unused=True, batched_vision=True, **cfg_overrides):
    """The model as training builds it: fresh init, or weights from `weights` / the path in init_from, then the
    parameter dtype. skip_unused=False / batched_vision=False are the reference paths (bench.py's community rows)."""
    if weights is None and conf['init_from'] not in ('scratch', 'resume'):
        weights = conf['init_from']
    raw = M.build(model_config(conf, **cfg_overrides), device, attn=conf['attn'], init_from=weights,
                  compute_dtype=compute_dtype_of(conf, device), skip_unused=skip_unused, batched_vision=batched_vision)
    if conf['param_dtype'] == 'bfloat16':
        raw.set_param_dtype(torch.bfloat16)
    if conf['lora']:
        M.apply_lora(raw)
    M.cat_projections(raw, conf['cat_projections'])
    return raw


def wrap_model(raw, conf, device, cameras=2):
    """The training wrappers in their fixed order: fp8 -> recompute -> per-layer compile -> DDP (when
    torch.distributed is initialized). Returns what to call (the DDP module, or raw itself). cameras: camera slots
    per sample (fp8 checks that token counts suit its kernels)."""
    if conf['fp8']:
        import fp8  # torchao, only when asked for
        quiet = dist.is_available() and dist.is_initialized() and dist.get_rank() > 0
        # _scaled_mm's weight-gradient GEMM contracts over tokens, which must be a multiple of 16, else pad
        L = raw.cfg.max_token_len  # every prompt slot count trim_batch can leave
        slots = {data.bucketed(n, conf['prompt_bucket'], L) for n in range(1, L + 1)}
        aligned = fp8.rows_aligned(raw.cfg, conf['micro_batch'], slots, cameras)
        keep = conf['fp8_keep_list']
        if keep and not os.path.exists(keep):  # a relative name: the file next to train.py
            keep = os.path.join(os.path.dirname(os.path.abspath(__file__)), keep)
        fp8.convert_to_fp8(raw, keep_list=keep or None, pad_inner_dim=not aligned, verbose=not quiet)
    M.apply_recompute(raw, conf['recompute'])
    if conf['compile']:
        # per-layer compile already splits the graph for DDP's buckets; DDPOptimizer would compile around the
        # compiled layers and fail on FakeTensors when its cache is cold (seen with partially compiled models)
        torch._dynamo.config.optimize_ddp = False
        M.apply_compile(raw, vision=conf['compile_vision'], mode=conf['compile_mode'])
    if not (dist.is_available() and dist.is_initialized()):
        return raw
    if conf['shard']:  # both streams of a joint layer in one unit: its attention is joint over them
        from torch.distributed.fsdp import fully_shard
        for unit in list(raw.layers) + list(raw.vision.encoder.layers):
            fully_shard(unit)
        return fully_shard(raw)  # the embedding, projector, heads and final norms; the same module, sharded in place
    cuda = str(device).startswith('cuda')
    # frozen parameters never get a gradient, so no find_unused_parameters (and its graph walk every step)
    return DDP(raw, device_ids=[torch.device(device).index] if cuda else None,
               bucket_cap_mb=conf['ddp_bucket_mb'] or layer_grad_mib(raw), gradient_as_bucket_view=True)


def layer_grad_mib(raw):
    """Gradient bytes of one joint layer (both streams): the bucket size at which DDP's buckets follow the layers,
    each all-reduced as soon as that compiled layer's backward has produced it."""
    return sum(p.numel() * p.element_size() for p in raw.layers[0].parameters() if p.requires_grad) / 2 ** 20


def make_optimizer(raw, conf, fused=True):
    """AdamW over the trainable parameters; the moments take each parameter's dtype (fp32 with fp32 master weights).
    fused: one fused kernel (CUDA and CPU); False: torch's default multi-tensor AdamW, as openpi's trainer uses it
    (bench.py's community rows). Folding the clip into the fused kernel's grad_scale was measured alone on the H200
    (2026-12-01, pi05's 3.24 B fp32 parameters): 34.5 vs 37.4 ms per clip + step, 0.5% of a step; not kept."""
    params = [p for p in raw.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=conf['learning_rate'], betas=(conf['beta1'], conf['beta2']), eps=conf['eps'],
                             weight_decay=conf['weight_decay'], fused=fused or None)


def lr_at(it, conf):
    """optax warmup_cosine_decay_schedule (openpi CosineDecaySchedule)."""
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


def draw_randomness(gen, G, cfg, n_cams, augment, draws=1, camera_dropout=0.0):
    """Noise (G, H, A), flow time (G,), augmentation parameters (G, n_cams) and the cameras kept (G, n_cams) bool
    for a whole global batch of G; draws > 1: noise (G, draws, H, A) and time (G, draws), the flow draws of each
    sample. camera_dropout: each camera dropped with this probability, except each sample's camera with the
    largest draw (one is always kept); 0 draws nothing (kept is None), so runs without it stay as they were."""
    rows = (G, draws) if draws > 1 else (G,)
    noise = torch.randn(*rows, cfg.action_horizon, cfg.action_dim, generator=gen, device=gen.device)
    t = M.sample_time(G * draws, gen, gen.device).view(rows)
    aug = None if augment == 'none' else data.sample_augment_params(G, n_cams, generator=gen, device=gen.device,
                                                                    kind=augment)
    kept = None
    if camera_dropout > 0:
        u = torch.rand(G, n_cams, generator=gen, device=gen.device)
        kept = (u >= camera_dropout) | (u == u.max(1, keepdim=True).values)
    return noise, t, aug, kept


def to_device(batch, device):
    """A CPU micro-batch (pinned by the loader) on the device without blocking."""
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def train_step(model, raw, optimizer, micro_batches, conf, lr, gen, wrist):
    """One optimizer step over this process's micro-batches (on the device). The global batch's randomness is drawn
    from `gen` and sliced by each sample's `sample_id`; wrist: per camera slot, no geometric augmentation. Returns
    the mean loss and the pre-clip gradient norm as device tensors: nothing here waits for the device."""
    n_micro = len(micro_batches)
    world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
    G = micro_batches[0]['actions'].shape[0] * n_micro * world
    noise, t, aug, kept = draw_randomness(gen, G, raw.cfg, len(wrist), conf['augment'], conf['flow_draws'],
                                          conf['camera_dropout'])
    for group in optimizer.param_groups:
        group['lr'] = lr
    if conf['compile'] and conf['compile_mode'] == 'reduce-overhead':
        torch.compiler.cudagraph_mark_step_begin()  # a new step: the previous step's graph outputs may be reused
    total = 0.0
    for i, mb in enumerate(micro_batches):
        sid = mb['sample_id']
        if aug is not None:
            mb = dict(mb, images=data.augment_images(mb['images'], wrist, {k: v[sid] for k, v in aug.items()}))
        if kept is not None:
            mb = dict(mb, image_mask=mb['image_mask'] & kept[sid])
        last = i == n_micro - 1
        if hasattr(model, 'set_requires_gradient_sync'):  # FSDP: reduce-scatter on the last micro-step only
            model.set_requires_gradient_sync(last)
        sync = nullcontext() if last or not isinstance(model, DDP) else model.no_sync()
        with sync:  # gradients are all-reduced only on the last micro-step; the ranges name the phases in profiles
            with record_function('train_step.forward'):
                loss = model(mb, noise=noise[sid], time=t[sid], loss_dims=conf['loss_dims']) / n_micro
            with record_function('train_step.backward'):
                loss.backward()
        total = total + loss.detach()
    params = [p for p in raw.parameters() if p.grad is not None]
    if conf['max_skipped_steps']:
        # which tensors' gradients are non-finite (one fused norm; read only if the step is skipped), taken before
        # clipping multiplies every gradient by a NaN norm's factor; sharded: this process's shards
        local = [p.grad.to_local() if hasattr(p.grad, 'to_local') else p.grad for p in params]
        names = getattr(optimizer, 'grad_names', None)
        if names is None or len(names) != len(params):
            optimizer.grad_names = names = [n for n, p in raw.named_parameters() if p.grad is not None]
        optimizer.nonfinite_grads = ~torch.isfinite(torch.stack(torch._foreach_norm(local))), names
    # a non-finite norm poisons the step on every optimizer path alike (unless skipped below); the next log line stops the run
    if conf['grad_clip'] > 0:
        gnorm = torch.nn.utils.clip_grad_norm_(params, conf['grad_clip'])
    else:
        gnorm = torch.nn.utils.get_total_norm([p.grad for p in params])
    if hasattr(gnorm, 'full_tensor'):  # sharded parameters: the norm is a replicated DTensor
        gnorm = gnorm.full_tensor()
    if conf['max_skipped_steps']:  # fused AdamW reads found_inf as under torch's GradScaler: 1 skips the whole update
        if not optimizer.defaults.get('fused'):
            raise ValueError('max_skipped_steps > 0 needs the fused AdamW (make_optimizer(fused=True))')
        optimizer.found_inf = (~torch.isfinite(gnorm)).float()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return total, gnorm


class EMA:
    """Exponential moving average of the trainable weights, kept in fp32 in an eager copy of the model
    (openpi JAX: ema = decay * ema + (1 - decay) * params after every step, initialised to the loaded weights)."""

    def __init__(self, raw, decay, attn):
        self.decay = decay
        self.model = M.build(raw.cfg, raw.embed_tokens.weight.device, attn=attn, compute_dtype=raw.compute_dtype)
        self.model.requires_grad_(False)
        self.model.load_state_dict(raw.state_dict())  # same keys after fp8, recompute and in-place compile
        mine = dict(self.model.named_parameters())
        pairs = [(mine[n], p) for n, p in raw.named_parameters() if p.requires_grad]
        self.dst, self.src = [d for d, _ in pairs], [s for _, s in pairs]

    @torch.no_grad()
    def update(self):
        src = [s if s.dtype == torch.float32 else s.float() for s in self.src]
        torch._foreach_lerp_(self.dst, src, 1.0 - self.decay)


def shuffle_observations(batch):
    """The batch with every sample's observation (images, prompt and state) taken from the next sample, its
    actions kept: the flow loss on it says how much the model takes from the observation."""
    keys = ('images', 'image_mask', 'tokens', 'token_mask', 'state')
    return {k: v.roll(1, 0) if k in keys else v for k, v in batch.items()}


@torch.no_grad()
def evaluate(raw, loader, conf, device, n_iters):
    """Validation metrics with fixed noise and time (the same in every evaluation, so evaluations compare):
      val_loss       the flow loss as trained (loss_dims),
      real_loss      the flow loss over the dataset's own action dims only (not the zero padding up to 32),
      shuffled_loss  real_loss with each sample's observation swapped for another's; shuffled - real is what the
                     model takes from images, prompt and state (a policy that ignores them has no gap),
      action_mse     open-loop error of sample_actions in the dataset's action units over the real dims and valid
                     chunk positions,
      direction_cos  with direction_dims n > 0: cosine between the first predicted and expert action over the
                     first n dims (the direction of motion), over samples where the expert moves.
    Every process takes its share of n_iters global batches; sums are all-reduced."""
    real = loader.meta['action_dim']
    n_dir = conf['direction_dims'] or loader.meta.get('direction_dims', 0)
    sums = torch.zeros(7, dtype=torch.float64, device=device)  # B-weighted losses x3, sq err, valid, cos, moving
    n = 0
    for i in range(n_iters):
        gen = step_generator(conf['seed'], i, device, stream=1)
        noise, t, _, _ = draw_randomness(gen, loader.global_batch, raw.cfg, 0, 'none')
        x1 = torch.randn(noise.shape, generator=gen, device=device)  # sampling starts from this noise
        for mb in loader.get(i):  # get() leaves the loader's position alone
            mb = to_device(mb, device)
            sid, B = mb['sample_id'], mb['actions'].shape[0]
            kw = dict(noise=noise[sid], time=t[sid])
            per_dim = raw(mb, per_dim=True, **kw)  # the trained loss and the real-dim loss from one pass
            losses = [per_dim[:conf['loss_dims']].mean() if conf['loss_dims'] else per_dim.mean(), per_dim[:real].mean(),
                      raw(shuffle_observations(mb), loss_dims=real, **kw)]
            with unsharded(raw):  # sample_actions calls layers' inference steps, not their (sharding-aware) forward
                pred = raw.sample_actions(mb, noise=x1[sid], num_steps=conf['sample_steps'])
            pred, true = loader.unnormalize_actions(pred.float()), loader.unnormalize_actions(mb['actions'].float())
            valid = mb['action_mask'].double()
            cos = torch.zeros(2, dtype=torch.float64, device=device)
            if n_dir:
                p, q = pred[:, 0, :n_dir].double(), true[:, 0, :n_dir].double()
                moving = q.norm(dim=-1) > 1e-3 * q.norm(dim=-1).max().clamp_min(1e-12)
                c = torch.nn.functional.cosine_similarity(p, q, dim=-1, eps=1e-12)
                cos = torch.stack([(c * moving).sum(), moving.sum()])
            sums += torch.cat([torch.stack([x.double() * B for x in losses]),
                               torch.stack([(((pred - true) ** 2).mean(-1).double() * valid).sum(), valid.sum()]), cos])
            n += B
    sums = torch.cat([sums, sums.new_tensor([n])])
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(sums)
    val, real_loss, shuffled, sq, count, cos, moving, n = sums.tolist()
    out = dict(val_loss=val / n, real_loss=real_loss / n, shuffled_loss=shuffled / n, action_mse=sq / max(count, 1.0))
    if n_dir:
        out['direction_cos'] = cos / max(moving, 1.0)
    return out


def describe_eval(ev, prefix=''):
    """One log fragment for evaluate's metrics; prefix names the weights ('ema ')."""
    s = (f"{prefix}val loss {ev['val_loss']:.4f} | {prefix}real-dim loss {ev['real_loss']:.4f} | {prefix}shuffled obs "
         f"{ev['shuffled_loss']:.4f} (gap {ev['shuffled_loss'] - ev['real_loss']:+.4f}) | {prefix}action mse {ev['action_mse']:.4g}")
    return s + (f" | {prefix}direction cos {ev['direction_cos']:.3f}" if 'direction_cos' in ev else '')


@contextmanager
def unsharded(raw):
    """Inside the block every FSDP unit of raw holds its full parameters (a no-op without sharding)."""
    units = [m for m in raw.modules() if hasattr(m, 'unshard') and hasattr(m, 'reshard')]
    for m in units:
        m.unshard()
    try:
        yield raw
    finally:
        for m in units:
            m.reshard()


def full_state(raw, optimizer):
    """(model state dict, optimizer state dict) as full tensors on the CPU, gathered from the shards when the model
    is sharded (a collective: every process calls it); unsharded: (None, the optimizer's), the model saves itself."""
    if not any(hasattr(m, 'unshard') for m in raw.modules()):
        return None, optimizer.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, get_optimizer_state_dict
    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(raw, options=opts), get_optimizer_state_dict(raw, optimizer, options=opts)


def load_optimizer_state(raw, optimizer, state):
    if any(hasattr(m, 'unshard') for m in raw.modules()):  # every process takes its shard of the full state
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict
        set_optimizer_state_dict(raw, optimizer, state, options=StateDictOptions(full_state_dict=True))
    else:
        optimizer.load_state_dict(state)


def measure_matmul_tflops(device='cuda', n=8192, iters=30):
    """Sustained bf16 matmul TFLOP/s of this GPU, measured now with CUDA events (MFU is quoted against it)."""
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(5):
        a @ b
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        a @ b
    end.record()
    torch.cuda.synchronize(device)
    return 2 * n ** 3 * iters / (start.elapsed_time(end) / 1e3) / 1e12


def tflops_str(x):
    return f'{x:.0f}' if x >= 100 else f'{x:.3g}'


def memory_gib(device):
    """(peak used, total) GiB: CUDA allocator peak and device memory, or the process's peak RSS and the RAM."""
    if str(device).startswith('cuda'):
        return torch.cuda.max_memory_allocated(device) / 2 ** 30, torch.cuda.get_device_properties(device).total_memory / 2 ** 30
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return rss / 2 ** 30, os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2 ** 30

# -----------------------------------------------------------------------------
# logging: rank 0 prints and appends to log.txt; losses.csv gets one row per iteration


EVAL_FIELDS = ['val_loss', 'real_loss', 'shuffled_loss', 'action_mse', 'direction_cos']
CSV_FIELDS = ['iter',  # row `iter`: measured on the weights after `iter` optimizer steps (lr: of the step from there)
              'loss', 'lr', 'gnorm'] + EVAL_FIELDS + ['ema_' + k for k in EVAL_FIELDS]


def log(msg, path, master=True):
    """Print msg and append it to the file path, or to the list path (lines held until the file may be written)."""
    if master:
        tqdm.write(msg)
        if isinstance(path, list):
            path.append(msg)
            return
        with open(path, 'a') as f:
            f.write(msg + '\n')


def flush(pending, evals, csv_path, world_size, master=True):
    """The one host sync of the loop: read the pending (iter, lr, loss, gnorm) device values (each loss averaged
    over the processes) and append their rows to losses.csv with the evaluation columns of the same iteration
    (popped from evals). Returns the rows."""
    if not pending:
        return []
    losses = torch.stack([p[2] for p in pending]).float()
    if world_size > 1:
        dist.all_reduce(losses)
        losses /= world_size
    values = torch.stack([losses, torch.stack([p[3] for p in pending]).float()], 1).tolist()
    rows = [(it, lr, loss, gnorm) for (it, lr, _, _), (loss, gnorm) in zip(pending, values)]
    if master:
        with open(csv_path, 'a', newline='') as f:
            csv.DictWriter(f, CSV_FIELDS).writerows(
                dict(iter=it, loss=repr(loss), lr=repr(lr), gnorm=repr(gnorm), **evals.pop(it, {}))
                for it, lr, loss, gnorm in rows)
    return rows


def nonfinite_grads_summary(flags, names):
    """'non-finite gradients in k of n tensors: layers.3.vlm 9/9, ...' by module, from train_step's per-tensor flags
    (with several processes, any process's). A NaN made in one op's backward reaches the gradients of the tensors that
    op's input depends on (those computed before it on its path), not of those after it (nearer the loss) or on
    other branches, so the boundary says where it came from."""
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:  # sharded: each rank saw its shards
        flags = flags.to(torch.int32)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
    groups = {}  # module -> [names of its non-finite tensors, its tensor count]
    for name, bad in zip(names, flags.tolist()):
        parts = name.rsplit('.', 1)[0].split('.')
        key = '.'.join(parts[:4] if parts[:2] == ['vision', 'encoder'] else parts[:3])
        groups.setdefault(key, [[], 0])
        groups[key][0] += [name[len(key) + 1:]] if bad else []
        groups[key][1] += 1
    listed = ', '.join(f'{k} {len(b)}/{n}' + (f" ({' '.join(b)})" if len(b) < n else '')  # the boundary's module:
                       for k, (b, n) in groups.items() if b)                           # which of its tensors
    if not listed:
        return f'every one of the {len(names)} gradient tensors is finite (their norm overflowed)'
    return f'non-finite gradients in {sum(len(b) for b, _ in groups.values())} of {len(names)} tensors: {listed}'[:1000]


def stop_if_non_finite(rows, out_dir, log_path, master=True, skipped=None, max_skipped=0, grad_flags=None):
    """Stop the run at the first row with a non-finite loss or gradient norm, naming the last good checkpoint;
    called right after flush, before anything else is written. skipped: a list collecting the iterations whose
    update was skipped for a non-finite gradient norm (with a finite loss); up to max_skipped of them are logged
    (with the tensors whose gradients were non-finite, from grad_flags: {iter: train_step's per-tensor flags and
    names}) and the run goes on."""
    bad = None
    for it, _, loss, gnorm in rows:
        if math.isfinite(loss) and math.isfinite(gnorm):
            continue
        if math.isfinite(loss) and len(skipped or ()) < max_skipped:
            skipped.append(it)
            where = f'; {nonfinite_grads_summary(*grad_flags[it])}' if grad_flags and it in grad_flags else ''
            log(f'iter {it}: gradient norm {gnorm}, update skipped ({len(skipped)} of max_skipped_steps={max_skipped})'
                + where, log_path, master)
            continue
        bad = it, loss, gnorm
        break
    if bad:
        good = checkpoint.list_checkpoints(out_dir)
        msg = (f'non-finite loss {bad[1]} / gradient norm {bad[2]} at iter {bad[0]}: stopping. '
               f"last good checkpoint: {good[-1][1] if good else 'none'} (nothing written after iter {bad[0]})")
        log(msg, log_path, master)
        raise SystemExit(msg)
    return rows

# -----------------------------------------------------------------------------
# the training script


if __name__ == '__main__':
    exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'configurator.py')).read())
    config = MappingProxyType({k: globals()[k] for k in _DEFAULTS})  # frozen: printed, logged, checkpointed
    try:
        check_config(config)
    except (KeyError, ValueError) as err:  # one line naming the key and the fix, before anything is built
        raise SystemExit(f'train.py: {err}') from None
    cfg = model_config(config)

    # distributed init: torchrun sets RANK, LOCAL_RANK and WORLD_SIZE (also across nodes); without it, one process
    ddp = 'RANK' in os.environ
    rank, local_rank, world_size = ((int(os.environ['RANK']), int(os.environ['LOCAL_RANK']), int(os.environ['WORLD_SIZE']))
                                    if ddp else (0, 0, 1))
    master = rank == 0
    try:
        dev = M.resolve_device(device)  # what this run uses
    except ValueError as err:
        raise SystemExit(f'train.py: {err}') from None
    cuda = dev.startswith('cuda')
    if fp8 and not cuda:
        raise SystemExit(f"train.py: fp8=True needs a CUDA GPU (float8 GEMMs, H100 or newer); this run is on {dev}: "
                         f"set fp8=False")
    if cuda:
        dev = f'cuda:{local_rank}' if dev == 'cuda' else dev  # one GPU per process
        torch.cuda.set_device(dev)
        # bf16-valued fp32 operands are exact in TF32, and TF32 is JAX's default fp32 matmul precision on GPU
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    if cuda and gpu_mem_gib:  # behave as the GPU planned for: the allocator is capped at gpu_mem_gib
        total = torch.cuda.get_device_properties(dev).total_memory / memory.GIB
        if gpu_mem_gib < total:
            torch.cuda.set_per_process_memory_fraction(gpu_mem_gib / total, dev)
    if ddp:
        dist.init_process_group('nccl' if cuda else 'gloo')
    # a new run's first log lines are held until the checks below pass, so a run that fails one creates no out_dir;
    # an existing run directory's log.txt gets them at once (a resume that moves a broken checkpoint aside says so)
    log_path, csv_path = os.path.join(out_dir, 'log.txt'), os.path.join(out_dir, 'losses.csv')
    held = log_path if os.path.isdir(out_dir) else []
    gpu = torch.cuda.get_device_name(dev) if cuda else f'cpu ({torch.get_num_threads()} threads)'
    log(f"== train.py {time.strftime('%Y-%m-%d %H:%M:%S')} | torch {torch.__version__} | {gpu} | world size {world_size}",
        held, master)
    if init_from not in ('scratch', 'resume'):  # names and shapes of the weights file, before anything is built or written
        if os.path.isdir(init_from) and not os.path.exists(os.path.join(init_from, 'model.safetensors')):
            run_dir = init_from  # a training run's out_dir: its newest good checkpoint, as serve.py --ckpt picks it
            pick = [None]  # picked by rank 0 for every process, should the source run save a newer one meanwhile
            if master:
                try:
                    pick[0] = checkpoint.find(run_dir, lambda msg: log(msg, held, master))
                except FileNotFoundError:
                    pass
            if ddp:
                dist.broadcast_object_list(pick, 0)
            if pick[0] is None:
                raise SystemExit(f"train.py: init_from={run_dir} holds neither model.safetensors nor a usable checkpoint "
                                 f"(ckpt_<iter>/ with manifest.json): pass a model.safetensors, its directory or a "
                                 f"training run's out_dir, or init_from='scratch'")
            init_from = pick[0]
            config = MappingProxyType(dict(config, init_from=init_from))  # what build_model loads and runs record
            log(f"init_from: {run_dir}'s newest checkpoint, {init_from}", held, master)
        ckpt_dir = os.path.realpath(init_from if os.path.isdir(init_from) else os.path.dirname(init_from))
        if os.path.dirname(ckpt_dir) == os.path.realpath(out_dir) and os.path.basename(ckpt_dir).startswith('ckpt_'):
            raise SystemExit(f"train.py: init_from={init_from} is a checkpoint of this run's out_dir={out_dir}, whose "
                             f"checkpoints this run would overwrite and prune: continue that run with "
                             f"init_from='resume', or start a new one with --out_dir=<another>")
        try:
            M.check_pretrained(cfg, init_from)
        except M.CheckpointError as err:
            raise SystemExit(weights_error(err, init_from, model_name))

    torch.manual_seed(seed)  # fresh init is identical on every process (DDP broadcasts rank 0's weights anyway)

    # resume: the newest checkpoint's training state (its weights are loaded with the model below)
    ckpt, state, start_iter, best_val_loss = None, None, 0, float('inf')
    if init_from == 'resume':
        if master:  # what a crash left half-written (a re-save cut between its renames is put back), before looking
            for msg in checkpoint.clean_interrupted(out_dir):
                log(msg, held, master)
        if ddp:
            dist.barrier()
        ckpt = checkpoint.newest_valid_checkpoint(out_dir, lambda msg: log(msg, held, master), master)
        if ckpt is None:
            raise SystemExit(f"train.py: init_from='resume' but {out_dir} holds no usable checkpoint (ckpt_<iter>/ with "
                             f"manifest.json); start with init_from='scratch' or a model.safetensors")
        state = torch.load(os.path.join(ckpt, 'state.pt'), map_location='cpu', weights_only=True)
        start_iter, best_val_loss = state['iter'], state['best_val_loss']
        was = dict(_DEFAULTS, **state['config'])  # what the checkpoint was trained with
        for key in ('lora', 'ema'):  # a different LoRA setting, or an EMA the run never kept, cannot resume it
            if was[key] != config[key] and (key == 'lora' or config[key]):
                raise SystemExit(f"train.py: {ckpt} was trained with {key}={was[key]}: resume with --{key}={was[key]}, "
                                 f"or start a new run from its weights (--init_from={ckpt} --out_dir=<another>)")
        if not lora:  # the weights' names and shapes against the model the config asks for, before it is built
            try:
                M.check_pretrained(cfg, ckpt)
            except M.CheckpointError as err:
                raise SystemExit(weights_error(err, ckpt, model_name))
        fitted = ('micro_batch', 'grad_accum', 'recompute') if fit else ()  # the fit below chooses them again
        changed = {k: (state['config'].get(k), v) for k, v in config.items()
                   if state['config'].get(k) != v and k not in fitted}
        log(f'resuming from {ckpt}' + (f'; config changed since: {changed}' if changed else ''), held, master)

    # data (the synthetic dataset is written once, by rank 0, when data_dir has none)
    if synthetic_episodes and master and not os.path.exists(os.path.join(data_dir, 'meta.json')):
        log(f'writing a synthetic dataset of {synthetic_episodes} episodes to {data_dir}', held, master)
        sim.make_synthetic(data_dir, episodes=synthetic_episodes, image_size=cfg.image_size, seed=0,
                           max_token_len=cfg.max_token_len, objects=synthetic_objects)
    if ddp:
        dist.barrier()
    try:  # the prepared data against the model, before anything large is built: seconds, not minutes
        meta = data.check_prepared(data_dir)
    except data.DataError as err:
        raise SystemExit(f'train.py: {err}')
    problems = data.check_against_model(meta, cfg, prompt_format, data_dir)
    if problems:
        raise SystemExit('train.py: ' + '\ntrain.py: '.join(problems))
    if fit:  # the fastest micro-batch and recompute that fit, from the memory account; the config says what is used
        gib = gpu_mem_gib or memory_gib(dev)[1]
        slots = data.bucketed(meta[f'max_prompt_len_{prompt_format}'], prompt_bucket, cfg.max_token_len)
        B, n_micro, rc, plan = memory.plan_fit(dict(config), cfg, gib, len(meta['cameras']), slots)
        config = MappingProxyType(dict(config, micro_batch=B, grad_accum=n_micro, recompute=rc))
        log(f'fit for {gib:.1f} GiB: micro_batch {B} x grad_accum {n_micro}, recompute {rc!r}; '
            f'predicted {memory.describe_plan(plan)}', held, master)
    if master:  # the checks passed: the run's directory, the held lines of its log, what a crash left half-written
        os.makedirs(out_dir, exist_ok=True)
        if isinstance(held, list):
            with open(log_path, 'a') as f:
                f.writelines(msg + '\n' for msg in held)
        if init_from != 'resume':  # (a resume cleaned up before it looked for its checkpoint)
            for msg in checkpoint.clean_interrupted(out_dir):
                log(msg, log_path, master)
            earlier = [os.path.basename(c) for _, c in checkpoint.list_checkpoints(out_dir)]
            if earlier:
                log(f"warning: {out_dir} holds an earlier run's checkpoints ({', '.join(earlier)}): this run's own "
                    f"replace those of the same iterations, keep_last prunes across both, and init_from='resume' takes "
                    f"the newest; a fresh run is best given its own --out_dir", log_path, master)
    B, n_micro = config['micro_batch'], config['grad_accum']
    tok = meta.get('tokenizer')
    if tok and tok != 'words' and not os.path.exists(tok):
        log(f"warning: the tokenizer {data_dir}/meta.json names, {tok}, is gone: checkpoints will not carry it, and "
            f"serve.py will ask for it to be copied into the checkpoint as tokenizer.model", log_path, master)
    G = B * n_micro * world_size  # global batch
    log(f'global batch {G} = {B} x {n_micro} x {world_size}\n' +
        '\n'.join(f'{k} = {v!r}' for k, v in config.items()), log_path, master)
    loader_kw = dict(rank=rank, world_size=world_size, seed=seed, horizon=cfg.action_horizon, action_dim=cfg.action_dim,
                     prompt_format=prompt_format, val_fraction=val_fraction, token_len=cfg.max_token_len,
                     prompt_bucket=prompt_bucket)
    loader = data.Loader(data_dir, 'train', B, n_micro, start_step=state['loader']['step'] if state else 0,
                         **loader_kw)
    val_loader = data.Loader(data_dir, 'val', B, 1, prefetch=0, **loader_kw)
    log(f'data: {data_dir}, {len(loader.frames)} train / {len(val_loader.frames)} val frames, cameras '
        f"{loader.meta['cameras']} (wrist {loader.wrist}), prompt '{prompt_format}'", log_path, master)

    # model: build or load -> fp8 -> recompute -> per-layer compile -> DDP; optimizer; EMA
    # LoRA: the frozen base weights the run started from, carried from checkpoint to checkpoint
    lora_base = (state.get('lora_base', state['config']['init_from']) if state else init_from) if lora else None
    if lora_base == 'resume':  # a checkpoint of a resumed LoRA run from before lora_base was saved
        raise SystemExit(f"train.py: {ckpt} does not say which base weights its LoRA run started from: start a new "
                         f"LoRA run with --init_from=<those base weights>")
    try:
        if lora and ckpt:  # the base the run started from, then its adapters and trained weights
            raw_model = build_model(config, dev, weights=None if lora_base == 'scratch' else lora_base)
            M.load_lora(raw_model, os.path.join(ckpt, 'adapters.safetensors'))
        else:
            raw_model = build_model(config, dev, weights=ckpt)
    except M.CheckpointError as err:
        raise SystemExit(f'train.py: {err}')
    model = wrap_model(raw_model, config, dev, cameras=len(loader.wrist))
    n_params = sum(p.numel() for p in raw_model.parameters())
    n_train = sum(p.numel() for p in raw_model.parameters() if p.requires_grad)
    log(f'{model_name}: {n_params / 1e6:.1f}M parameters, {n_train / 1e6:.1f}M trained', log_path, master)
    optimizer = make_optimizer(raw_model, config)
    ema_model = EMA(raw_model, ema_decay, attn=M.uncompiled_attn(attn)) if ema else None
    if state:
        load_optimizer_state(raw_model, optimizer, state['optimizer'])
        torch.set_rng_state(state['rng']['torch'])
        if cuda and state['rng'].get('cuda') is not None:
            torch.cuda.set_rng_state(state['rng']['cuda'])
        if ema_model:
            M.load_pretrained(ema_model.model, os.path.join(ckpt, 'ema.safetensors'))
    fp8_off = nullcontext
    graphed = compile and compile_mode == 'reduce-overhead'
    # CUDA-graphed units: all joint (and all SigLIP) layers share one graph, and without autograd CUDA graph trees
    # take each call for a new run that overwrites the previous layer's output, so evaluation runs them eagerly
    eval_stance = (lambda: torch.compiler.set_stance('force_eager')) if graphed else nullcontext
    if fp8:
        import fp8 as fp8_lib
        fp8_off = lambda: fp8_lib.fp8_disabled(raw_model)  # evaluation runs the same weights in bf16
    peak = peak_tflops
    if peak == 0 and cuda:
        peak = measure_matmul_tflops(dev)
        log(f'bf16 matmul peak measured: {peak:.0f} TFLOP/s', log_path, master)

    # losses.csv: on resume, keep the rows before the checkpoint, so it reads as one uninterrupted run
    if master:
        rows = []
        if ckpt and os.path.exists(csv_path):
            with open(csv_path) as f:
                rows = [r for r in csv.DictReader(f) if int(r['iter']) < start_iter]
        with open(csv_path, 'w', newline='') as f:
            writer = csv.DictWriter(f, CSV_FIELDS)
            writer.writeheader()
            writer.writerows(rows)

    # -------------------------------------------------------------------------
    # the loop
    pending = []   # (iter, lr, loss, gnorm) as dev tensors, read at the next log line or checkpoint
    evals = {}     # iter -> evaluation columns, written with that iteration's row
    interval = []  # (iter, lr, loss, gnorm) read since the last log line
    skipped = []   # iterations whose update was skipped (non-finite gradient norm), at most max_skipped_steps
    grad_flags = {}  # iter -> which tensors' gradients were non-finite (device flags, names), until the next flush
    last_eval = None
    it = start_iter
    t_log, wait_log, it_log, flops = time.perf_counter(), loader.wait_time, it, 0  # since the last log line
    steady = dict(iters=0, seconds=0.0, flops=0)  # after the warm-up, for the summary
    warmup_seconds, t_run = 0.0, time.perf_counter()
    bar = tqdm(total=max_iters, initial=start_iter, disable=None if master else True, dynamic_ncols=True, mininterval=2)
    while True:
        t_pause = time.perf_counter()  # evaluation and checkpoints are not step time
        if eval_interval and (it % eval_interval == 0 or it == max_iters):
            with fp8_off(), eval_stance():
                ev = evaluate(raw_model, val_loader, config, dev, eval_iters)
            evals[it] = {k: repr(v) for k, v in ev.items()}
            msg = f'eval iter {it} | ' + describe_eval(ev)
            if ema_model:
                ema_ev = evaluate(ema_model.model, val_loader, config, dev, eval_iters)
                evals[it].update({'ema_' + k: repr(v) for k, v in ema_ev.items()})
                msg += ' | ' + describe_eval(ema_ev, 'ema ')
            best_val_loss, last_eval = min(best_val_loss, ev['val_loss']), ev
            log(msg, log_path, master)
        if it > start_iter and ckpt_interval >= 0 and ((ckpt_interval and it % ckpt_interval == 0) or it == max_iters):
            rows = flush(pending, evals, csv_path, world_size, master)
            interval += stop_if_non_finite(rows, out_dir, log_path, master, skipped, max_skipped_steps,
                                           grad_flags)  # never checkpoint a non-finite step
            pending, grad_flags = [], {}
            weights, optim_state = full_state(raw_model, optimizer)
            if master:
                saved = {'iter': it, 'optimizer': optim_state, 'config': dict(config),
                         'resolved': {'device': dev, 'peak_tflops': peak, 'world_size': world_size},
                         'loader': loader.state_dict(), 'best_val_loss': best_val_loss, 'lora_base': lora_base,
                         'rng': {'torch': torch.get_rng_state(), 'cuda': torch.cuda.get_rng_state() if cuda else None},
                         'torch_version': str(torch.__version__)}
                path = checkpoint.save_checkpoint(out_dir, it, raw_model, ema_model.model if ema_model else None, saved, keep_last,
                                       checkpoint.policy_info(cfg, meta, config), data_dir, weights)
                log(f'saved {path}', log_path, master)
            if ddp:
                dist.barrier()
        t_log += time.perf_counter() - t_pause
        if it >= max_iters:
            break

        # one optimizer step
        lr = lr_at(it, config)
        micro_batches = [to_device(b, dev) for b in next(loader)]
        flops += sum(raw_model.estimate_flops(mb, flow_draws) for mb in micro_batches)
        loss, gnorm = train_step(model, raw_model, optimizer, micro_batches, config, lr, step_generator(seed, it, dev),
                                 loader.wrist)
        if ema_model:
            ema_model.update()
        pending.append((it, lr, loss, gnorm))
        if max_skipped_steps:
            grad_flags[it] = optimizer.nonfinite_grads
        it += 1
        bar.update(1)

        warming = it - start_iter <= timing_warmup
        if warming or it % log_interval == 0 or it == max_iters:
            interval += stop_if_non_finite(flush(pending, evals, csv_path, world_size, master), out_dir, log_path, master,
                                           skipped, max_skipped_steps, grad_flags)
            pending, grad_flags = [], {}
            now = time.perf_counter()
            dt, n = now - t_log, it - it_log
            tflops = flops / dt / 1e12
            mfu = f'{100 * tflops / peak:.1f}%' if peak else 'n/a'
            used, total = memory_gib(dev)
            log(f'iter {it}/{max_iters} | loss {sum(r[2] for r in interval) / len(interval):.4f} | lr {lr:.1e} | '
                f'gnorm {interval[-1][3]:.2f} | {1000 * dt / n:.1f} ms | data {100 * (loader.wait_time - wait_log) / dt:.0f}% | '
                f'{n * G / dt:.1f} samples/s | {tflops_str(tflops)} TFLOP/s/gpu | mfu {mfu} | mem {used:.1f}/{total:.1f} GiB',
                log_path, master)
            if warming:
                warmup_seconds += dt
            else:
                steady = dict(iters=steady['iters'] + n, seconds=steady['seconds'] + dt, flops=steady['flops'] + flops)
            interval = []
            t_log, wait_log, it_log, flops = now, loader.wait_time, it, 0
    bar.close()
    if master and evals:  # the evaluation after the last step has a row of its own
        with open(csv_path, 'a', newline='') as f:
            csv.DictWriter(f, CSV_FIELDS).writerows(dict(iter=k, **v) for k, v in sorted(evals.items()))

    # summary
    s = steady
    if s['iters']:
        tf = s['flops'] / s['seconds'] / 1e12
        speed = (f"{1000 * s['seconds'] / s['iters']:.1f} ms/iter | {s['iters'] * G / s['seconds']:.1f} samples/s | "
                 f"{tflops_str(tf)} TFLOP/s/gpu | mfu {f'{100 * tf / peak:.1f}%' if peak else 'n/a'}")
    else:
        speed = 'no iterations after the warm-up'
    final = ' | final ' + describe_eval(last_eval) if last_eval else ''
    log(f'done: {it - start_iter} iters in {time.perf_counter() - t_run:.1f} s ({warmup_seconds:.1f} s warm-up) | {speed} '
        f'| best val loss {best_val_loss:.4f}{final} | peak mem {memory_gib(dev)[0]:.1f} GiB'
        + (f' | updates skipped at iters {skipped}' if skipped else ''), log_path, master)
    loader.close()
    if ddp:
        dist.destroy_process_group()
