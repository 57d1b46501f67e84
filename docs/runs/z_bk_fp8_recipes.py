"""2026-12-07 (issue 18): torchao's fp8 scaling recipes on one training row, in one process. fp8.py converts with the
'tensorwise' recipe; this times the same row with 'rowwise' (per-row scales, powers of two) and 'rowwise_with_gw_hp'
(per-row scales, the weight-gradient GEMM left in bf16) instead, by replacing fp8.fp8_config for each row. The
keep-list (fp8_keep.txt) is the one measured for tensorwise. Rows are bench.py's, built and timed by its run_row.

    PYTHONPATH=. python docs/runs/z_bk_fp8_recipes.py --base=sdpa --out_dir=out   # an 80 GB GPU (bf16 weights, ViT recompute)
    PYTHONPATH=. python docs/runs/z_bk_fp8_recipes.py --base=default              # an H200 (fp32 master, no recompute)
    PYTHONPATH=. python docs/runs/z_bk_fp8_recipes.py --model_name=tiny --steps=1 --warmup=1   # CPU: the rows build

On the device after `source docs/closed_loop/device_setup.sh` (which sets PYTHONPATH to its wheels) use
PYTHONPATH=.:/tmp/site. Runs 2026-12-07 on H100s: docs/runs/bi/fp8_recipes_h100/ (rowwise),
docs/runs/bj/fp8_recipes_h100/ (rowwise_with_gw_hp).
"""
import argparse
import json
import os
from dataclasses import replace

from torchao.float8 import Float8LinearConfig

import bench
import fp8

p = argparse.ArgumentParser()
p.add_argument('--base', default='sdpa', help="bench.py row the fp8 rows add to ('sdpa' fits 80 GB; 'default' needs ~96 GiB)")
p.add_argument('--recipes', default='tensorwise,rowwise,rowwise_with_gw_hp')
p.add_argument('--profile', default='tensorwise,rowwise', help='recipes whose step is profiled (kernel kinds)')
p.add_argument('--model_name', default='pi05')
p.add_argument('--steps', type=int, default=10)
p.add_argument('--warmup', type=int, default=2)
p.add_argument('--out_dir', default='fp8_recipes_out')
a = p.parse_args()
device, batches, peak, label, base = bench.script_setup(a.base, a.model_name, a.steps, a.warmup, a.out_dir)
results = []
for recipe in ['none'] + a.recipes.split(','):
    if recipe != 'none':
        fp8.fp8_config = lambda pad_inner_dim=False, r=recipe: replace(Float8LinearConfig.from_recipe_name(r),
                                                                      pad_inner_dim=pad_inner_dim)
    settings = dict(base, fp8=recipe != 'none')
    try:
        r = bench.run_row(a.base if recipe == 'none' else f'{a.base} + fp8 {recipe}', settings, batches, peak, device,
                          profile_step=recipe in a.profile.split(','))
    except Exception as e:  # report and go on with the next recipe
        print(f'{recipe}: FAILED {type(e).__name__}: {str(e)[:1500]}', flush=True)
        continue
    results.append(r)
    print(json.dumps(r), flush=True)
    with open(os.path.join(a.out_dir, 'results.json'), 'w') as f:
        json.dump(results, f, indent=1)
print('\n' + bench.table(results))
