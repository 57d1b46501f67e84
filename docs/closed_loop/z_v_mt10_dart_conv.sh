#!/bin/bash
# Prepared 2026-12-06 (session 17) for a device call (issue 16), not run yet; carry [".whl", ".gl"]. DART
# demonstrations with the conv stem: the robot runs the expert's action plus noise (sim.py --action_noise=0.3) and the
# dataset keeps the expert's own action, so the 50 demonstrations per task include recoveries from off-path states.
# With the 16 px patch stem it gave 66% (o_results.txt), when that stem could not solve the puck tasks at all; with
# the conv stem (push 46%, pick-place 26%, reach 18% over five clean runs) it has not run. Train seeds 42 and 1 side
# by side, config/metaworld.py otherwise unchanged, EMA weights, 10 episodes per task (~8-9 min).
SIM_FLAGS="--action_noise=0.3" RUNS=${RUNS:-"A:42: B:1:"} bash docs/closed_loop/w_e_mt10_runs.sh
