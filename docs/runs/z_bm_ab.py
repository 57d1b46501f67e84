"""2026-12-07 (issue 18): one change to one bench.py row, timed against the row itself in one process, A B A B ...,
so that the card, the clocks and the process are the same for both (bench.py's rows are each timed once).

    PYTHONPATH=. python docs/runs/z_bm_ab.py --base=sdpa --change=cat_projections=True --out_dir=out   # fits 80 GB
    PYTHONPATH=. python docs/runs/z_bm_ab.py --base=default --change=cat_projections=True              # an H200
    PYTHONPATH=. python docs/runs/z_bm_ab.py --base=fp32master --grad_accum=2                           # fp32 master, 80 GB
    PYTHONPATH=. python docs/runs/z_bm_ab.py --model_name=tiny --steps=1 --warmup=1 --pairs=1            # CPU: it runs
"""
import argparse
import ast
import json
import os
import statistics

import bench
import train

p = argparse.ArgumentParser()
p.add_argument('--base', default='sdpa', help="bench.py row ('sdpa' fits 80 GB; 'default' needs ~96 GiB)")
p.add_argument('--change', default='cat_projections=True', help='train.py config key=value set on the B rows')
p.add_argument('--pairs', type=int, default=2)
p.add_argument('--grad_accum', type=int, default=1, help='micro-batches a step (2: fp32 master weights fit 80 GB)')
p.add_argument('--model_name', default='pi05')
p.add_argument('--steps', type=int, default=10)
p.add_argument('--warmup', type=int, default=2)
p.add_argument('--out_dir', default='ab_out')
a = p.parse_args()
key, value = a.change.split('=', 1)
if key not in train.default_config():
    raise SystemExit(f'--change={a.change}: {key!r} is not a train.py config key')
try:
    value = ast.literal_eval(value)
except (ValueError, SyntaxError):
    pass  # a string
device, batches, peak, label, base = bench.script_setup(a.base, a.model_name, a.steps, a.warmup, a.out_dir,
                                                         note=f' | B: {key}={value!r}')
results = []
for i in range(a.pairs):
    for name, settings in (('A', base), ('B', dict(base, **{key: value}))):
        r = bench.run_row(f'{name}{i + 1}: {a.base}' + (f' + {key}={value!r}' if name == 'B' else ''), settings, batches,
                          peak, device, grad_accum=a.grad_accum)
        results.append(r)
        print(json.dumps(r), flush=True)
        with open(os.path.join(a.out_dir, 'results.json'), 'w') as f:
            json.dump(results, f, indent=1)
print('\n' + bench.table(results))
ms = {n: [r['ms'] for r in results if r['row'].startswith(n)] for n in 'AB'}
print(f"\nA median {statistics.median(ms['A']):.1f} ms/step, B median {statistics.median(ms['B']):.1f} "
      f"({statistics.median(ms['B']) / statistics.median(ms['A']) - 1:+.2%}); A {ms['A']}, B {ms['B']}")
