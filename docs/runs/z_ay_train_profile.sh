#!/bin/bash
# Session 27 (2026-12-06), issue 18; carry [".whl", ".gl"]; timeout_s 600. What stands between today's training step
# and its goals, kernel by kernel (the last profile, 2026-12-01, kept only the kinds): one profiled steady-state step
# each of train.py's default and of fp8, every kernel to $OUT/logs/prof/kernels_*.csv.gz (bench.kernel_breakdown); then
# the fp8 trace validation on today's default (sdpa, no recompute; last run 2026-11-29 on the default of that day),
# its keep-list written beside the logs, not over fp8_keep.txt; then, by the call's deadline, fp8 against bf16 loss
# curves over 500 steps (last 2026-11-29: Pearson 0.99998, mean relative error 0.94%).
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left 260) python3 bench.py --rows=default,fp8 --profile=default,fp8 --steps=10 --warmup=2 --out_dir=$L/prof \
  > $L/train_profile.txt 2>&1
el "profile rc $?"; grep -E "^\| (\+|default)|^kernels of|^\{" $L/train_profile.txt | cut -c1-260
timeout $(left 400) python3 bench.py --fp8_validate=True --fp8_keep_out=$L/fp8_keep.txt --out_dir=$L/val \
  > $L/fp8_validate.txt 2>&1
el "fp8 validate rc $?"; grep -E "ms/step|^step|keep fp8|drop \(not faster\)|static rules" $L/fp8_validate.txt | cut -c1-200 | head -20
timeout $(left 590) python3 bench.py --compare=fp8 --compare_steps=500 --out_dir=$L/cmp > $L/compare_fp8.txt 2>&1
el "compare rc $?"; tail -n 4 $L/compare_fp8.txt | cut -c1-250
gzip -r $L/prof
cd $OUT && tar czf logs.tgz logs && rm -rf logs
