#!/bin/bash
# Prepared 2026-12-06 (session 26) for the device (issue 16: MT50 the way MT10 reached its goal); carry [".whl", ".gl"].
# Two calls chained on the same warm machine (launch the second within the 30 s idle release):
#   STAGE=data bash docs/closed_loop/z_ax_mt50_recipe.sh     # timeout_s 600: MT50 x 50 DART demonstrations at 128 px
#       (clean ones took 202 s in all on an H100, session 17; DART's runs are longer and more expert tries fail)
#   STAGE=train bash docs/closed_loop/z_ax_mt50_recipe.sh    # timeout_s 600: config/metaworld.py (micro-batch 256,
#       6000 iterations: 153-170 s on an H200, 219-250 s on an H100), then the last checkpoint's EMA weights on 10
#       episodes per task (500) sampled from zero noise, 16 processes (session 17's evaluation took 163 s).
# The first MT50 run (session 17, af_results.txt: 57.2%) used clean demonstrations, micro-batch 128 and noise scale 1.
if [ "${STAGE:-}" = data ]; then
  SIM_FLAGS="--action_noise=0.3" exec bash docs/closed_loop/z_l_mt50_1_data.sh
fi
[ "${STAGE:-}" = train ] || { echo "STAGE=data or STAGE=train"; exit 2; }
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
[ -d data_cache/mt50 ] || { echo "data_cache/mt50 is not on this machine: run STAGE=data first, on the same warm machine"; exit 1; }
rm -rf out/mt50
timeout $(left 330) python3 train.py config/metaworld.py --data_dir=data_cache/mt50 --out_dir=out/mt50 --seed=42 \
  --eval_interval=3000 --keep_last=0 > $L/train.txt 2>&1; el "trained rc $?"
grep -h "parameters\|eval iter\|done:\|non-finite\|skipped\|Error" $L/train.txt | cut -c1-220
c=$(ls -d out/mt50/ckpt_* 2>/dev/null | sort -V | tail -n 1)
grep -q "^done:" $L/train.txt || el "MID-SCHEDULE $c (the run did not end)"
[ -n "$c" ] && timeout $(left 590) python3 eval.py --env=metaworld --tasks=mt50 --ckpt=$c --workers=16 \
  --noise_scale=0 --out_dir=$OUT/mt50_noise0 > $L/eval_noise0.txt 2>&1
el "noise scale 0, $c: $(tail -n 1 $OUT/mt50_noise0/tasks.md 2>/dev/null)"
(cd $OUT && tar czf logs.tgz logs mt50_noise*/episodes.csv mt50_noise*/*.png 2>/dev/null; rm -rf logs mt50_noise*/*.png mt50_noise*/episodes.csv)
