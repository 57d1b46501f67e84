#!/bin/bash
# Prepared 2026-12-06 (session 17) for a device call (issue 16), not run yet; carry [".whl", ".gl"]. Does real-time
# chunking help a policy on Meta-World? The conv-stem default (config/metaworld.py, 50 demonstrations per task) at train
# seeds 42 and 1 side by side (224-284 s of training after ~60 s of data), then each checkpoint evaluated twice on the same episodes (EMA weights,
# noise seed 0, 10 per task): as the README's table (each chunk's first 5 actions run, then a new request) and with
# `eval.py --rtc=True` (each request after an episode's first carries the previous chunk's 5 unexecuted actions, delay
# 0, and every denoising step is guided toward them), so the pair differs only in the guidance.
TRAIN_END=${TRAIN_END:-380}; EVAL_END=${EVAL_END:-590}
source docs/closed_loop/mt10_call.sh
train_bg A 42 $TRAIN_END
train_bg B 1 $TRAIN_END
wait
for n in A B; do  # A's pair by 490 s, so a hung evaluation leaves B's pair its time
  d=$EVAL_END; [ $n = A ] && d=$(( EVAL_END - 100 ))
  c=$(ls -d out/mw$n/ckpt_* 2>/dev/null | sort -V | tail -n 1)
  [ -n "$c" ] || { el "$n: no checkpoint (see $L/train_$n.txt)"; continue; }
  grep -q "^done:" $L/train_$n.txt || el "$n: MID-SCHEDULE $c (the run did not end)"
  el "$n: $c"; ev $n $c 8 $d &
  ev ${n}rtc $c 8 $d --rtc=True &
  wait
done
report A B
