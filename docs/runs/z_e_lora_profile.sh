#!/bin/bash
# Ran 2026-12-05 (session 13) on one H100, with the limit lowered to 380 s: the default row ran out of memory (it needs ~96 GiB), the lora row ran (docs/logs/bench_2026-12-05_h100_lora.log).
# (its ~1.4x below was the earlier speed model's; memory.py now says 0.53x per sample and 96 ms more per micro-step)
# Prepared 2026-12-05 (session 12) for a device call (issue 18), not run yet. LoRA costs ~1.4x the ms per sample of
# full training (H200: LoRA 8 x 4 with ViT + attention recompute 874 ms per step, full 8 x 4 657 ms; H100: 1053 ms,
# docs/logs/fit_2026-12-01.log, docs/logs/fit_2026-12-05_h100_48_24.log), although it skips the base weights' gradient GEMMs.
# Where the time goes: the default row and the same with lora=True (micro-batch 32, no recompute), each profiled.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left 560) python3 bench.py --rows=default,lora --profile=default,lora --steps=6 --warmup=2 --out_dir=$L/bench > $L/bench.txt 2>&1
el "bench rc $?"; grep "^| \|profile of" $L/bench.txt | grep -v "^| \`" | head -n 12
cd $OUT && tar czf logs.tgz logs && rm -rf logs
