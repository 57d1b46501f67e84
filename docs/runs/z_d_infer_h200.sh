#!/bin/bash
# Prepared 2026-12-05 (session 12) for a device call on an H200 (issue 17; run with kind nvidia-h200); ran 2026-12-06 (session 17) on an H100: docs/closed_loop/af_results.txt.
# The README's headline inference figure is the H200's 20.2-20.3 ms of 2026-12-02, measured before the grouped
# attention took bf16 logits when no gradient is taken (an H100 gained 0.6 ms from it, 21.4 -> 20.8;
# docs/logs/infer_2026-12-05_h100.log). 1. bench.py --infer=True on the H200 as committed, with the max-autotune row
# (inductor's GEMM autotuning for the expert's small-M matmuls, never measured). 2. the max-autotune GPU test.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left 480) python3 bench.py --infer=True --infer_calls=50 --infer_autotune=True --out_dir=$L/infer > $L/infer.txt 2>&1
el "infer rc $?"
grep "^|\|replay\|relative\|failed\|kernels of" $L/infer.txt | grep -v "^| \`\(void\|sm80\|cutlass\|nvjet\|triton\|cudnn\)" | head -n 40
timeout $(left 585) python3 -m pytest -q test_serve.py -k "TestGPU and max_autotune" > $L/tests.txt 2>&1; el "tests"; tail -n 2 $L/tests.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
