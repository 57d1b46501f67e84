#!/bin/bash
# Session 29 (2026-12-07), issue 17; the third call on a warm H200 (carry [".whl", ".gl"], timeout_s 250): serve.py's
# plain graphed call at batch 1 and 8, 50 calls each, batch 8's kernels to a csv. Output: docs/runs/bf/call3/.
source docs/closed_loop/device_setup.sh >/dev/null; mkdir -p $OUT
timeout 230 python3 bench.py --infer=True --infer_variants=step --infer_batches=1,8 --infer_profile=8 --infer_calls=50 \
  --out_dir=$OUT/inf > $OUT/infer_step_b1_b8.txt 2>&1; echo rc $?
grep -E "^\||ms|kernels" $OUT/infer_step_b1_b8.txt | cut -c1-250 | head -40
