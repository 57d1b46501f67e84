#!/bin/bash
# Session 16 (2026-12-06), issue 16: one call, two questions. First z_p's render comparison (EGL here vs osmesa's
# committed first frames of reach-v3), then z_n's MT10 x 200 demonstrations with the conv-stem default, seed 42 alone.
export T0=$(date +%s)
bash docs/closed_loop/z_p_render_compare.sh
RUNS="A:42:" TRAIN_END=${TRAIN_END:-470} EVAL_END=${EVAL_END:-560} bash docs/closed_loop/z_n_mt10x200.sh
