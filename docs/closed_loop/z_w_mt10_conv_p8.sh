#!/bin/bash
# Prepared 2026-12-06 (session 17) for a device call (issue 16), not run yet; carry [".whl", ".gl"]. Finer vision
# tokens: reach's failures come within a median 8 cm of the goal but not within its 5 cm (af_results.txt part 4), and
# at 128 px a 16 px token covers 8x the goal ball's 2x2 pixels. train.py --patch=8 gives the conv stem three stride-2
# convolutions instead of four: 16x16 tokens per camera instead of 8x8 (4x the image tokens; the 8 px patch conv, tried
# before the conv stem, gave 61%). config/metaworld.py otherwise unchanged, seed 42 alone (expect ~3x the 16.8 ms per
# iteration: ~5-6 min), EMA weights, 10 episodes per task.
RUNS=${RUNS:-"A:42:--patch=8"} TRAIN_END=${TRAIN_END:-480} EVAL_END=${EVAL_END:-590} bash docs/closed_loop/w_e_mt10_runs.sh
