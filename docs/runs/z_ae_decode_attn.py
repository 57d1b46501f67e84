"""decode_attn.py's kernel alone at pi05's denoising shapes, against the grouped attention it replaces (issue 17).

Both are timed as the served call runs them: 18 calls (one per expert layer) captured in one CUDA graph, the
replay timed with CUDA events and divided by 18, so launch overhead is left out as in serve.GraphedSampler. The
grouped attention is compiled by inductor (fullgraph) as one function with its two key concatenations, as a
denoising step compiles it; both get the prefix padded to a multiple of 8 keys, as Pi05.prefix_cache pads it. The kernel is swept over block sizes, warps, pipeline stages and key splits; each configuration is
checked against the grouped outputs first. The last line names the fastest at batch 1 (PROGRAMS: its key splits
times its row blocks, which decode_attn.launch's default split count aims at):
    python docs/runs/z_ae_decode_attn.py            # ~2 min on an H100
    DEFAULTS <BLOCK_M> <BLOCK_N> <NUM_WARPS> <NUM_STAGES> <PROGRAMS>
"""
import itertools
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import decode_attn  # noqa: E402
import flex_mask  # noqa: E402
import model as M  # noqa: E402

LAYERS, T1, TQ, DH = 18, 576, 50, 256  # pi05: 18 expert layers; LIBERO's bucket: 576 prefix keys; 50 actions


def inputs(B):
    """As Pi05.prefix_cache makes them for 'grouped' and 'triton': the prefix padded with masked zero keys to a
    key count that is a multiple of 8."""
    g = torch.Generator(device='cuda').manual_seed(0)
    bf = dict(device='cuda', dtype=torch.bfloat16, generator=g)
    pad = -(T1 + TQ) % 8
    q = torch.randn(B, TQ, 8, DH, **bf)
    k1, v1 = (torch.nn.functional.pad(torch.randn(B, T1, 1, DH, **bf), (0, 0, 0, 0, 0, pad)) for _ in range(2))
    k2, v2 = (torch.randn(B, TQ, 1, DH, **bf) for _ in range(2))
    valid = torch.ones(B, T1 + pad + TQ, dtype=torch.bool, device='cuda')
    valid[:, 560:T1 + pad] = False  # prompt padding, then the pad keys
    return q, k1, v1, k2, v2, flex_mask.additive_mask(valid, T1 + pad, torch.float32, q_start=T1 + pad)


def per_call_us(fn, reps=50):
    """fn run LAYERS times inside one CUDA graph; microseconds per call, median of `reps` replays."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(LAYERS):
            fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / LAYERS)
    return sorted(times)[len(times) // 2]


def main():
    print(torch.cuda.get_device_name(), 'torch', torch.__version__, flush=True)
    grouped = torch.compile(lambda q, k1, v1, k2, v2, mask: M.attention(
        q, torch.cat([k1, k2], 1), torch.cat([v1, v2], 1), mask, 'grouped'), fullgraph=True, dynamic=False)
    best = {}
    print('| batch | attention | us per call | max abs diff vs grouped |\n|---|---|---|---|')
    for B in (1, 8):
        x, seen = inputs(B), set()
        with torch.no_grad():
            ref = grouped(*x)
            print(f'| {B} | grouped (inductor, two products + softmax + concatenations) | {per_call_us(lambda: grouped(*x)):.1f} | 0 |', flush=True)
            for bm, bn, warps, stages, splits in itertools.product((16, 32), (64, 128), (4, 8), (2, 3), (1, 2, 4, 8)):
                if B > 1 and splits > 2:  # batch 8 has 8x the programs already
                    continue
                splits = decode_attn.split_keys(x[1].shape[1] + TQ, bn, splits)[0]  # what launch() will run
                if (bm, bn, warps, stages, splits) in seen:
                    continue
                seen.add((bm, bn, warps, stages, splits))
                cfg = dict(block_m=bm, block_n=bn, num_warps=warps, num_stages=stages, splits=splits)
                try:
                    got = decode_attn.launch(*x, **cfg)
                except Exception as err:  # e.g. out of shared memory at the largest tiles
                    print(f'| {B} | kernel {bm}/{bn}/{warps}/{stages}/{splits}: failed ({type(err).__name__}) | | |', flush=True)
                    continue
                diff = (got.float() - ref.float()).abs().max().item()
                if diff > 5e-2:
                    print(f'| {B} | kernel {bm}/{bn}/{warps}/{stages}/{splits}: WRONG | | {diff:.2e} |', flush=True)
                    continue
                us = per_call_us(lambda: decode_attn.launch(*x, **cfg))
                print(f'| {B} | kernel BLOCK_M {bm} / BLOCK_N {bn} / {warps} warps / {stages} stages / {splits} splits | {us:.1f} | {diff:.2e} |', flush=True)
                if B == 1 and us < best.get('us', float('inf')):  # PROGRAMS: the programs this split count makes
                    best = dict(us=us, cfg=(bm, bn, warps, stages, splits * -(-TQ * 8 // bm)))
    print('DEFAULTS', *best['cfg'])


if __name__ == '__main__':
    main()
