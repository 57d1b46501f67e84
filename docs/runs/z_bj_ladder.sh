#!/bin/bash
# 2026-12-07 (issue 18): z_bc_ladder.sh's ladder with the default and fp8 rows run first, so a call cut short by the
# device budget loses the cheaper rows instead; `PYTHONPATH=. python docs/runs/z_bg_ladder_table.py <results.json>` puts the rows
# back in the ladder's order. Any single H200 (the default row needs 96 GiB), carry [".whl"], timeout_s <= 600; END (the
# deadline, s), ROWS (bench.py --rows; on an 80 GB GPU leave out default, fp32master and fp8, which need more: 96, 82 and 81 GiB), STEPS (timed steps, 10) and PROFILE= (no profile) shorten it.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left ${END:-585}) python3 bench.py --rows=${ROWS:-default,fp8,community,camera,compile,flex,vit,prompt,waste,vision,sdpa,fp32master} \
  ${PROFILE---profile=default} --steps=${STEPS:-10} --warmup=2 --out_dir=$L/ladder > $L/ladder.txt 2>&1
el "ladder rc $?"; grep "^kernels of" $L/ladder.txt | cut -c1-400; grep -A14 "^| setting" $L/ladder.txt | cut -c1-220
gzip -r $L/ladder
cd $OUT && tar czf logs.tgz logs && rm -rf logs
