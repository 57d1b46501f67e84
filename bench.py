"""
Throughput and memory of Pi0.5 training on synthetic LIBERO-shaped batches, one row per setting, in one run.

    python bench.py                                   # the ladder on one GPU, markdown table at the end
    python bench.py --rows=default,fp8 --steps=20     # selected rows (LADDER and VARIANTS below)
    python bench.py --recompute_table=True            # GiB saved and ms added per recompute unit -> memory_table.json
    python bench.py --rows=default --profile=default  # one profiled step: time per kernel kind, idle, top kernels
    python bench.py --fp8_validate=True               # bf16 vs fp8 GEMM time per Linear group -> fp8_keep.txt
    python bench.py --compare=fp8 --compare_steps=500 # loss curves of the default row vs fp8 (or fp32) from one init
    python bench.py --infer=True                      # sample_actions latency (batch 1) and throughput (8, 32)
    python bench.py --infer=True --infer_autotune=True  # the same and one row with inductor's max-autotune GEMMs
    python bench.py --fit=True                        # what fits 80 / 48 / 24 GB GPUs: setting, speed, peak vs predicted

Every row builds the model and optimizer with train.py's own functions (build_model, wrap_model, make_optimizer)
and times train.py's train_step, so the numbers are those of the trainer; the switches that only rebuild the
community-equivalent rows (REFERENCE below) are applied here, on what those functions build. Batches: 2 real cameras
(+ a 3rd slot masked in every sample, as openpi pads LIBERO), the model config's action horizon, prompts in the
pi05 format with 8 state values whose lengths follow the 40 LIBERO instructions (assets/libero_tasks.tsv). Token
counts come from the real tokenizer when `tokenizer` is given, else from an estimate (prompt_lengths).
"""
import csv
import gc
import json
import os
import re
import statistics
import time
from dataclasses import replace

import torch

import data
import memory
import model as M
import train

HERE = os.path.dirname(os.path.abspath(__file__))

# -----------------------------------------------------------------------------
# config (python bench.py --key=value)
model_name = 'pi05'        # model.configs key
batch_size = 32            # micro-batch per GPU
steps = 10                 # timed steps (median reported)
warmup = 3                 # untimed steps (the first includes compilation)
rows = 'ladder'            # 'ladder' or comma-separated row names (LADDER, VARIANTS)
recompute_table = False    # also measure the recompute cost table and write it where memory.py reads it
memory_table_out = os.path.join(HERE, 'memory_table.json')
profile = ''               # comma-separated row names to profile one steady-state step of: time per kernel kind,
                           # idle, the top kernels; on a GPU every kernel to <out_dir>/kernels_*.csv
fp8_validate = False       # profile bf16 and fp8 steps of the default row, keep the Linears fp8 makes faster
fp8_keep_out = 'fp8_keep.txt'  # where --fp8_validate writes its keep-list (train.py reads fp8_keep.txt)
compare = ''               # 'fp8' | 'fp32': loss curves of the default row and this precision, same init and batches
compare_steps = 500
infer = False              # inference: eager sample_actions vs compiled layers + CUDA graph (serve.GraphedSampler)
fit = False                # for 80, 48 and 24 GB GPUs, the setting memory.plan_fit chooses, run under that memory cap
fit_top = 1                # with fit: run the first n settings that fit, fastest first by memory.py's speed model
fit_gpu = ''               # with fit: only the GPU sizes whose name contains this ('80': 80 GB); '': all three
fit_skip = 0               # with fit: start after the first n settings (one setting per process: a row that ran
                           # out of memory may leave memory behind for the next)
infer_calls = 100          # timed calls per inference row
infer_variants = 'separate,fused,grouped,flex,step'  # with infer: which CUDA-graphed variants to time, a subset of these, 'prefix', 'triton' and 'small' ('step': serve.py's, grouped with each denoising step one graph; 'prefix': 'step' with grouped prefix attention; 'triton': 'step' with decode_attn.py's kernel; 'small': 'step' with small_gemm.py's kernel)
infer_batches = '1,8,32'   # with infer: the batch sizes each graphed row times
infer_profile = '1'        # with infer: the batch sizes (of infer_batches) whose call's kernels each graphed row lists
infer_pdl = True           # with infer: inductor's kernels with programmatic dependent launch on GPUs that have it
                           # (serve.py's default); compare with False in a process of its own (the layers compile once)
infer_autotune = False     # with infer: one more row, fused projections compiled with inductor's max-autotune (GEMM
                           # autotuning for the small-M expert matmuls; a second model, compile time reported)
tokenizer = ''             # path to the PaliGemma SentencePiece model for exact prompt lengths (else an estimate)
tasks_file = os.path.join(HERE, 'assets', 'libero_tasks.tsv')
out_dir = 'bench_out'      # JSON/CSV results and logs
seed = 0
# -----------------------------------------------------------------------------

CAMERAS = ('image', 'wrist_image', 'right_wrist_image')  # the batches' slots; the third is masked in every sample
# switches that exist only to rebuild the community-equivalent rows; everything else is a train.py config key
REFERENCE = dict(prune_cameras=True, skip_unused=True, batched_vision=True, fused_adamw=True, host_syncs=False)
COMMUNITY = dict(prune_cameras=False, prompt_bucket=0, attn='eager', recompute='full', compile=False, compile_vision=False,
                 param_dtype='bfloat16', skip_unused=False, batched_vision=False, fused_adamw=False, host_syncs=True, fp8=False,
                 cat_projections=False)
