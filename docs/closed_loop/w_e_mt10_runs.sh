#!/bin/bash
# Session 10 (2026-12-05), issue 16: MT10 training runs side by side, each its own seed and train.py flags, then each
# checkpoint evaluated (EMA weights, noise scale 1, 10 episodes per task). Usage, one word per run:
#   RUNS="A:2:--flow_draws=4 B:3:--flow_draws=4" bash docs/closed_loop/w_e_mt10_runs.sh
# (name:seed:flags, flags joined by commas). TRAIN_END / EVAL_END: seconds from the start at which training and
# evaluation are cut (defaults 440 / 590, inside one 600 s device call).
source docs/closed_loop/mt10_call.sh
TRAIN_END=${TRAIN_END:-440}; EVAL_END=${EVAL_END:-590}; names=""; n=0
for r in $RUNS; do
  IFS=: read -r name seed flags <<< "$r"; names="$names $name"; n=$((n + 1))
  el "$name: seed $seed ${flags//,/ }"
  timeout $(( TRAIN_END - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --seed=$seed ${flags//,/ } \
    --out_dir=out/mw$name --eval_interval=3000 --keep_last=0 > $L/train_$name.txt 2>&1 &
done
wait
for name in $names; do
  C=$(ls -d out/mw$name/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "$name: $C"
  ev $name $C $(( 16 / n )) $EVAL_END &
done
wait
report $names
