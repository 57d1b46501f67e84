#!/bin/bash
# Prepared 2026-12-06 (session 20) for a device call (issue 16), not run yet; carry [".whl", ".gl"]. Micro-batch 256
# gave 79 / 79% at train seeds 42 / 1 against micro-batch 128's 73.0% over five runs (ai_results.txt part 2), at the
# same lr 5e-4 and 6000 iterations. Does the trend go on? Micro-batch 512, the same lr and schedule (3.1M samples,
# ~80 passes over the 38,059 frames), train seed 42 alone (~9 min, estimated: setup and data ~70-80 s, ~57-59 ms per
# iteration alone plus ~40 s of warm-up, ~6.5 min in all, evaluation ~65 s; a run still training at TRAIN_END is
# evaluated from its last checkpoint and flagged MID-SCHEDULE; peak memory ~12 GiB). Run with timeout_s 600.
RUNS=${RUNS:-"A:42:--micro_batch=512"} TRAIN_END=${TRAIN_END:-520} EVAL_END=${EVAL_END:-592} \
  bash docs/closed_loop/w_e_mt10_runs.sh