LADDER = [  # (short name, row label, change); each row adds one change to the row above
    ('community', 'community-equivalent', {}),
    ('camera', '+ camera-slot pruning', dict(prune_cameras=True)),
    ('compile', '+ per-layer compile', dict(compile=True)),
    ('flex', '+ FlexAttention', dict(attn='flex')),
    ('vit', 'ViT-only recompute', dict(recompute='vit')),
    ('prompt', '+ prompt-padding pruning', dict(prompt_bucket=32)),
    ('waste', '+ waste removals', dict(skip_unused=True, batched_vision=True, fused_adamw=True, host_syncs=False)),
    ('vision', '+ compiled SigLIP layers', dict(compile_vision=True)),
    ('sdpa', '+ cuDNN attention (sdpa) instead of flex', dict(attn='sdpa')),
    ('fp32master', '+ fp32 master weights', dict(param_dtype='float32')),
    ('default', "+ no recompute: train.py's defaults", dict(recompute='none')),
    ('fp8', '+ fp8', dict(fp8=True)),
]
VARIANTS = {  # single changes to the default row, for decisions: --rows=default,recomputevit,flexattn
    'bf16': ('default with param_dtype=bfloat16', dict(param_dtype='bfloat16')),
    'recomputevit': ('default with recompute=vit', dict(recompute='vit')),
    'flexattn': ('default with attn=flex', dict(attn='flex')),
    'eagervision': ('default with eager SigLIP', dict(compile_vision=False)),
    'graphs': ('default with compile_mode=reduce-overhead', dict(compile_mode='reduce-overhead')),
    'align8': ('default with 70 prompt slots (632 tokens, a multiple of 8; 64 slots give 626)', dict(prompt_bucket=70)),
    'cat': ('default with cat_projections=True', dict(cat_projections=True)),
    'lora': ('default with lora=True', dict(lora=True)),  # openpi's LoRA (its costs: memory.MS['lora'], MS['lora_micro'])
}


def named_rows():
    """{short name: (label, settings)} for the ladder (cumulative) and the variants (each on the default row)."""
    settings, named = dict(COMMUNITY), {}
    for short, label, change in LADDER:
        settings = dict(settings, **change)
        named[short] = (label, dict(settings))
    for short, (label, change) in VARIANTS.items():
        named[short] = (label, dict(named['default'][1], **change))
    return named


def prompt_lengths():
    """Token counts of the pi05 prompt `Task: {instr}, State: {8 ints};\\nAction: ` for the 40 LIBERO tasks.
    Without the tokenizer: BOS + 1.2 tokens per instruction word + 12 for the fixed text + 3.5 per state value
    (the Gemma tokenizer splits numbers into single digits; a value is a space and 1-3 digits)."""
    if not os.path.exists(tasks_file):
        raise SystemExit(f"{tasks_file} not found: pass --tasks_file=<a tsv with an 'instruction' column>")
    with open(tasks_file) as f:
        instr = [r['instruction'] for r in csv.DictReader(f, delimiter='\t')]
    if tokenizer:
        import numpy as np
        state = np.linspace(-0.9, 0.9, 8)  # 8 normalized LIBERO state values
        tok = data.load_tokenizer(tokenizer)
        return [len(data.encode_prompt(tok, t, state)) for t in instr]
    return [round(1 + 1.2 * len(t.split()) + 12 + 3.5 * 8) for t in instr]


class Timer:
    """CUDA events on the GPU (no host sync between steps), wall clock on the CPU (dry runs of the script)."""
    def __init__(self, device):
        self.cuda = device == 'cuda'

    def mark(self):
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def ms(self, a, b):
        return a.elapsed_time(b) if self.cuda else (b - a) * 1e3


def row_batches(cfg, lengths):
    """The two LIBERO-shaped batches every training row alternates between (the module docstring says their layout)."""
    gen = torch.Generator().manual_seed(seed)
    return [data.random_batch(cfg, batch_size, cameras=2, empty_slots=1, prompt_lengths=lengths, generator=gen)
            for _ in range(2)]


def script_setup(base, model_name_, steps_, warmup_, out_dir_, note=''):
    """For the scripts under docs/runs that time bench.py's rows their own way: sets this module's globals, prints
    the header line -> (device, the two batches, the measured bf16 matmul peak, the base row's label and settings)."""
    global model_name, steps, warmup, out_dir
    model_name, steps, warmup, out_dir = model_name_, steps_, warmup_, out_dir_
    os.makedirs(out_dir, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(0)
    device = M.resolve_device('auto')
    batches = row_batches(M.configs[model_name], prompt_lengths())
    peak = train.measure_matmul_tflops() if device == 'cuda' else float('nan')
    label, settings = named_rows()[base]
    print(f"{torch.cuda.get_device_name() if device == 'cuda' else 'CPU'} | torch {torch.__version__} | base row: "
          f"{label}{note} | {time.strftime('%Y-%m-%d')}", flush=True)
    return device, batches, peak, label, settings


def free_memory():
    torch._dynamo.reset()  # compiled code holds the old modules
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def setup_row(settings, batches, device, grad_accum=1, **cfg_overrides):
    """Model, optimizer and prepared steps of one row, built as train.py builds them, with REFERENCE's switches
    applied; each step is grad_accum micro-batches of batch_size / grad_accum samples. Returns (model, raw,
    optimizer, conf, steps, wrist flags, host_syncs)."""
    s = dict(settings)
    ref = {k: s.pop(k, v) for k, v in REFERENCE.items()}
    if device == 'cpu' and 'attn' in s:
        s['attn'] = M.uncompiled_attn(s['attn'])  # CPU dry run
    B = batch_size // grad_accum
    conf = dict(train.default_config(), model_name=model_name, micro_batch=B, grad_accum=grad_accum, init_from='scratch', **s)
    trimmed = [data.trim_batch(b, conf['prompt_bucket'], cameras=ref['prune_cameras']) for b in batches]
    kept = trimmed[0][1]
    torch.manual_seed(seed)  # every row starts from the same weights, so its loss column compares rows
    raw = train.build_model(conf, device, skip_unused=ref['skip_unused'], batched_vision=ref['batched_vision'], **cfg_overrides)
    model = train.wrap_model(raw, conf, device, cameras=len(kept))
    opt = train.make_optimizer(raw, conf, fused=ref['fused_adamw'])
    steps = [[train.to_device({k: v[j * B:(j + 1) * B] for k, v in b.items()}, device) for j in range(grad_accum)]
             for b, _ in trimmed]
    return model, raw, opt, conf, steps, [data.is_wrist(CAMERAS[i]) for i in kept], ref['host_syncs']


def run_row(label, settings, batches, peak, device, profile_step=False, grad_accum=1):
    """Build the row, run warmup + steps of train_step, return the measurements (and profile one more step)."""
    free_memory()
    t0 = time.time()
    model, raw, opt, conf, prepared, wrist, host_syncs = setup_row(settings, batches, device, grad_accum)
    flops = sum(raw.estimate_flops(mb) for mb in prepared[0])
    gen = torch.Generator(device=device).manual_seed(seed)
    step = lambda i: train.train_step(model, raw, opt, prepared[i % len(prepared)], conf, 1e-5, gen, wrist)
    timer, marks = Timer(device), []
    for i in range(warmup + steps):
        start = timer.mark()
        loss, gnorm = step(i)
        if host_syncs:  # what openpi's trainer does every step: read the loss and norm on the host
            loss.item(), gnorm.item()
        end = timer.mark()
        if i == max(warmup, 1) - 1:  # build + warm-up (compilation): the first step when there is no warm-up
            loss.item()
            setup_s = time.time() - t0
        if i >= warmup:
            marks.append((start, end))
    loss.item()
    ms = statistics.median(timer.ms(a, b) for a, b in marks)
    if profile_step and device == 'cuda':  # every kernel of one step to a csv, the kinds and the top kernels printed
        kernel_breakdown(lambda: step(0), f'one step of {label}', top=30)
    elif profile_step:  # CPU dry run: op times
        print(profiled(lambda: step(0), device)[1].key_averages().table(sort_by='self_cpu_time_total', row_limit=25))
    mem = torch.cuda.max_memory_allocated() / 2 ** 30 if device == 'cuda' else float('nan')
    res = dict(row=label, ms=ms, samples_s=batch_size / ms * 1e3, tflops=flops / ms / 1e9, mfu=flops / ms / 1e9 / peak,
               peak_gib=mem, setup_s=setup_s, tokens=prepared[0][0]['tokens'].shape[1], loss=float(loss))
    del model, raw, opt
    return res

# -----------------------------------------------------------------------------
# profiles: one reader of torch.profiler's events for the kernel account and the fp8 validation


def profiled(fn, device, record_shapes=False):
    """Run fn once under torch.profiler; returns (trace_summary of its kernels, the profile)."""
    from torch.profiler import ProfilerActivity, profile as kineto
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == 'cuda' else [])
    with kineto(activities=acts, record_shapes=record_shapes) as prof:
        fn()
        if device == 'cuda':
            torch.cuda.synchronize()
    return trace_summary(kernel_events(prof)), prof


