#!/bin/bash
# Prepared 2026-12-05 (session 12) for a device call (issue 16), not run yet: camera dropout (train.py
# --camera_dropout=0.3: each camera of each training sample masked as a missing camera with probability 0.3, one
# always kept). Why: reach succeeds almost only where the goal ball is inside the wrist camera's first view (18 of 51
# runs against 5 of 119, z_results.txt): the policy seems to take the goal from the wrist camera and hardly from the
# 2 x 2-pixel dot in the table camera. Training without the wrist camera now and then leaves only the table camera to
# say where the goal, the puck and the object are. config/metaworld.py otherwise as it is at train seeds 42 (A) and
# 1 (B), side by side (the default there: 73 / 73% in w_b, 78 / 72% in v_a, v_c), EMA weights, 8 workers each.
RUNS="A:42:--camera_dropout=0.3 B:1:--camera_dropout=0.3" bash docs/closed_loop/w_e_mt10_runs.sh
