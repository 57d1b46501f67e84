#!/bin/bash
# Prepared 2026-12-06 (session 18) for a device call (issue 16), not run yet; carry [".whl", ".gl"]. More pixels per
# vision token, the token count kept: demonstrations written and prepared at 256 px, and the conv stem given one more
# stride-2 convolution (--patch=32; its channels halve once more, 3-8-16-32-64-128, so the stem's FLOPs grow ~1.4x, not
# 4x), so each camera still gives the transformer 8x8 tokens while reach's goal ball is
# ~4x4 pixels in the table camera instead of ~2x2. The earlier resolution runs added tokens too (224 px: 14x14 tokens,
# 63%; --patch=8 at 128 px: 16x16, 68%). config/metaworld.py otherwise unchanged, train seeds 42 and 1 side by side,
# EMA weights, noise seed 0, 10 episodes per task (~8-9 min, estimated: data ~90 s, training ~5 min, evaluation
# ~1.5 min; 4x the bytes per sample from the loader is untimed, so a run may end MID-SCHEDULE, which the report flags).
SIZE=256 RUNS=${RUNS:-"A:42:--image_size=256,--patch=32 B:1:--image_size=256,--patch=32"} \
  TRAIN_END=${TRAIN_END:-470} EVAL_END=${EVAL_END:-590} bash docs/closed_loop/w_e_mt10_runs.sh