def kernel_events(prof):
    """(name, start us, duration us) of every GPU kernel and copy of a profile, in start order; the user ranges
    (record_function, Optimizer.step) that also appear on the GPU timeline are left out."""
    out = [(e.name, e.time_range.start, e.time_range.elapsed_us()) for e in prof.events()
           if e.device_type == torch.autograd.DeviceType.CUDA and not getattr(e, 'is_user_annotation', False)
           and not e.name.startswith(('train_step.', 'Optimizer.'))]
    return sorted(out, key=lambda k: k[1])


def kernel_kind(name):
    n = name.lower()
    if any(s in n for s in ('nvjet', 'gemm', 'cutlass', 'xmma')):
        return 'GEMM'
    if any(s in n for s in ('flex', 'sdpa', 'fmha', 'flash', 'attention')):
        return 'attention'
    if 'adam' in n or 'multi_tensor' in n:
        return 'optimizer'
    return 'fused elementwise (Triton)' if n.startswith('triton') else 'other'


def trace_summary(kernels):
    """Where one profiled step's time goes: kernel time per kind and GPU idle time (gaps between kernels).
    kernels: (name, start us, duration us) in start order. Returns {kind: ms} with 'span' and 'idle' added."""
    out = {'span': 0.0, 'idle': 0.0}
    if not kernels:
        return out
    end = kernels[0][1]
    for name, start, dur in kernels:
        out[kernel_kind(name)] = out.get(kernel_kind(name), 0.0) + dur / 1e3
        out['idle'] += max(0.0, start - end) / 1e3
        end = max(end, start + dur)
    out['span'] = (end - kernels[0][1]) / 1e3
    return out


def write_fp8_keep_list(named, batches, device):
    """Profile one steady-state step of the default row in bf16 and in fp8 (static rules, no keep-list), attribute
    every GEMM to its Linear group by shape (fp8.py) and keep the groups fp8 makes faster: prints the table and
    writes fp8_keep_out."""
    import fp8
    results = {}
    for precision in ('bf16', 'fp8'):
        free_memory()
        settings = dict(named['default'][1], fp8=precision == 'fp8', fp8_keep_list='')
        model, raw, opt, conf, prepared, wrist, _ = setup_row(settings, batches, device)
        prepared = [p[0] for p in prepared]
        if precision == 'bf16':  # shapes per Linear, from an eager pass of the unconverted model
            rows = fp8.linear_rows(M.build(raw.cfg, device, compute_dtype=raw.compute_dtype), prepared[0])
            sig_to_group, groups = fp8.gemm_groups(raw, rows)
            static = {d.fqn: d for d in fp8.decisions(raw)}
        gen = torch.Generator(device=device).manual_seed(seed)
        step = lambda: train.train_step(model, raw, opt, [prepared[0]], conf, 1e-5, gen, wrist)
        timer = Timer(device)
        for _ in range(warmup):
            step()
        a = timer.mark()
        for _ in range(steps):
            step()
        b = timer.mark()
        if device == 'cuda':
            torch.cuda.synchronize()
        summary, prof = profiled(step, device, record_shapes=True)
        gemms = fp8.gemm_events(prof, device)
        times, counts = fp8.attribute(gemms, sig_to_group)
        gemm_ms = sum(g.us for g in gemms) / 1e3
        kernel_ms = (sum(v for k, v in summary.items() if k not in ('span', 'idle')) if device == 'cuda' else
                     sum(e.self_cpu_time_total for e in prof.events()) / 1e3)  # CPU dry run: op time
        results[precision] = times, timer.ms(a, b) / steps, gemm_ms, kernel_ms
        print(f"{precision}: {results[precision][1]:.1f} ms/step | GEMM {gemm_ms:.1f} of {kernel_ms:.1f} ms kernel time "
              f"({100 * gemm_ms / max(kernel_ms, 1e-9):.0f}%) | {len(gemms)} GEMMs, {counts.get('unmatched', 0)} unmatched", flush=True)
        del model, raw, opt
    keep, table = fp8.keep_list_lines(results['bf16'][0], results['fp8'][0], groups, static)
    w = max(len(r[0]) for r in table)
    print(f"{'GEMM group (Linears that share GEMM shapes)':<{w}} {'n':>4} {'fp8':>4} {'bf16 ms':>8} {'fp8 ms':>8} {'x':>6}  decision")
    for label, n, ncand, b, f, x, decision in table:
        print(f'{label:<{w}} {n:>4} {ncand:>4} {b:8.2f} {f:8.2f} {x:6.2f}  {decision}')
    (_, ms_b, g_b, k_b), (_, ms_f, g_f, k_f) = results['bf16'], results['fp8']
    head = (f"# fp8 keep-list written by `python bench.py --fp8_validate=True` on {time.strftime('%Y-%m-%d')}: "
            f"{torch.cuda.get_device_name() if device == 'cuda' else device}, torch {torch.__version__}, {model_name}, "
            f"batch {batch_size}\n# GEMM share of kernel time {100 * g_b / k_b:.0f}% -> {100 * g_f / k_f:.0f}%, "
            f"step {ms_b:.1f} -> {ms_f:.1f} ms\n")
    with open(fp8_keep_out, 'w') as f:
        f.write(head + ''.join(f'# {r[0]}: bf16 {r[3]:.2f} ms, fp8 {r[4]:.2f} ms, {r[5]:.2f}x -> {r[6]}\n'
                               for r in table if r[2]) + '\n'.join(keep) + '\n')
    print(f'step {ms_b:.1f} -> {ms_f:.1f} ms ({ms_b / ms_f:.3f}x) | wrote {len(keep)} FQNs to {fp8_keep_out}')

