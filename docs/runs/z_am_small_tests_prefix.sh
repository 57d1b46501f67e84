#!/bin/bash
# Session 21 (2026-12-06), issue 17, a device call after z_al_infer_skinny_prefix.sh; carry [".whl", ".gl"]. ~6.5 min.
# 1. small_gemm's tests on the GPU with CONFIGS as z_al wrote them (gate/up and down through the kernel); the served
#    graph is now judged against the same weights in fp32 (z_al's run: 2.96e-2 against the absolute 2e-2 it had).
# 2. bench.py's 'step' and 'prefix' rows (the grouped attention in the prefix pass too), batch 1 / 8 / 32; against z_al's
#    17.8 ms the step row now also has SigLIP's contiguous patch embeddings and the fp32 action-out as a reduction.
# 3. The step row again in a process with TORCHINDUCTOR_ENABLE_PDL=1: inductor's Triton kernels launched with
#    programmatic dependent launch (Hopper), so each may start while the kernel before it finishes (the batch-1 call
#    has ~2.2 ms of gaps between its ~3,400 kernels). The same kernels, so the same numbers expected. ~6.5 min in all.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left ${TESTS_END:-80}) python3 -m pytest -q -rs test_equivalence.py -k "small_gemm" -p no:cacheprovider \
  > $L/gpu_tests.txt 2>&1; el "gpu tests rc $?"; grep -E "passed|failed|Error|assert" $L/gpu_tests.txt | tail -8
timeout $(left ${END:-300}) python3 bench.py --infer=True --infer_calls=30 --infer_variants=step,prefix \
  --out_dir=$OUT/bench > $L/infer.txt 2>&1; el "bench rc $?"
grep "^| compiled\|^kernels of\|relative\|replay\|failed" $L/infer.txt | cut -c1-220
TORCHINDUCTOR_ENABLE_PDL=1 timeout $(left ${PDL_END:-420}) python3 bench.py --infer=True --infer_calls=30 \
  --infer_variants=step --out_dir=$OUT/bench_pdl > $L/infer_pdl.txt 2>&1; el "bench pdl rc $?"
grep "^| compiled\|^kernels of\|replay\|failed" $L/infer_pdl.txt | cut -c1-220
cd $OUT && tar czf logs.tgz logs $(ls bench/*.csv bench_pdl/*.csv 2>/dev/null) && rm -rf logs bench bench_pdl
