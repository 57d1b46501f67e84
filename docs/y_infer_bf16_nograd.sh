#!/bin/bash
# Prepared 2026-12-05 (session 11) for a device call (issue 17), not run yet: the grouped denoising attention takes
# its logits from a bf16 GEMM with fp32 output when no gradient is taken (plain sampling) and keeps the fp32 product
# where real-time chunking differentiates through q (the 2026-12-02 version, docs/grouped_bf16.patch, used the bf16
# GEMM everywhere: 19.6 ms instead of 20.2 at batch 1, but guided calls failed since that bmm has no derivative).
# 1. the GPU tests that touch the grouped attention, graph replay and real-time chunking
# 2. python bench.py --infer=True: keep the change if the batch-1 row gains and the tests pass
source docs/closed_loop/device_setup.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
timeout 200 python3 -m pytest -q test_equivalence.py test_serve.py -k "TestGPU and (grouped or replay or real_time or cuda_replies or autotune)" > $L/tests.txt 2>&1; el tests; tail -n 3 $L/tests.txt
grep -B2 -A12 "Error\|assert" $L/tests.txt | head -n 40
timeout $(( 560 - ($(date +%s) - T0) )) python3 bench.py --infer=True --out_dir=$L/infer > $L/infer.txt 2>&1; el infer
grep "^|\|replay\|relative\|failed\|kernels of" $L/infer.txt | grep -v "^| \`\(void\|sm80\|cutlass\)" | head -n 60
cd $OUT && tar czf logs.tgz logs && rm -rf logs