# -----------------------------------------------------------------------------
# --compare: two precisions trained from the same init on the same batches, noise and times


def compare_losses(named, variant, n_steps, device, depth=4, vit_depth=4, B=16, lr=1e-4, pool_size=64):
    """Loss curves of the default row and the same row with variant ('fp8': fp8 Linears; 'fp32': fp32 compute) at
    pi05 widths with depth-4 streams and SigLIP, through train.py's train_step: Pearson correlation and mean
    relative error of the two curves, a CSV always and a PNG when matplotlib is installed."""
    import numpy as np
    base = dict(named['default'][1], recompute='none', fp8_keep_list='', augment='none', learning_rate=lr, decay_lr=lr,
                warmup_iters=20, grad_clip=1.0)
    change = {'fp8': dict(fp8=True), 'fp32': dict(dtype='float32')}[variant]
    cfg = replace(M.configs[model_name], depth=depth, vit_depth=vit_depth)
    g = torch.Generator().manual_seed(seed)
    pool = data.random_batch(cfg, pool_size, prompt_slots=min(64, cfg.max_token_len), generator=g)
    walk = torch.randn(pool_size, cfg.action_horizon, cfg.action_dim, generator=g).cumsum(1)  # learnable targets
    pool['actions'] = walk / walk.std(dim=1, keepdim=True).clamp_min(1e-3)
    curves, init = {}, None
    for name, settings in (('default', base), (variant, dict(base, **change))):
        free_memory()
        s = {k: v for k, v in settings.items() if k not in REFERENCE}
        if device == 'cpu':
            s['attn'] = M.uncompiled_attn(s['attn'])  # CPU dry run
        conf = dict(train.default_config(), model_name=model_name, micro_batch=B, grad_accum=1, **s)
        torch.manual_seed(seed)
        raw = train.build_model(conf, device, depth=depth, vit_depth=vit_depth)
        if init is None:
            init = {k: v.clone() for k, v in raw.state_dict().items()}
        raw.load_state_dict(init)  # the same initial weights
        model = train.wrap_model(raw, conf, device, cameras=2)
        opt = train.make_optimizer(raw, conf)
        losses, t0 = torch.zeros(n_steps, device=device), time.perf_counter()
        for i in range(n_steps):
            idx = torch.randint(0, pool_size, (B,), generator=torch.Generator().manual_seed(1_000_003 * seed + i))
            batch = train.to_device(dict({k: v[idx] for k, v in pool.items()}, sample_id=torch.arange(B)), device)
            loss, _ = train.train_step(model, raw, opt, [batch], conf, train.lr_at(i, conf),
                                       train.step_generator(seed, i, device), [False, True])
            losses[i] = loss
        curves[name] = losses.cpu().double().numpy()
        print(f'{name}: {n_steps} steps in {time.perf_counter() - t0:.0f} s (compile included), loss '
              f'{curves[name][:10].mean():.4f} -> {curves[name][-10:].mean():.4f}', flush=True)
        del model, raw, opt
    a, b = curves['default'], curves[variant]
    pearson, rel = float(np.corrcoef(a, b)[0, 1]), float(np.mean(np.abs(b - a) / np.abs(a)))
    path = os.path.join(out_dir, f'{variant}_vs_default_loss')
    with open(path + '.csv', 'w') as f:
        f.write(f'step,default,{variant}\n' + ''.join(f'{i},{x:.6f},{y:.6f}\n' for i, (x, y) in enumerate(zip(a, b))))
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(9, 5))
        for name, y in curves.items():
            ax.plot(y, lw=1, alpha=0.8, label=name)
        ax.set(xlabel='step', ylabel='loss', title=f'{model_name} depth {depth}, micro-batch {B}: pearson {pearson:.5f}, '
               f'mean rel. err. {100 * rel:.2f}%')
        ax.legend()
        fig.tight_layout()
        fig.savefig(path + '.png', dpi=100)
        plot = f' | {path}.png'
    except ImportError:
        plot = ' (no matplotlib: no plot)'
    print(f'loss {variant} vs default over {n_steps} steps | pearson {pearson:.5f} | mean rel err {100 * rel:.3f}% | '
          f'{path}.csv{plot}')
    return pearson, rel


def perturb(model):
    """Seeded noise on every weight (model.perturb_weights), the same for every build, so that the comparisons of
    inference paths below can fail."""
    M.perturb_weights(model, 0.02, torch.Generator(model.embed_tokens.weight.device).manual_seed(seed))


INFER_VARIANTS = {  # infer_table's CUDA-graphed rows, in the order they run
    'separate': 'separate projections', 'fused': 'fused projections',
    'grouped': 'fused projections, grouped denoising attention',
    'flex': 'fused projections, flex denoising attention',
    'step': 'fused projections, grouped denoising attention, one graph per denoising step',
    'prefix': 'fused projections, grouped attention in the prefix too, one graph per denoising step',
    'triton': 'fused projections, Triton denoising attention, one graph per denoising step',
    'small': 'fused projections, grouped denoising attention, Triton expert GEMMs, one graph per step'}


