"""
Throughput and memory of Pi0.5 training on synthetic LIBERO-shaped batches, one row per cumulative setting.

    python bench.py                                   # the ladder on one GPU, markdown table at the end
    python bench.py --rows=default,fp8 --steps=20     # selected rows
    python bench.py --recompute_table=True            # activation GiB saved and ms added per recompute unit
    python bench.py --profile=True --rows=default     # one Kineto trace of a steady-state step + top kernels

The model and the optimizer step are built by train.py's own functions (setup_model, make_optimizer, train_step),
so the numbers are those of the trainer. Batches: 2 real cameras (+ an optional 3rd slot masked in every sample, as
openpi pads LIBERO), 50 actions, prompts in the pi05 format with 8 state values whose lengths follow the 40 LIBERO
instructions (../shared/data/libero_tasks.tsv). Token counts come from the real tokenizer when `tokenizer` is given,
else from an estimate (documented in prompt_lengths).
"""
import csv
import gc
import json
import os
import statistics
import time

import torch

import model as M
import train

# -----------------------------------------------------------------------------
# config (overridable: python bench.py --key=value)
model_name = 'pi05'        # model.configs key
batch_size = 32            # micro-batch per GPU
horizon = 50               # action horizon H
steps = 10                 # timed steps (median reported)
warmup = 3                 # untimed steps (the first includes compilation)
rows = 'ladder'            # 'ladder' or comma-separated row names (see LADDER)
recompute_table = False    # also measure the recompute cost table
profile = False            # write a Kineto trace of the last row's steady-state step and print the top kernels
tokenizer = ''             # path to the PaliGemma SentencePiece model for exact prompt lengths (else an estimate)
tasks_file = '../shared/data/libero_tasks.tsv'
out_dir = 'bench_out'      # JSON/CSV results and the trace
seed = 0
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'configurator.py')).read())
# -----------------------------------------------------------------------------

# each row adds one change to the row above; keys are train.py config globals (host_syncs is emulated here)
COMMUNITY = dict(prune_cameras=False, prompt_bucket=0, attn='eager', recompute='full', compile=False, compile_vision=False,
                 param_dtype='bfloat16', skip_unused=False, batched_vision=False, fused_adamw=False,
                 host_syncs=True, fp8=False)
LADDER = [  # (short name, row label, change)
    ('community', 'community-equivalent', {}),
    ('camera', '+ camera-slot pruning', dict(prune_cameras=True)),
    ('compile', '+ per-layer compile', dict(compile=True)),
    ('flex', '+ FlexAttention', dict(attn='flex')),
    ('vit', 'ViT-only recompute', dict(recompute='vit')),
    ('prompt', '+ prompt-padding pruning', dict(prompt_bucket=32)),
    ('waste', '+ waste removals', dict(skip_unused=True, batched_vision=True, fused_adamw=True, host_syncs=False)),
    ('vision', '+ compiled SigLIP layers', dict(compile_vision=True)),
    ('default', 'default: fp32 master weights', dict(param_dtype='float32')),
    ('fp8', '+ fp8', dict(fp8=True)),
]
VARIANTS = {  # single changes to the default row, for decisions: --rows=default,norecompute,sdpa
    'bf16': ('default with param_dtype=bfloat16', dict(param_dtype='bfloat16')),
    'norecompute': ('default with recompute=none', dict(recompute='none')),
    'sdpa': ('default with attn=sdpa', dict(attn='sdpa')),
    'eagervision': ('default with eager SigLIP', dict(compile_vision=False)),
}


def prompt_lengths():
    """Token counts of the pi05 prompt `Task: {instr}, State: {8 ints};\\nAction: ` for the 40 LIBERO tasks.
    Without the tokenizer: BOS + 1.2 tokens per instruction word + 12 for the fixed text + 3.5 per state value
    (the Gemma tokenizer splits numbers into single digits; a value is a space and 1-3 digits)."""
    if not os.path.exists(tasks_file):
        raise FileNotFoundError(f"{tasks_file} not found: pass --tasks_file=<libero_tasks.tsv> (from ../shared/data)")
    with open(tasks_file) as f:
        instr = [r['instruction'] for r in csv.DictReader(f, delimiter='\t')]
    if tokenizer:
        import data
        import numpy as np
        state = np.linspace(-0.9, 0.9, 8)  # 8 normalized LIBERO state values
        tok = data.load_tokenizer(tokenizer)
        return [len(data.encode_prompt(tok, t, state)) for t in instr]
    return [round(1 + 1.2 * len(t.split()) + 12 + 3.5 * 8) for t in instr]


