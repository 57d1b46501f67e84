#!/bin/bash
# Session 22 (2026-12-06), issue 17, one device call; carry [".whl", ".gl"]; ~5.5 min, run with timeout_s 420.
# Ran in session 24 (235 s on an H100, docs/runs/aq/); its test has been rewritten since (two inputs replayed in turn,
# 1e-4 against pdl=False): docs/runs/z_ar_pdl_test.sh runs the test alone.
# serve.GraphedSampler(pdl=True) compiles with programmatic dependent launch (compute capability 9+; opt-in).
# 1. GPU tests: PDL's actions against pdl=False's and every PDL kernel waiting before it releases the next; the
#    small_gemm tests; the inference-dtype test (GraphedSampler defaults).
# 2. bench.py 'step' (serve.py's default) and 'prefix' rows with PDL, batch 1 / 8 / 32, each with the kernel lists of
#    its batch-1 and batch-8 calls (--infer_profile=1,8: where batch 8's 54 ms go; its ~24 TFLOP take ~30 ms at the
#    805 TFLOP/s an H100 measures).
# 3. The 'step' row with --infer_pdl=False in a process of its own (the same call without PDL).
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left ${TESTS_END:-150}) python3 -m pytest -q -rs test_equivalence.py -p no:cacheprovider \
  -k "pdl_sampler or small_gemm or inference_dtype_keeps" > $L/gpu_tests.txt 2>&1; el "gpu tests rc $?"
grep -E "passed|failed|Error|assert " $L/gpu_tests.txt | tail -8
timeout $(left ${END:-290}) python3 bench.py --infer=True --infer_calls=30 --infer_variants=${VARIANTS:-step,prefix} \
  --infer_pdl=True --infer_profile=1,8 --out_dir=$OUT/bench > $L/infer.txt 2>&1; el "bench rc $?"
grep "^inductor\|^| compiled\|^kernels of\|relative\|replay\|failed" $L/infer.txt | cut -c1-230
timeout $(left ${OFF_END:-400}) python3 bench.py --infer=True --infer_calls=30 --infer_variants=step \
  --infer_pdl=False --out_dir=$OUT/bench_off > $L/infer_off.txt 2>&1; el "bench off rc $?"
grep "^inductor\|^| compiled\|^kernels of\|replay\|failed" $L/infer_off.txt | cut -c1-230
cd $OUT && tar czf logs.tgz logs $(ls bench/*.csv bench_off/*.csv 2>/dev/null) && rm -rf logs bench bench_off
