#!/bin/bash
# Prepared 2026-12-06 (session 21) for a device call (issue 17); any single GPU (say which), carry [".whl", ".gl"] (for
# device_setup.sh's common lines). ~8.5 min; run with timeout_s 600.
# 1. docs/runs/z_al_skinny_gemm.py --write: small_gemm.py's kernel against cuBLAS at the action expert's four shapes
#    (batch 1, 50 rows), weights read from memory as in the model; the fastest per shape written into this copy's
#    small_gemm.CONFIGS (commit them after; the record says which). < 2 min.
# 2. docs/runs/z_al_small_ops.py (< 1 min): the fp32 action-out GEMM, SigLIP's fc1 bias and LayerNorm against other
#    formulations.
# 3. The GPU tests of small_gemm.py (kernel against F.linear at the four shapes, graph replays, the served graph).
# 4. bench.py's 'step' row (serve.py's default), 'prefix' (the same with the grouped attention in the prefix pass:
#    cuDNN's prefix attention took 48.5 us per layer at batch 1, 17 layers, 0.82 ms of the 18.2 ms call) and 'small'
#    ('step' with small_gemm.py's kernel for the expert's projections), batch 1 / 8 / 32, with their kernel lists;
#    inductor's generated code kept (ind.tgz) to read the kernels offline.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left ${SKINNY_END:-140}) python3 docs/runs/z_al_skinny_gemm.py --write > $L/skinny_gemm.txt 2>&1
el "skinny rc $?"; grep "^CONFIG\|WRONG\|NOT DET\|written" $L/skinny_gemm.txt | head -12; grep -n "^CONFIGS" small_gemm.py
timeout $(left ${SMALL_END:-190}) python3 docs/runs/z_al_small_ops.py > $L/small_ops.txt 2>&1; el "small ops rc $?"
grep "^| \|^##" $L/small_ops.txt | grep -v "^|---" | cut -c1-160
timeout $(left ${TESTS_END:-270}) python3 -m pytest -q -x test_equivalence.py -k "small_gemm" -p no:cacheprovider \
  > $L/gpu_tests.txt 2>&1; el "gpu tests rc $?"; tail -3 $L/gpu_tests.txt
TORCHINDUCTOR_CACHE_DIR=$OUT/ind timeout $(left ${END:-585}) python3 bench.py --infer=True --infer_calls=30 \
  --infer_variants=${VARIANTS:-step,prefix,small} --out_dir=$OUT/bench > $L/infer.txt 2>&1; el "bench rc $?"
grep "^| compiled\|^kernels of\|relative\|replay\|failed" $L/infer.txt | cut -c1-220
cp small_gemm.py $L/
cd $OUT && tar czf logs.tgz logs $(ls bench/*.csv 2>/dev/null) && rm -rf logs bench
find ind -name '*.py' | tar czf ind.tgz -T - && rm -rf ind; ls -la $OUT
