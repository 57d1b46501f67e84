#!/bin/bash
# Prepared 2026-12-06 (session 19) for a device call (issue 16), run in session 20 (79%, ai_results.txt part 2); carry
# [".whl", ".gl"]. A larger batch:
# micro-batch 256 instead of 128 at the same lr 5e-4 and 6000 iterations (twice the samples, ~40 passes over the
# 38,059 frames), train seed 42 alone (two side by side would not end in one call). The one batch comparison so far (config/metaworld.py's header:
# micro-batch 64 at lr 3e-4 49% against 128 at 5e-4 62%, 4000 iterations, patch stem) changed the lr too; longer
# schedules at 128 (9000 iterations, 66%) and a 1.7M-parameter model (72.7% over three) did not pay, so this asks
# whether less gradient noise per step does. EMA weights, noise seed 0, 10 episodes per task (~7 min, estimated:
# data ~80 s, ~30 ms per iteration alone (17 at 128) ~4 min with the compile, evaluation ~1.5 min; a run still
# training at TRAIN_END is evaluated from its last checkpoint and flagged MID-SCHEDULE).
RUNS=${RUNS:-"A:42:--micro_batch=256"} TRAIN_END=${TRAIN_END:-450} EVAL_END=${EVAL_END:-585} \
  bash docs/closed_loop/w_e_mt10_runs.sh