def infer_choices():
    """infer_variants and infer_batches checked: (the chosen variant keys, the batch sizes ascending), else a
    ValueError that names the flag."""
    chosen = [v.strip() for v in infer_variants.split(',') if v.strip()]
    if not chosen or set(chosen) - set(INFER_VARIANTS):
        raise ValueError(f"infer_variants={infer_variants!r}: a comma-separated subset of {','.join(INFER_VARIANTS)}")
    try:
        batch_sizes = sorted({int(B) for B in str(infer_batches).split(',')})
    except ValueError:
        batch_sizes = []
    if not batch_sizes or batch_sizes[0] < 1:
        raise ValueError(f"infer_batches={infer_batches!r}: batch sizes >= 1 separated by commas, e.g. '1,8'")
    if infer_autotune and 'fused' not in chosen:
        raise ValueError(f"infer_autotune compares with the fused row: add 'fused' to infer_variants={infer_variants!r}")
    return chosen, batch_sizes


def infer_table(lengths, device):
    """sample_actions (10 denoising steps, 2 cameras, LIBERO prompt lengths in 32-slot buckets, bf16 weights as
    serve.Policy loads them), wall time per call with the device synchronised: the eager reference at batch 1,
    then serve.GraphedSampler (compiled inference layers, the whole call one CUDA graph) at each batch size, with
    its compile + capture time, with separate projections, fused ones (model.fuse_projections, serve.py's default),
    and fused with grouped-query math (denoise_attn='grouped') or FlexAttention ('flex') in the denoising steps, and
    ('step', after those: serve.py's) grouped with each plain denoising step one graph (model.compile_denoise_step),
    ('prefix', opt-in) 'step' with the grouped attention in the prefix pass too, ('triton', opt-in) 'step' with
    decode_attn.py's kernel for the denoising attention, and ('small', opt-in, last) 'step' with small_gemm.py's
    kernel for the action expert's projections at batch 1; a
    real-time-chunking (guided) call at the first batch size with separate projections without and with the graph,
    and with fused ones (and grouped) as serve.Policy replays it; with infer_autotune, fused projections compiled
    with max-autotune at the first two batch sizes. infer_variants chooses which of the graphed variants run,
    infer_batches at which batch sizes. Returns markdown rows."""
    import serve
    chosen, batch_sizes = infer_choices()
    cfg = M.configs[model_name]
    torch.manual_seed(seed)
    model = M.build(cfg, device, attn='sdpa', compute_dtype=torch.bfloat16 if device == 'cuda' else torch.float32)
    perturb(model)
    model.set_param_dtype(torch.bfloat16 if device == 'cuda' else torch.float32, inference=True)  # as serve.Policy
    model.eval().requires_grad_(False)
    sync = torch.cuda.synchronize if device == 'cuda' else (lambda: None)
    g = torch.Generator().manual_seed(seed)

    def inputs(B):
        b, _ = data.trim_batch(data.random_batch(cfg, B, cameras=2, prompt_lengths=lengths, generator=g), 32)
        b = {k: v.to(device) for k, v in b.items() if k in ('images', 'image_mask', 'tokens', 'token_mask')}
        return b, torch.randn(B, cfg.action_horizon, cfg.action_dim, device=device)

    def timed(fn, n):
        ms = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            sync()
            ms.append((time.perf_counter() - t0) * 1e3)
        q = lambda p: statistics.quantiles(ms, n=100)[p - 1] if len(ms) > 1 else ms[0]
        return statistics.median(ms), q(90), q(99)

    def row(label, call, B, n):
        """Time `call` (its first run, compilation and capture included, apart) and add its table row."""
        t0 = time.perf_counter()
        call()
        sync()
        setup = time.perf_counter() - t0
        p50, p90, p99 = timed(call, n)
        rows.append(f'| {label} | {B} | {p50:.1f} | {p90:.1f} | {p99:.1f} | {B * 1e3 / p50:.1f} | {setup:.0f} |')
        print(rows[-1], flush=True)
        return call

    def rtc_call(b, noise, sampler=None):
        """Real-time chunking (a request with prev_chunk): autograd through the layers for the guidance's
        vector-Jacobian product, with the compiled layers and no CUDA graph, or replayed by `sampler` (serve.py);
        half the horizon overlaps, delay 2."""
        H = cfg.action_horizon
        gen = torch.Generator(device).manual_seed(1)  # the same guide for every call compared
        guide = torch.randn(noise.shape, device=device, generator=gen)
        weights = M.rtc_weights(H, H // 2, min(2, H // 2)).to(device)[None, :, None].expand_as(noise).contiguous()
        if sampler is None:
            return lambda: model.sample_actions(b, noise=noise, guide=guide, guide_weights=weights)
        return lambda: sampler(b, noise, (guide, weights, 5.0))

    pdl = None if infer_pdl else False  # GraphedSampler's: None turns it on where the GPU has it
    if device == 'cuda':
        from torch._inductor import config as inductor_config  # TORCHINDUCTOR_ENABLE_PDL=1 sets it for the process
        on = serve.pdl_on(None, device) and (infer_pdl or inductor_config.triton.enable_pdl)
        print(f"inductor's kernels {'with' if on else 'without'} programmatic dependent launch "
              f"(infer_pdl={infer_pdl}, inductor's triton.enable_pdl={inductor_config.triton.enable_pdl})")
    rows = ['| implementation | batch | p50 ms | p90 ms | p99 ms | samples/s | compile + capture s |', '|---|---|---|---|---|---|---|']
    print('\n'.join(rows), flush=True)  # each row prints as it is timed: a log cut short keeps its columns
    rtc_n = max(3, infer_calls // 5)
    with torch.no_grad():
        b, noise = inputs(1)
        for _ in range(2):
            model.sample_actions(b, noise=noise)
        row('`Pi05.sample_actions`, eager, sdpa', lambda: model.sample_actions(b, noise=noise), 1, infer_calls)
        if device != 'cuda':
            row('eager, no CUDA graph, real-time chunking (guided)', rtc_call(b, noise), 1, rtc_n)
            return rows
        # separate projections, then q/k/v and gate/up fused (model.fuse_projections), then also the grouped-query
        # math or FlexAttention in the denoising steps (flex decoding when compiled)
        same = {B: inputs(B) for B in batch_sizes}  # every variant gets the same inputs, so their outputs compare
        profiled_sizes = [B for B in batch_sizes if str(B) in infer_profile.replace(' ', '').split(',')]
        first, last = same[batch_sizes[0]], same[batch_sizes[-1]]
        outs, outs1 = {}, {}  # each variant's replay at the last batch size, and at the first
        compiled = fused_sampler = direct = replay = denoise_compiled = None
        for key in [v for v in INFER_VARIANTS if v in chosen]:
            name, fused = INFER_VARIANTS[key], key != 'separate'
            if fused and model.layers[0].vlm.self_attn.fused is None:  # once, after the separate row if it runs
                M.fuse_projections(model)
            attn = {'flex': 'flex', 'grouped': 'grouped', 'step': 'grouped', 'triton': 'triton', 'prefix': 'grouped',
                    'small': 'grouped'}.get(key)
            if key in ('step', 'triton', 'prefix', 'small') and not denoise_compiled:  # from here on model.denoise is one graph
                M.compile_denoise_step(model)
                denoise_compiled = True
            sampler = serve.GraphedSampler(model, compile=not compiled, fuse=False,  # compile_inference once; new graphs
                                           denoise_attn=attn, whole_step=False,  # per layer, as each row says
                                           prefix_attn='grouped' if key == 'prefix' else None,
                                           small_gemm=key == 'small', pdl=pdl)
            compiled = True
            try:  # a variant not yet run on a GPU (attn set) is reported when it fails, and the table goes on
                for B in batch_sizes:
                    row(f'compiled layers + CUDA graph (`serve.GraphedSampler`), {name}',
                        lambda: sampler(*same[B]), B, infer_calls if B == 1 else max(10, infer_calls // B))
                B = batch_sizes[-1]
                ref = model.sample_actions(*last, denoise_attn=attn, prefix_attn=sampler.prefix_attn).float()
                got, again = sampler(*last).float(), sampler(*last).float()
                print(f'{name}: graph replay vs direct call, batch {B}: max abs diff '
                      f'{(got - ref).abs().max().item():.2e}; replay vs replay: '
                      f'{"bit-identical" if torch.equal(got, again) else "DIFFERENT"}', flush=True)
                bases = {'step': ['grouped'], 'triton': ['step', 'grouped'], 'prefix': ['step', 'grouped'],
                         'small': ['step', 'grouped']}.get(
                    key, ['fused' if attn else 'separate'])  # one change at a time, else the nearest row that ran
                base = next((INFER_VARIANTS[k] for k in bases if INFER_VARIANTS[k] in outs), None)
                got1 = sampler(*first).float()  # and at the first batch size ('small' runs its kernel at batch 1 only)
                if base:
                    for b_, now, before in ((B, got, outs[base]), (len(first[1]), got1, outs1[base])):
                        err = ((now - before).norm() / before.norm()).item()
                        print(f'{name} vs {base}, batch {b_}: relative difference {err:.2e}', flush=True)
                elif key != 'separate':
                    print(f'{name}: no row it changes ran before it ({", ".join(bases)}): not compared', flush=True)
                outs[name], outs1[name] = got, got1
                if key == 'fused':  # the autotuned row compares with its replay
                    fused_sampler = sampler
                for B in profiled_sizes:  # batch 1 by default; '1,8' also shows where batch 8's time goes
                    kernel_breakdown(lambda: sampler(*same[B]), f'one batch-{B} call, {name}')
                B = len(first[1])
                if not fused:  # real-time chunking with the compiled layers and no graph, and replayed from a graph
                    direct = row('compiled layers, no CUDA graph, real-time chunking (guided)', rtc_call(*first), B,
                                 rtc_n)
                    replay = row('compiled layers + CUDA graph, real-time chunking (guided)',
                                 rtc_call(*first, sampler=sampler), B, rtc_n)
                    err = ((replay() - direct()).norm() / direct().norm()).item()
                    print(f'guided: graph replay vs direct call, relative difference {err:.2e}', flush=True)
                elif key in ('fused', 'grouped'):  # guided calls (serve.Policy's run
                    # grouped; flex: the fused row's; whole-step graphs: guided steps keep the per-layer graphs)
                    row(f'{name} + CUDA graph, real-time chunking (guided{"; serve.py" if attn == "grouped" else ""})',
                        rtc_call(*first, sampler=sampler), B, rtc_n)
            except Exception as err:
                if attn is None:
                    raise
                rows.append(f'| compiled layers + CUDA graph, {name}: failed ({type(err).__name__}) | | | | | | |')
                print(f'{name}: failed: {type(err).__name__}: {str(err)[:500]}', flush=True)
        if infer_autotune:  # the same weights built again, compiled with GEMM autotuning
            base = fused_sampler(*first).float()  # the fused row's graph, replayed at the first batch size
            del model, sampler, fused_sampler, direct, replay  # the first model and its graphs (two would fit, but
            torch.cuda.empty_cache()                           # smaller GPUs than an H200 need not hold both)
            torch.manual_seed(seed)
            tuned = M.build(cfg, device, attn='sdpa', compute_dtype=torch.bfloat16)
            perturb(tuned)
            tuned.set_param_dtype(torch.bfloat16, inference=True).eval().requires_grad_(False)
            sampler = serve.GraphedSampler(tuned, compile_mode='max-autotune-no-cudagraphs', denoise_attn=None,
                                           whole_step=False, pdl=pdl)
            name = 'fused projections, max-autotune'
            for B in batch_sizes[:2]:
                row(f'compiled layers + CUDA graph (`serve.GraphedSampler`), {name}', lambda: sampler(*same[B]), B,
                    infer_calls if B == 1 else max(10, infer_calls // B))
            got = sampler(*first).float()
            print(f'{name} vs fused projections, batch {batch_sizes[0]}: relative difference '
                  f'{((got - base).norm() / base.norm()).item():.2e}', flush=True)
            kernel_breakdown(lambda: sampler(*first), f'one batch-{batch_sizes[0]} call, {name}')
    return rows


def kernel_breakdown(fn, what, top=10):
    """Print where one call's GPU time goes: time per kernel kind, idle gaps, and the kernels taking the most time;
    every kernel in launch order goes to <out_dir>/kernels_<what>.csv (a denoising step's layers show as a pattern)."""
    summary, prof = profiled(fn, 'cuda')
    events, per_name = kernel_events(prof), {}
    path = os.path.join(out_dir, 'kernels_' + re.sub(r'[^a-z0-9]+', '_', what.lower()).strip('_') + '.csv')
    with open(path, 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['kernel', 'kind', 'start_us', 'duration_us'])
        t0 = events[0][1] if events else 0
        w.writerows([name, kernel_kind(name), f'{start - t0:.1f}', f'{dur:.1f}'] for name, start, dur in events)
    for name, _, dur in events:
        n, total = per_name.get(name, (0, 0.0))
        per_name[name] = (n + 1, total + dur / 1e3)
    print(f"\nkernels of {what}: {sum(n for n, _ in per_name.values())} kernels, {summary.pop('span'):.2f} ms from "
          f"first to last; " + ', '.join(f'{k} {v:.2f} ms' for k, v in sorted(summary.items(), key=lambda kv: -kv[1]))
          + f'; each kernel: {path}')
    print('| kernel | calls | total ms | us per call |\n|---|---|---|---|')
    for name, (n, total) in sorted(per_name.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f'| `{name[:90]}` | {n} | {total:.2f} | {1e3 * total / n:.1f} |')
    print(flush=True)


FIT_GPUS = {'80 GB (A100, H100)': 79.1, '48 GB (RTX 6000 Ada, A6000)': 47.5, '24 GB (RTX 4090)': 23.6}  # GiB torch reports
FIT_PRECISIONS = [dict(param_dtype='float32'), dict(param_dtype='bfloat16'),  # the first that fits is taken
                  dict(param_dtype='float32', lora=True), dict(param_dtype='bfloat16', lora=True)]


def fit_table(named, batches, peak, device, top=1):
    """For each GPU size: the precision (default first), micro-batch and recompute memory.plan_fit chooses (with top
    > 1, the first `top` settings that fit, fastest first by the speed model), run on this GPU capped to that size
    (torch.cuda.set_per_process_memory_fraction), with predicted and measured peaks (allocated, and reserved by the
    caching allocator, which the cap limits) and step times."""
    total = torch.cuda.get_device_properties(0).total_memory / memory.GIB
    lines = ['| GPU | setting | samples/s | predicted ms/step | predicted peak GiB | measured peak GiB | error | reserved GiB |',
             '|---|---|---|---|---|---|---|---|']
    for gpu_name, gib in FIT_GPUS.items():
        if fit_gpu not in gpu_name:
            continue
        for precision in FIT_PRECISIONS:
            conf = dict(train.default_config(), model_name=model_name, ema=False, **precision)
            found = memory.fit_candidates(conf, train.model_config(conf), gib)
            if found:
                break
        for t, B, accum, rc, plan in found[fit_skip:fit_skip + top]:
            setting = (f"{'LoRA, ' if precision.get('lora') else ''}param_dtype={precision['param_dtype']}, "
                       f"micro_batch {B} x grad_accum {accum}, recompute={rc!r}")
            free_memory()
            if torch.cuda.memory_allocated():
                print(f'{torch.cuda.memory_allocated() / memory.GIB:.2f} GiB still allocated before this row', flush=True)
            torch.cuda.set_per_process_memory_fraction(min(1.0, gib / total))
            try:
                r = run_row(f'{gpu_name}: {setting}', dict(named['default'][1], recompute=rc, **precision), batches,
                            peak, device, grad_accum=accum)  # micro-batch: the batch of 32 split accum ways
                measured = (f"{r['peak_gib']:.1f} | {100 * (plan['peak'] - r['peak_gib']) / r['peak_gib']:+.1f}% | "
                            f"{torch.cuda.max_memory_reserved() / memory.GIB:.1f}")  # what the cap is checked against
                speed = f"{r['samples_s']:.1f}"
            except torch.OutOfMemoryError as e:  # what was held when it failed, and what a later row inherits
                peak_at = torch.cuda.max_memory_allocated() / memory.GIB
                print(f'{gpu_name}: {setting}: {str(e).splitlines()[0]}', flush=True)
                measured, speed = f'out of memory (allocated {peak_at:.1f} at most) | | ', '-'
            finally:
                torch.cuda.set_per_process_memory_fraction(1.0)
            lines.append(f"| {gpu_name} | {setting} | {speed} | {t:.0f} | {plan['peak']:.1f} | {measured} |")
            print(lines[-1], flush=True)
    return lines


def table(results):
    lines = ['| setting | ms/step | samples/s | TFLOP/s | MFU | peak GiB | prompt slots | setup s |',
             '|---|---|---|---|---|---|---|---|']
    for r in results:
        lines.append(f"| {r['row']} | {r['ms']:.1f} | {r['samples_s']:.1f} | {r['tflops']:.0f} | {r['mfu']:.1%} | "
                     f"{r['peak_gib']:.1f} | {r['tokens']} | {r['setup_s']:.0f} |")
    return '\n'.join(lines)


def recompute_rows(named, active):
    """The rows the recompute table needs beyond `active` ('recompute none' and 'recompute vit' reuse the
    default and recomputevit rows when those run anyway)."""
    base, have = named['default'][1], {label for label, _ in active}
    return [(f'recompute {p}', dict(base, recompute=p)) for p in
            ('none', 'vit', 'vit,layers.*.vlm.mlp', 'vit,layers.*.attn', 'vit,layers.*.expert.mlp')
            if not (p == 'none' and named['default'][0] in have or p == 'vit' and named['recomputevit'][0] in have)]


def recompute_costs(named, results, cfg, micro_batch):
    """{unit kind: (activation GiB saved, ms added)} per sample, from the recompute rows of a run: ViT recompute
    against none, each further kind against ViT-only recompute (the kind a row adds is the one memory.recomputed
    sees fully recomputed beyond the ViT)."""
    rc = {r['row'].split(' ', 1)[1]: r for r in results if r['row'].startswith('recompute ')}
    by_row = {r['row']: r for r in results}
    rc.setdefault('none', by_row.get(named['default'][0]))
    rc.setdefault('vit', by_row.get(named['recomputevit'][0]))
    rc = {k: v for k, v in rc.items() if v}
    if 'none' not in rc or 'vit' not in rc:
        return {}
    costs = {}
    for spec, r in rc.items():
        if spec == 'none':
            continue
        base = rc['none'] if spec == 'vit' else rc['vit']
        kinds = [k for k, share in memory.recomputed(cfg, spec, nested=False).items() if share == 1]
        kind = 'vit' if spec == 'vit' else next(k for k in kinds if k != 'vit')
        costs[kind] = ((base['peak_gib'] - r['peak_gib']) / micro_batch, (r['ms'] - base['ms']) / micro_batch)
    return costs


def recompute_table_md(costs, micro_batch):
    lines = [f'| recomputed | activation GiB saved | ms added | ms per GiB (micro-batch {micro_batch}) |', '|---|---|---|---|']
    for kind, (gib, ms) in costs.items():
        lines.append(f'| {kind} | {gib * micro_batch:.1f} | {ms * micro_batch:.1f} | {ms / gib if gib > 0 else float("nan"):.1f} |')
    return '\n'.join(lines)


def write_memory_table(costs, path, measured):
    """The per-sample costs memory.py reads (memory_table.json), written atomically; a kind whose recompute measured
    as saving nothing or as faster costs 0."""
    table = dict(measured=measured, act_gib={k: round(max(0.0, g), 4) for k, (g, _) in costs.items()},
                 ms={k: round(max(0.0, m), 3) for k, (_, m) in costs.items()})
    with open(f'{path}.tmp', 'w') as f:
        json.dump(table, f, indent=1)
        f.write('\n')
    os.replace(f'{path}.tmp', path)
    print(f'wrote {path}: {table}')


if __name__ == '__main__':
    exec(open(os.path.join(HERE, 'configurator.py')).read())
    os.makedirs(out_dir, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = not infer  # training rows as train.py sets it, inference as serve.py
    torch.manual_seed(seed)
    device = M.resolve_device('auto')
    gpu = torch.cuda.get_device_name() if device == 'cuda' else 'CPU (dry run)'
    named = named_rows()
    wanted = [s for s, _, _ in LADDER] if rows == 'ladder' else rows.split(',')
    unknown = sorted({r for r in wanted + profile.split(',') if r and r not in named})
    if unknown and not (compare or fit or infer or fp8_validate):
        raise SystemExit(f"bench.py: unknown rows {unknown}: --rows (or 'ladder') and --profile take {sorted(named)}")
    if model_name not in M.configs:
        raise SystemExit(f'bench.py: unknown --model_name={model_name!r}: one of {sorted(M.configs)}')
    if compare not in ('', 'fp8', 'fp32'):
        raise SystemExit(f"bench.py: compare={compare!r}: expected 'fp8' or 'fp32' (loss curves beside the default row)")
    for key, low in (('steps', 1), ('warmup', 0), ('compare_steps', 1), ('batch_size', 1)):
        if globals()[key] < low:
            raise SystemExit(f'bench.py: {key}={globals()[key]}: expected an int >= {low}')
    if fit and device != 'cuda':
        raise SystemExit('bench.py: --fit=True runs each setting on a CUDA GPU capped to each size; this machine has none')
    if compare:
        print(f'{gpu} | torch {torch.__version__} | compare default vs {compare}', flush=True)
        compare_losses(named, compare, compare_steps, device)
        raise SystemExit
    cfg = M.configs[model_name]
    lengths = prompt_lengths()
    batches = row_batches(cfg, lengths)
    if fp8_validate:
        write_fp8_keep_list(named, batches, device)
        raise SystemExit
    if infer:
        print(f"{gpu} | torch {torch.__version__} | {model_name} inference, {time.strftime('%Y-%m-%d')}", flush=True)
        try:
            infer_choices()  # a bad --infer_* value stops here, in one line
        except ValueError as err:
            raise SystemExit(f'bench.py: {err}') from None
        print('\n'.join(infer_table(lengths, device)))
        raise SystemExit
    peak = train.measure_matmul_tflops() if device == 'cuda' else float('nan')
    print(f"{gpu} | torch {torch.__version__} | bf16 matmul {peak:.0f} TFLOP/s | "
          f"prompt lengths {min(lengths)}-{max(lengths)} tokens ({'tokenizer' if tokenizer else 'estimate'})", flush=True)
    if fit:
        print('\n'.join(fit_table(named, batches, peak, device, fit_top)))
        raise SystemExit
    active = [named[r] for r in wanted]
    if recompute_table:
        active += recompute_rows(named, active)
    profiled_labels = {named[r][0] for r in profile.split(',') if r}
    results = []
    for label, settings in active:
        try:
            r = run_row(label, settings, batches, peak, device, profile_step=label in profiled_labels)
        except torch.OutOfMemoryError as e:
            print(f'{label}: out of memory ({str(e).splitlines()[0]})', flush=True)
            continue
        except Exception as e:  # report and go on with the next row
            print(f'{label}: FAILED {type(e).__name__}: {str(e)[:2000]}', flush=True)
            continue
        results.append(r)
        print(json.dumps(r), flush=True)
        with open(os.path.join(out_dir, 'results.json'), 'w') as f:
            json.dump(results, f, indent=1)
    print(f"\n{gpu}, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}, "
          f"micro-batch {batch_size}, bf16 matmul peak {peak:.0f} TFLOP/s (measured)\n")
    print(table(results))
    if recompute_table:
        costs = recompute_costs(named, results, cfg, batch_size)
        print('\n' + recompute_table_md(costs, batch_size))
        slots = {r['tokens'] for r in results}
        if model_name == 'pi05' and set(costs) == set(memory.MEASURED_KINDS) and slots == {64}:  # memory.py's layout
            write_memory_table(costs, memory_table_out, f"python bench.py --recompute_table=True: {gpu}, torch "
                               f"{torch.__version__}, {time.strftime('%Y-%m-%d')}, micro-batch {batch_size}, "
                               f"attn={named['default'][1]['attn']!r}, 64 prompt slots; results {out_dir}/results.json")
        else:
            print(f'{memory_table_out} not rewritten: it holds pi05 at 64 prompt slots with every kind measured')
