#!/bin/bash
# Prepared 2026-12-06 (session 25) for a device call (issue 17); carry [".whl", ".gl"]; ~8.5 min, timeout_s 530.
# Should serving turn off inductor's comprehensive stride padding? In session 25 (docs/runs/at/) it sent SigLIP's fc1
# down cuBLAS's copy-the-bias path (27 copies and bias-add GEMMs a call); one process per setting gave, with PDL,
# 14.9 against 14.8 ms at batch 1 and 193.4 against 189.8 at batch 32 (10 calls): too little to change a default
# for. Here two processes per setting in the order pad, nopad, nopad, pad (a drift of the machine cancels), batch 1
# and 32, serve.py's step row with PDL (bench.py's default), ~90 s a process. If the padding-free runs are faster in
# both pairs, GraphedSampler's capture can patch inductor's comprehensive_padding off (its GPU tests run again).
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
k=0
for v in pad nopad nopad pad; do
  k=$((k + 1)); env=""; [ $v = nopad ] && env="TORCHINDUCTOR_COMPREHENSIVE_PADDING=0"
  timeout $(left $((20 + 105 * k))) env $env python3 bench.py --infer=True --infer_calls=30 --infer_variants=step \
    --infer_batches=1,32 --out_dir=/tmp/b > $L/infer_${k}_$v.txt 2>&1
  el "$k $v rc $?: $(grep '^| compiled' $L/infer_${k}_$v.txt | awk -F'|' '{printf "b%s: p50%s p99%s ms; ", $3+0, $4, $6}')"
done
# then a guided (real-time chunking) call at batch 1 beside the grouped row it is captured from, with today's code
# (last timed 2026-12-02: 36.0 ms against 20.3 plain on an H200; plain is 14.9 ms since session 25)
timeout $(left 515) python3 bench.py --infer=True --infer_calls=30 --infer_variants=grouped --infer_batches=1 \
  --out_dir=/tmp/b > $L/infer_rtc.txt 2>&1
el "rtc rc $?"; grep "^| compiled\|guided" $L/infer_rtc.txt | cut -c1-200
cd $OUT && tar czf logs.tgz logs && rm -rf logs
