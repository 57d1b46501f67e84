#!/bin/bash
# Prepared 2026-12-06 (session 21) for a device call (issue 17); any single GPU (say which), carry [".whl", ".gl"] (for
# device_setup.sh's common lines). ~6.5 min.
# 1. docs/runs/z_al_skinny_gemm.py: a Triton GEMM for few rows against cuBLAS at the action expert's four shapes (batch
#    1: 50 rows; batch 8: 400), weights read from memory as in the model; < 2.5 min. Then docs/runs/z_al_small_ops.py
#    (< 1 min): the fp32 action-out GEMM, SigLIP's fc1 bias and LayerNorm against other formulations.
# 2. bench.py's 'step' row (serve.py's default) and 'prefix' (the same with the grouped attention in the prefix pass:
#    cuDNN's prefix attention took 48.5 us per layer at batch 1, 17 layers, 0.82 ms of the 18.2 ms call), batch
#    1 / 8 / 32, with their kernel lists; inductor's generated code kept (ind.tgz) to read the kernels offline.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left ${SKINNY_END:-160}) python3 docs/runs/z_al_skinny_gemm.py > $L/skinny_gemm.txt 2>&1; el "skinny rc $?"
grep "^BEST\|^M \|WRONG\|NOT DET\|failed" $L/skinny_gemm.txt | head -30
timeout $(left ${SMALL_END:-230}) python3 docs/runs/z_al_small_ops.py > $L/small_ops.txt 2>&1; el "small ops rc $?"
grep "^| \|^##" $L/small_ops.txt | grep -v "^|---" | cut -c1-160
TORCHINDUCTOR_CACHE_DIR=$OUT/ind timeout $(left ${END:-585}) python3 bench.py --infer=True --infer_calls=30 \
  --infer_variants=${VARIANTS:-step,prefix} --out_dir=$OUT/bench > $L/infer_step_prefix.txt 2>&1; el "bench rc $?"
grep "^| compiled\|^kernels of\|relative\|replay\|failed" $L/infer_step_prefix.txt | cut -c1-220
cd $OUT && tar czf logs.tgz logs $(ls bench/*.csv 2>/dev/null) && rm -rf logs bench
find ind -name '*.py' | tar czf ind.tgz -T - && rm -rf ind; ls -la $OUT
