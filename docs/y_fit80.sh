#!/bin/bash
# Prepared 2026-12-05 (session 11) for a device call (issue 18), not run yet: the 80 GB plan. memory.plan_fit picks
# micro-batch 8 x 4 with no recompute for an 80 GB GPU (46.3-48.7 samples/s under the cap on the H200, 2026-12-01);
# its speed model ranks next 16 x 2 with ViT + attention recompute, 8 x 4 with ViT recompute, 8 x 4 with ViT +
# attention, 4 x 8 with none (predicted 570, 588, 601, 608, 610 ms per step). Measure the first five under the 80 GB
# cap (torch.cuda.set_per_process_memory_fraction), so the speed model can be corrected where its order is wrong.
source docs/closed_loop/device_setup.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
timeout 560 python3 bench.py --fit=True --fit_gpu=80 --fit_top=5 --steps=6 --warmup=2 --out_dir=$L/fit > $L/fit.txt 2>&1; rc=$?
echo "[$(( $(date +%s) - T0 ))s] rc $rc"; grep "^|\|Error\|error" $L/fit.txt | head -n 30
cd $OUT && tar czf logs.tgz logs && rm -rf logs
