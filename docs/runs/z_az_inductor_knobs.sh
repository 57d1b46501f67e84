#!/bin/bash
# Session 27 (2026-12-06), issue 18; carry [".whl", ".gl"]; timeout_s 420 (on a machine warm from z_ay, whose
# compiles sit in inductor's on-disk cache). Inductor switches that touch the training step's non-GEMM kernels (fused
# elementwise 65 ms, idle 30 ms of a 538.9 ms span in 2026-12-01's profile; the last baseline needs the disk cache), each in a process of its own on train.py's default
# row, between two baselines (a drift of the machine shows as a difference between them): coordinate-descent tuning
# of the Triton kernels' launch configs, and combo kernels (independent small kernels launched as one).
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
k=0
for v in base coord combo base; do
  k=$((k + 1)); pre=""; [ $v = coord ] && pre="TORCHINDUCTOR_COORDINATE_DESCENT_TUNING=1"
  py="import runpy, torch._inductor.config as c; c.combo_kernels = '$v' == 'combo'; runpy.run_path('bench.py', run_name='__main__')"
  timeout $(left $((k == 4 ? 410 : 60 + 90 * k))) env $pre python3 -c "$py" --rows=default --steps=10 --warmup=2 \
    --out_dir=/tmp/k$k > $L/knob_${k}_$v.txt 2>&1
  el "$k $v rc $?: $(grep '^| + no recompute' $L/knob_${k}_$v.txt | cut -c1-120)"
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
