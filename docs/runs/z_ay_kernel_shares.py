"""Where one profiled training step's kernel time goes, finer than bench.py's kinds: reads a kernels_*.csv written by
bench.kernel_breakdown (plain or gzipped) and sums the time per group of kernels (inductor's fused-op names without
their serial number, sorted into casts, norms, RoPE, gelu, ...), with counts. Usage:
    python docs/runs/z_ay_kernel_shares.py <untarred logs>/prof/kernels_one_step_of_*.csv.gz [--top=25]
    (or any docs/logs/kernels_*/ file; fp8 GEMMs are told by cuBLASLt's sm90 names, nvjet_sm90_qq...)"""
import csv
import gzip
import re
import sys
from collections import defaultdict


def group(name):
    n = name.lower()
    if any(s in n for s in ('nvjet', 'gemm', 'cutlass', 'xmma', 'cublaslt')):
        fp8 = re.search(r'nvjet_(sm\d+_)?qq', n) or any(s in n for s in ('e4m3', 'e5m2', 'f8'))
        return 'GEMM ' + ('fp8' if fp8 else 'bf16/fp32')
    if any(s in n for s in ('sdpa', 'fmha', 'flash', 'attention', 'flex')):
        return 'attention ' + ('backward' if 'bprop' in n or 'bwd' in n or 'backward' in n else 'forward')
    if 'adam' in n or 'multi_tensor' in n:
        return 'optimizer: ' + n[:60]
    if not n.startswith('triton'):
        return 'other: ' + n[:60]
    ops = re.sub(r'^triton_(poi|red|per|tem|for)_fused_?', '', n)
    ops = re.sub(r'_\d+$', '', ops)
    parts = set(p for p in re.split(r'_+', ops) if p and not p.isdigit())
    if parts and parts <= {'to', 'copy', 'view', 't', 'clone', 'permute', 'transpose', 'unsafe', 'expand'}:
        return 'Triton: casts / copies only'
    if 'rsqrt' in parts:
        return 'Triton: norms (rsqrt), incl. their backward'
    if parts & {'cos', 'sin'}:
        return 'Triton: RoPE'
    if parts & {'tanh', 'gelu', 'erf'}:
        return 'Triton: gelu'
    if parts & {'amax', 'abs', 'clamp', 'reciprocal'}:
        return 'Triton: amax / scales (fp8)'
    if parts & {'sum'}:
        return 'Triton: reductions (sum: bias grads, norms of grads)'
    return 'Triton: other fused elementwise'


def main():
    paths = [a for a in sys.argv[1:] if not a.startswith('--')]
    bad = [a for a in sys.argv[1:] if a.startswith('--') and not a.startswith('--top=')]
    if bad or not paths:
        raise SystemExit(f'usage: python {sys.argv[0]} kernels_*.csv[.gz] ... [--top=N] (not {bad})')
    top = int(next((a.split('=')[1] for a in sys.argv[1:] if a.startswith('--top=')), 25))
    for path in paths:
        with (gzip.open(path, 'rt') if path.endswith('.gz') else open(path)) as f:
            rows = list(csv.DictReader(f))
        groups, names = defaultdict(lambda: [0, 0.0]), defaultdict(lambda: [0, 0.0])
        end, idle = None, 0.0
        for r in rows:
            s, d = float(r['start_us']), float(r['duration_us'])
            if end is not None:
                idle += max(0.0, s - end) / 1e3
            end = max(end or 0.0, s + d)
            for table, key in ((groups, group(r['kernel'])), (names, r['kernel'][:100])):
                table[key][0] += 1
                table[key][1] += d / 1e3
        total = sum(v[1] for v in groups.values())
        print(f'\n{path}: {len(rows)} kernels, {total:.1f} ms of kernel time, {idle:.1f} ms idle, span {end / 1e3:.1f} ms')
        print('| group | kernels | ms |\n|---|---|---|')
        for k, (n, ms) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
            print(f'| {k} | {n} | {ms:.1f} |')
        print(f'\ntop {top} kernels\n| kernel | calls | ms | us per call |\n|---|---|---|---|')
        for k, (n, ms) in sorted(names.items(), key=lambda kv: -kv[1][1])[:top]:
            print(f'| `{k}` | {n} | {ms:.2f} | {1e3 * ms / n:.1f} |')


if __name__ == '__main__':
    main()
