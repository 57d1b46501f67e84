#!/bin/bash
# Prepared 2026-12-05 (session 13), ran 2026-12-06 (session 17) on an H100 (docs/closed_loop/af_results.txt): the second of two chained calls (see z_l_mt50_1_data.sh, which must
# have run on this same warm machine). config/metaworld.py on MT50 x 50 demonstrations, 6000 iterations as on MT10
# (about 4 passes over MT50's frames where MT10 gets 20), seed 42, alone on the GPU; then the last checkpoint's EMA
# weights, noise seed 0, 10 episodes per task at the evaluation seeds (500 episodes, 16 processes).
# EVAL_FLAGS: more eval.py flags (z_ax_mt50_recipe.sh sets --noise_scale=0).
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
[ -d data_cache/mt50 ] || { echo "data_cache/mt50 is not on this machine: run z_l_mt50_1_data.sh first, on the same warm machine"; exit 1; }
rm -rf out/mt50
timeout $(left 330) python3 train.py config/metaworld.py --data_dir=data_cache/mt50 --out_dir=out/mt50 --seed=42 \
  --eval_interval=3000 --keep_last=0 > $L/train.txt 2>&1; el "trained rc $?"
grep -h "parameters\|eval iter\|done:\|non-finite\|skipped\|Error" $L/train.txt | cut -c1-220
c=$(ls -d out/mt50/ckpt_* 2>/dev/null | sort -V | tail -n 1)
grep -q "^done:" $L/train.txt || el "MID-SCHEDULE $c (the run did not end)"
[ -n "$c" ] && timeout $(left 590) python3 eval.py --env=metaworld --tasks=mt50 --ckpt=$c --workers=16 \
  ${EVAL_FLAGS:-} --out_dir=$OUT/mt50 > $L/eval.txt 2>&1; el "evaluated $c: $(tail -n 1 $OUT/mt50/tasks.md 2>/dev/null)"
(cd $OUT && tar czf logs.tgz logs mt50/episodes.csv mt50/*.png 2>/dev/null; rm -rf logs mt50/*.png mt50/episodes.csv)