def make_batch(cfg, B, lengths, gen):
    L = cfg.max_token_len
    lens = torch.tensor([lengths[i] for i in torch.randint(len(lengths), (B,), generator=gen)])
    return dict(images=torch.randint(0, 256, (B, 3, 3, cfg.image_size, cfg.image_size), dtype=torch.uint8, generator=gen),
                image_mask=torch.tensor([True, True, False]).expand(B, 3).clone(),
                tokens=torch.randint(1, cfg.vocab, (B, L), generator=gen) * (torch.arange(L) < lens[:, None]),
                token_mask=torch.arange(L) < lens[:, None],
                actions=torch.randn(B, horizon, cfg.action_dim, generator=gen), sample_id=torch.arange(B))


def matmul_peak(n=8192, iters=30):
    """Sustained bf16 matmul TFLOP/s of this GPU, measured now (MFU is quoted against it)."""
    a, b = torch.randn(n, n, device='cuda', dtype=torch.bfloat16), torch.randn(n, n, device='cuda', dtype=torch.bfloat16)
    for _ in range(5):
        a @ b
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    ev[0].record()
    for _ in range(iters):
        a @ b
    ev[1].record()
    torch.cuda.synchronize()
    return 2 * n ** 3 * iters / (ev[0].elapsed_time(ev[1]) / 1e3) / 1e12


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


def run_row(name, settings, batches, peak, device):
    """Build the model and optimizer as train.py does, run warmup + steps, return the measurements."""
    torch._dynamo.reset()
    gc.collect()
    if device == 'cuda':
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    settings = dict(settings)
    host_syncs = settings.pop('host_syncs', False)
    if device == 'cpu' and settings['attn'] == 'flex':
        settings['attn'] = 'sdpa'  # CPU dry run: FlexAttention has no CPU backward
    conf = dict(train.default_config(), model_name=model_name, action_horizon=horizon, micro_batch=batch_size,
                grad_accum=1, init_from='scratch', max_token_len=M.configs[model_name].max_token_len, **settings)
    t0 = time.time()
    model, raw = train.setup_model(conf, device=device)
    opt = train.make_optimizer(raw, conf)
    prepared = [train.prepare_micro_batch(b, conf, device) for b in batches]
    flops = raw.estimate_flops(prepared[0])
    gen = torch.Generator(device=device).manual_seed(seed)
    timer, marks = Timer(device), []
    for i in range(warmup + steps):
        start = timer.mark()
        loss, gnorm = train.train_step(model, raw, opt, [prepared[i % len(prepared)]], conf, lr=1e-5, gen=gen)
        if host_syncs:  # what openpi's trainer does every step: read the loss and norm on the host
            loss.item(), gnorm.item()
        end = timer.mark()
        if i == warmup - 1:
            loss.item()
            setup_s = time.time() - t0
        if i >= warmup:
            marks.append((start, end))
    loss.item()
    ms = statistics.median(timer.ms(a, b) for a, b in marks)
    if profile and name == named['default'][0] and device == 'cuda':  # the default configuration's step
        write_profile(model, raw, opt, prepared[0], conf, gen)
    mem = torch.cuda.max_memory_allocated() / 2 ** 30 if device == 'cuda' else float('nan')
    res = dict(row=name, ms=ms, samples_s=batch_size / ms * 1e3, tflops=flops / ms / 1e9, mfu=flops / ms / 1e9 / peak,
               peak_gib=mem, setup_s=setup_s, tokens=prepared[0]['tokens'].shape[1], loss=float(loss))
    del model, raw, opt
    return res


def kernel_kind(name):
    n = name.lower()
    if any(s in n for s in ('nvjet', 'gemm', 'cutlass', 'xmma')):
        return 'GEMM'
    if any(s in n for s in ('flex', 'sdpa', 'fmha', 'flash', 'attention')):
        return 'attention'
    if 'adam' in n or 'multi_tensor' in n:
        return 'optimizer'
    return 'fused elementwise (Triton)' if n.startswith('triton') else 'other'


def trace_summary(trace_path):
    """Where one profiled step's time goes: kernel time per kind and GPU idle time (gaps between kernels), from
    the Kineto trace. Returns {kind: ms} with 'span' and 'idle' added."""
    with open(trace_path) as f:
        kernels = sorted((e for e in json.load(f)['traceEvents'] if e.get('ph') == 'X' and e.get('cat') == 'kernel'),
                         key=lambda e: e['ts'])
    out = {'span': 0.0, 'idle': 0.0}
    end = kernels[0]['ts']
    for e in kernels:
        out[kernel_kind(e['name'])] = out.get(kernel_kind(e['name']), 0.0) + e['dur'] / 1e3
        out['idle'] += max(0.0, e['ts'] - end) / 1e3
        end = max(end, e['ts'] + e['dur'])
    out['span'] = (end - kernels[0]['ts']) / 1e3
    return out


