#!/bin/bash
# Prepared 2026-12-06 (session 22) for a device call (issue 16), not run yet; carry [".whl", ".gl"]; run with
# timeout_s 600. z_y_mt10_256_p32.sh's idea at today's config (micro-batch 256, which z_y predates) and one train seed:
# demonstrations written and prepared at 256 px, the conv stem one stride-2 convolution longer (--patch=32), so each
# camera still gives 8x8 tokens while reach's goal ball and pick-place's puck cover ~4x4 pixels of the table camera
# instead of ~2x2 (micro-batch 512 did not pay, ak_results.txt part 1: the misses are what the camera shows). Train
# seed 42 (256 at 128 px gave 79% there). Estimated ~9 min: data ~90 s, 6000 iterations ~5.5 min (the stem ~1.4x the
# FLOPs, 4x the bytes per sample from the loader, untimed), evaluation ~1 min; a run still training at TRAIN_END is
# evaluated from its last checkpoint and flagged MID-SCHEDULE.
SIZE=256 RUNS=${RUNS:-"A:42:--image_size=256,--patch=32"} TRAIN_END=${TRAIN_END:-500} EVAL_END=${EVAL_END:-592} \
  bash docs/closed_loop/w_e_mt10_runs.sh
