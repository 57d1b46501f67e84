#!/bin/bash
# Session 15 (2026-12-05), issue 16: the conv-stem default (config/metaworld.py, 6000 iterations, lr 5e-4) on MT10
# with 200 demonstrations per task instead of 50, seeds 42 and 1 side by side, EMA weights, 10 episodes per task.
# Why: the GPU pipeline probe (z_m) put reach's first-frame goal placement at the tower's own (18-19%) once the
# policy trains at all, so what is left for reach is how many goals it sees; with the patch stem 200 per task did not
# move MT10 (67%), with the conv stem it has not run.
# RUNS="A:42:" alone fits a call with less device time left (TRAIN_END=470 EVAL_END=530).
EPISODES=200 TRAIN_END=${TRAIN_END:-500} EVAL_END=${EVAL_END:-595} RUNS=${RUNS:-"A:42: B:1:"} bash docs/closed_loop/w_e_mt10_runs.sh
