#!/bin/bash
# Note (session 13): memory.py no longer caps LoRA at micro-batch 8; run again, its 24 GB rows would be other settings.
# Session 12 (2026-12-05), issue 18: memory.py's speed model now charges ~42 ms per micro-step (it was 10), so the
# 80 GB plan is micro-batch 32 x 1 with ViT + attention recompute (50.6 samples/s on an H100 against 41.2 for the old
# 8 x 4, docs/logs/fit_2026-12-05_h100.log). The 48 and 24 GB plans changed too: 48 GB bf16 params 16 x 2 ViT (45.7 GiB
# predicted), then 16 x 2 ViT + attention (43.5); 24 GB LoRA 32 x 1 ViT + Gemma MLP (22.0), then 32 x 1 ViT + MLP +
# attention (18.4). Measure the first two of each under the cap, then the old picks (8 x 4 none, 8 x 4 ViT +
# attention) with the old constants, on the same GPU. Ran once (docs/logs/fit_2026-12-05_h100_48_24.log), before
# memory.LORA_MAX_MICRO: run again, its 24 GB rows would be LoRA 8 x 4 settings.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
for g in 48 24; do
  timeout $(left 290) python3 bench.py --fit=True --fit_gpu=$g --fit_top=2 --steps=6 --warmup=2 --out_dir=$L/new$g > $L/new$g.txt 2>&1
  el "new $g rc $?"; grep "^| [0-9]" $L/new$g.txt | tail -n 2
done
sed -i 's/sample=13.75, layers=2.8, micro=42.0/sample=15.0, layers=2.8, micro=10.0/' memory.py
for g in 48 24; do
  timeout $(left 420) python3 bench.py --fit=True --fit_gpu=$g --fit_top=1 --steps=6 --warmup=2 --out_dir=$L/old$g > $L/old$g.txt 2>&1
  el "old $g rc $?"; grep "^| [0-9]" $L/old$g.txt | tail -n 1
done
grep -h "Error\|error" $L/*.txt | head -n 10
cd $OUT && tar czf logs.tgz logs && rm -rf logs
