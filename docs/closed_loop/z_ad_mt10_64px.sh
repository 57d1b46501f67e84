#!/bin/bash
# Prepared 2026-12-06 (session 19) for a device call (issue 16), run in session 20 (64 / 64 / 62%, ai_results.txt);
# carry [".whl", ".gl"]. Fewer pixels, the
# same tokens: demonstrations written and prepared at 64 px, and the conv stem one stride-2 convolution shorter
# (--patch=8), so each camera still gives the transformer 8x8 tokens. The plain CNN baseline (u_cnn_bc.py) solved
# push-v3 19 of 20 and pick-place-v3 14 of 20 from 64 px frames of the same 50 demonstrations, where the default
# policy at 128 px solves push in 46% and pick-place in 26% of MT10's episodes; the resolution runs so far only added
# pixels (224 px 63%, 256 px untried) or tokens (--patch=8 at 128 px: 68%). Reach's goal ball becomes ~1 pixel in the
# table camera, so reach may fall. config/metaworld.py otherwise unchanged, train seeds 42, 1 and 2 side by side, EMA
# weights, noise seed 0, 10 episodes per task (~7 min, estimated: data ~60 s, training ~4.5 min, evaluation ~1.5 min).
SIZE=64 RUNS=${RUNS:-"A:42:--image_size=64,--patch=8 B:1:--image_size=64,--patch=8 C:2:--image_size=64,--patch=8"} \
  TRAIN_END=${TRAIN_END:-450} EVAL_END=${EVAL_END:-580} bash docs/closed_loop/w_e_mt10_runs.sh
