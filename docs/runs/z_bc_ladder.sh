#!/bin/bash
# Prepared 2026-12-06 (session 27) for issue 18 ("one bench.py run in the README with the ladder, the new rows and the
# profile of the default row"); any single H200, carry [".whl", ".gl"]; timeout_s 600. The README's ladder is the
# code of 2026-11-29 (flex attention, before the cuDNN attention, fp32 master weights and no recompute became the
# default). Today's ladder in one process, 12 rows, each about 6-50 s of setup (compilation) and 12 steps, the default
# row profiled (every kernel to a csv). Estimate ~9.5 min: if the call is cut, results.json(.gz) keeps the rows done;
# the default row is the 11th of 12, so a short call loses its profile first.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left 585) python3 bench.py --rows=ladder --profile=default --steps=10 --warmup=2 --out_dir=$L/ladder \
  > $L/ladder.txt 2>&1
el "ladder rc $?"; grep "^kernels of" $L/ladder.txt | cut -c1-400; grep -A14 "^| setting" $L/ladder.txt | cut -c1-220
gzip -r $L/ladder
cd $OUT && tar czf logs.tgz logs && rm -rf logs
