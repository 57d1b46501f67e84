#!/bin/bash
# Prepared 2026-12-05 (session 11) for a device call (issue 18); ran in session 12 on an H100 (docs/logs/fit_2026-12-05_h100.log)
# under the constants described here, since replaced (memory.py). The 80 GB plan. memory.plan_fit picks
# micro-batch 8 x 4 with no recompute for an 80 GB GPU (48.7 samples/s under the cap on the H200,
# docs/logs/fit_2026-12-01.log); its speed model ranks next 32 x 1 with ViT + attention recompute, 16 x 2 with ViT
# recompute, 16 x 2 with ViT + attention, 8 x 4 with ViT (570, 578, 581, 588, 601 ms per step and 67.1, 77.0, 73.5,
# 71.2, 63.4 GiB predicted by memory.fit_candidates as bench.py calls it, fp32 master weights, no EMA; computed on a
# CPU on 2026-12-05). The predicted times lie within 5%: measure the first five under the
# 80 GB cap (torch.cuda.set_per_process_memory_fraction), so the speed model can be corrected where its order is wrong.
source docs/closed_loop/device_setup.sh  # T0, el, left: the deadline counts the setup too
L=$OUT/logs; mkdir -p $L
timeout $(left 570) python3 bench.py --fit=True --fit_gpu=80 --fit_top=5 --steps=6 --warmup=2 --out_dir=$L/fit > $L/fit.txt 2>&1; rc=$?
el "rc $rc"; grep "^|\|Error\|error" $L/fit.txt | head -n 30
cd $OUT && tar czf logs.tgz logs && rm -rf logs