def write_profile(model, raw, opt, batch, conf, gen):
    from torch.profiler import ProfilerActivity, profile as kineto
    with kineto(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        train.train_step(model, raw, opt, [batch], conf, lr=1e-5, gen=gen)
        torch.cuda.synchronize()
    path = os.path.join(out_dir, 'trace.json')
    prof.export_chrome_trace(path)
    s = trace_summary(path)
    print(f"\nprofile of one step ({s.pop('span'):.1f} ms from first to last kernel): " +
          ', '.join(f'{k} {v:.1f} ms' for k, v in sorted(s.items(), key=lambda kv: -kv[1])))
    print(prof.key_averages().table(sort_by='self_device_time_total', row_limit=25, max_name_column_width=90))


def table(results):
    lines = ['| setting | ms/step | samples/s | TFLOP/s | MFU | peak GiB | prompt slots | setup s |',
             '|---|---|---|---|---|---|---|---|']
    for r in results:
        lines.append(f"| {r['row']} | {r['ms']:.1f} | {r['samples_s']:.1f} | {r['tflops']:.0f} | {r['mfu']:.1%} | "
                     f"{r['peak_gib']:.1f} | {r['tokens']} | {r['setup_s']:.0f} |")
    return '\n'.join(lines)


if __name__ == '__main__':
    os.makedirs(out_dir, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(seed)
    cfg = M.configs[model_name]
    lengths = prompt_lengths()
    gen = torch.Generator().manual_seed(seed)
    batches = [make_batch(cfg, batch_size, lengths, gen) for _ in range(2)]
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    peak = matmul_peak() if device == 'cuda' else float('nan')
    gpu = torch.cuda.get_device_name() if device == 'cuda' else 'CPU (dry run)'
    print(f"{gpu} | torch {torch.__version__} | bf16 matmul {peak:.0f} TFLOP/s | "
          f"prompt lengths {min(lengths)}-{max(lengths)} tokens ({'tokenizer' if tokenizer else 'estimate'})", flush=True)
    settings, named = dict(COMMUNITY), {}
    for short, label, change in LADDER:
        settings = dict(settings, **change)
        named[short] = (label, dict(settings))
    for short, (label, change) in VARIANTS.items():
        named[short] = (label, dict(named['default'][1], **change))
    active = [named[r] for r in ([s for s, _, _ in LADDER] if rows == 'ladder' else rows.split(','))]
    if recompute_table:  # 'recompute none' and 'recompute vit' reuse the norecompute and default rows when present
        base = named['default'][1]
        have = {r[0] for r in active}
        active += [(f'recompute {p}', dict(base, recompute=p)) for p in
                   ('none', 'vit', 'vit,layers.*.vlm.mlp', 'vit,layers.*.attn', 'vit,layers.*.expert.mlp')
                   if not (p == 'none' and named['norecompute'][0] in have or p == 'vit' and named['default'][0] in have)]
    results = []
    for name, s in active:
        try:
            r = run_row(name, s, batches, peak, device)
        except torch.OutOfMemoryError as e:
            print(f'{name}: out of memory ({str(e).splitlines()[0]})', flush=True)
            continue
        except Exception as e:  # report and go on with the next row
            print(f'{name}: FAILED {type(e).__name__}: {str(e)[:2000]}', flush=True)
            continue
        results.append(r)
        print(json.dumps(r), flush=True)
        with open(os.path.join(out_dir, 'results.json'), 'w') as f:
            json.dump(results, f, indent=1)
    print(f"\n{gpu}, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}, "
          f"micro-batch {batch_size}, bf16 matmul peak {peak:.0f} TFLOP/s (measured)\n")
    print(table(results))
    if recompute_table:
        rc = {r['row'].split(' ', 1)[1]: r for r in results if r['row'].startswith('recompute ')}
        by_row = {r['row']: r for r in results}
        rc.setdefault('none', by_row.get(named['norecompute'][0]))
        rc.setdefault('vit', by_row.get(named['default'][0]))
        rc = {k: v for k, v in rc.items() if v}
        if 'none' in rc and 'vit' in rc:
            print('\n| recomputed | activation GiB saved | ms added | ms per GiB |\n|---|---|---|---|')
            for k, r in rc.items():  # the ViT row against no recompute, the others against ViT-only recompute
                if k == 'none':
                    continue
                base = rc['none'] if k == 'vit' else rc['vit']
                saved, added = base['peak_gib'] - r['peak_gib'], r['ms'] - base['ms']
                print(f"| {k.replace('vit,', '')} | {saved:.1f} | {added:.1f} | "
                      f"{added / saved if saved > 0 else float('nan'):.1f} |")
