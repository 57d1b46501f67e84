#!/bin/bash
# Session 16 (2026-12-06), issue 16: MT10 x 200 demonstrations, conv-stem default, side by side: train seed 1 at the
# default 6000 iterations (seed 42 gave 76% in z_q) and seed 42 at 9000 (200 demonstrations give 5 passes over the
# frames in 6000 iterations, against 20 with 50).
EPISODES=200 TRAIN_END=${TRAIN_END:-470} EVAL_END=${EVAL_END:-550} \
  RUNS=${RUNS:-"B:1: C:42:--max_iters=9000,--lr_decay_iters=9000"} bash docs/closed_loop/w_e_mt10_runs.sh
