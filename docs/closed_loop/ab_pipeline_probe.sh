#!/bin/bash
# RAN 2026-12-05 session 14 on a 2-core CPU (torch 2.13.0+cpu) as written: ab_pipeline_probe.py at the tower probe's
# 1500 steps and at 3000, side by side, one thread each, on d1_goal_probe.py's collected reach-v3 data in /tmp/probe
cd /work/main; . .venv/bin/activate; export OMP_NUM_THREADS=1
P=docs/closed_loop/ab_pipeline_probe.py
for steps in 1500 3000; do
  (echo "\$ python $P /tmp/probe/reach 50 $steps"; python $P /tmp/probe/reach 50 $steps 2>&1 | grep policy) > /tmp/probe/pipe_$steps.txt &
done
wait; cat /tmp/probe/pipe_1500.txt /tmp/probe/pipe_3000.txt
# then (started while the 3000-step run was still going, one thread): the regression through the same pipeline
python $P /tmp/probe/reach 50 1500 1e-3 regress 2>&1 | grep policy > /tmp/probe/pipe_regress.txt
