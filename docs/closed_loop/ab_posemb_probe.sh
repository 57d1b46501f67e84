#!/bin/bash
# RAN 2026-12-05 session 14 on a 2-core CPU (torch 2.13.0+cpu) as written: ab_posemb_probe.py, two runs at a time,
# one thread each, on d1_goal_probe.py's collected reach-v3 data in /tmp/probe (see ab_posemb_probe.py's docstring)
cd /work/main; . .venv/bin/activate; export OMP_NUM_THREADS=1
P=docs/closed_loop/ab_posemb_probe.py; D=/tmp/probe/reach; N=${N:-50}; STEPS=${STEPS:-1500}
run() { echo "\$ python $P /tmp/probe/reach $N $STEPS $*"; python $P $D $N $STEPS "$@" 2>&1 | grep stem; }
for pair in "patch learn pool|conv learn pool" "conv sincos pool|conv learn1 pool" "conv learn flat|conv sincos flat"; do
  IFS='|' read -r a b <<< "$pair"
  run $a > /tmp/probe/o1.txt & run $b > /tmp/probe/o2.txt; wait
  cat /tmp/probe/o1.txt /tmp/probe/o2.txt
done
