#!/bin/bash
# Prepared 2026-12-04, session 9, as call 3 (issue 16; no device machine was lent for it: not run): calls 1-2 point at generalisation, not optimisation (9000 iterations 66%,
# the default at seeds 42 / 1 73% / 73%): does AdamW weight decay regularise the from-scratch model? openpi's
# weight_decay is 1e-10 (none); here --weight_decay=0.1 (decoupled, every parameter) at train seeds 42 (A) and 1 (B),
# config/metaworld.py otherwise as it is (6000 iterations), EMA weights, noise scale 1, 8 workers each. Deadlines
# are tight: this call had ~450 s of device time left.
source docs/closed_loop/mt10_call.sh
for r in A:42 B:1; do
  timeout $(( 320 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --seed=${r#*:} --weight_decay=0.1 \
    --max_skipped_steps=10 --out_dir=out/mw${r%:*} --eval_interval=6000 --keep_last=0 > $L/train_${r%:*}.txt 2>&1 &
done
wait
for r in A B; do
  C=$(ls -d out/mw$r/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "$r: $C"
  ev $r $C 8 450 &
done
wait
report A B
