#!/bin/bash
# Prepared 2026-12-04, session 9, for the next device call (issue 16; not run yet): does training each sample on K
# flow draws sharing one prefix pass (train.py --flow_draws=4) lift MT10? u_cnn_bc.py (the CNN and a flow-matching
# head on push-v3): 18 of 20 with four draws per frame on shared features, 10 with one. config/metaworld.py
# otherwise as it is (6000 iterations) at train seeds 42 (A) and 1 (B), EMA weights, noise scale 1, 8 workers each.
# The default at these seeds scored 73 / 73% (w_b) and 78 / 72% (v_a, v_c).
source docs/closed_loop/mt10_call.sh
for r in A:42 B:1; do
  timeout $(( 440 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --seed=${r#*:} --flow_draws=4 \
    --out_dir=out/mw${r%:*} --eval_interval=3000 --keep_last=0 > $L/train_${r%:*}.txt 2>&1 &
done
wait
for r in A B; do
  C=$(ls -d out/mw$r/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "$r: $C"
  ev $r $C 8 590 &
done
wait
report A B
