#!/bin/bash
# Prepared 2026-12-06 (session 18) for a device call (issue 16), not run yet; carry [".whl", ".gl"]. Is a smaller
# model better on 50 demonstrations per task? The 57M-parameter `medium` shape scored 65% against the 23M `small`
# default's 73.0% (five runs). This trains the 1.7M-parameter 'cpu128' shape (the 'demo' widths at 128 px with the
# conv stem: d2_train_cpu128.py, which reached reach-v3 alone in 27-37% of episodes on the CPU) on MT10 with
# config/metaworld.py's schedule: seeds 42 and 1 at the default lr 5e-4, seed 42 at the CPU recipe's 3e-4, three
# side by side; EMA weights, noise seed 0, 10 episodes per task (~7 min, estimated).
TRAIN_PY=docs/closed_loop/d2_train_cpu128.py \
  RUNS=${RUNS:-"A:42:--model_name=cpu128 B:1:--model_name=cpu128 C:42:--model_name=cpu128,--learning_rate=3e-4,--decay_lr=3e-5"} \
  TRAIN_END=${TRAIN_END:-440} EVAL_END=${EVAL_END:-590} bash docs/closed_loop/w_e_mt10_runs.sh
