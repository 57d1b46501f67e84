#!/bin/bash
# Prepared 2026-12-06 (session 18) for a device call (issue 16), not run yet; carry [".whl", ".gl"]. Does MT10 peak
# before 6000 iterations? 9000 iterations gave 66% in one run (w_results.txt) against the default's 73.0% over five,
# and each 6000-iteration run makes ~20 passes over the 38,059 frames of 50 demonstrations per task. Three shorter
# cosine schedules side by side (the whole schedule shortened, warm-up kept at 500): 4000 iterations at train seeds 42
# and 1, 3000 at seed 42; config/metaworld.py otherwise unchanged, EMA weights, noise seed 0, 10 episodes per task
# (~8 min: data ~65 s, three runs side by side ~5 min, evaluations side by side ~1.5 min).
S4=--max_iters=4000,--lr_decay_iters=4000; S3=--max_iters=3000,--lr_decay_iters=3000
RUNS=${RUNS:-"A:42:$S4 B:1:$S4 C:42:$S3"} TRAIN_END=${TRAIN_END:-460} EVAL_END=${EVAL_END:-590} \
  bash docs/closed_loop/w_e_mt10_runs.sh
