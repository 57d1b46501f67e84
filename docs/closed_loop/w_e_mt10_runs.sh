#!/bin/bash
# Session 10 (2026-12-05), issue 16: MT10 training runs side by side, each its own seed and train.py flags, then each
# run's checkpoint evaluated (EMA weights, noise scale 1, 10 episodes per task). Usage, one word per run:
#   RUNS="A:2:--flow_draws=4 B:3:--flow_draws=4" bash docs/closed_loop/w_e_mt10_runs.sh
# (name:seed:flags, flags joined by commas; names without '_'). TRAIN_END / EVAL_END as in mt10_call.sh. Two runs
# side by side end 6000 iterations in 224-284 s at micro-batch 128; more may not end by TRAIN_END (eval_last then says
# MID-SCHEDULE). At micro-batch 256 (config/metaworld.py since session 20) one run alone takes 226-250 s.
# Used by z_g_mt10_camera_dropout.sh.
: ${RUNS:?set RUNS, e.g. RUNS=\"A:2:--flow_draws=4\"}
source docs/closed_loop/mt10_call.sh
names=""
for r in $RUNS; do
  IFS=: read -r name seed flags <<< "$r"; names="$names $name"; el "$name: seed $seed ${flags//,/ }"
  train_bg $name $seed $TRAIN_END ${flags//,/ }
done
wait
n=$(echo $names | wc -w); w=$(( 16 / n )); [ $w -gt 0 ] || w=1
for name in $names; do eval_last $name $w $EVAL_END & done
wait
report $names
