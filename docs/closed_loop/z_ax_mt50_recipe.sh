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
EVAL_FLAGS="--noise_scale=0" exec bash docs/closed_loop/z_l_mt50_2_train_eval.sh
