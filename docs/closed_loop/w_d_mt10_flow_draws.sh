#!/bin/bash
# Prepared 2026-12-04 (session 9), run 2026-12-05 (session 10), issue 16: does training each sample on K flow draws
# sharing one prefix pass (train.py --flow_draws=4) lift MT10? u_cnn_bc.py (the CNN and a flow-matching head on
# push-v3): 18 of 20 with four draws per frame on shared features, 10 with one. config/metaworld.py otherwise as it
# is (6000 iterations) at train seeds 42 (A) and 1 (B), EMA weights, noise scale 1, 8 workers each. The default at
# these seeds scored 73 / 73% (w_b) and 78 / 72% (v_a, v_c). flow_draws had never run on CUDA: a run that dies in its
# first 100 s is restarted with --weight_decay=0.1 instead (w_c's question), so the call still answers something.
source docs/closed_loop/mt10_call.sh
TRAIN_END=${TRAIN_END:-440}; EVAL_END=${EVAL_END:-590}  # seconds from the start at which training / evaluation are cut
tr_run() { # name seed flags...
  local n=$1 s=$2; shift 2
  timeout $(( TRAIN_END - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --seed=$s "$@" \
    --out_dir=out/mw$n --eval_interval=3000 --keep_last=0 > $L/train_$n.txt 2>&1; }
for r in A:42 B:1; do tr_run ${r%:*} ${r#*:} --flow_draws=4 & done
sleep 100
for r in A:42 B:1; do
  if grep -q "Traceback\|Error" $L/train_${r%:*}.txt; then
    el "${r%:*}: flow_draws failed, running --weight_decay=0.1"; cp $L/train_${r%:*}.txt $L/failed_${r%:*}.txt
    tr_run ${r%:*} ${r#*:} --weight_decay=0.1 &
  else el "${r%:*}: $(grep '^iter' $L/train_${r%:*}.txt | tail -n 1 | cut -c1-120)"; fi
done
wait
for r in A B; do
  C=$(ls -d out/mw$r/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "$r: $C"
  ev $r $C 8 $EVAL_END &
done
wait
report A B
