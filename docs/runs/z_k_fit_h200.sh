#!/bin/bash
# Prepared 2026-12-05 (session 13) for a device call on an H200 (issue 18; run with kind nvidia-h200), not run yet.
# The three sizes' picks of the current account on the H200, one process each (a row that ran out of memory can leave
# memory to the next): 80 GB (fp32 master weights, micro-batch 32 with ViT + attention recompute; an H100 ran it at
# 50.6 samples/s, goal 55), 48 GB (bf16 weights, 16 x 2 with ViT; H100 52.0) and 24 GB (LoRA, 32 x 1 with full
# recompute; H100 53.3 where the earlier pick 8 x 4 gave 30.4). The H200's earlier picks: 48.7 / 52.1 / 36.6
# (docs/logs/fit_2026-12-01.log).
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
for g in 80 48 24; do
  timeout $(left $((200 + 130 * (g == 80 ? 0 : g == 48 ? 1 : 2)))) python3 bench.py --fit=True --fit_gpu=$g --fit_top=1 \
    --steps=6 --warmup=2 > $L/fit$g.txt 2>&1; el "fit $g rc $?"; grep "^| $g" $L/fit$g.txt | tail -n 1
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
