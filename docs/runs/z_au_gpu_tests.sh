#!/bin/bash
# Prepared 2026-12-06 (session 25) for a device call (issues 17, 18); carry [".whl", ".gl"]; timeout_s 420. Every GPU
# test since programmatic dependent launch became the default (GraphedSampler(pdl=None), so serve.Policy's graphs
# on Hopper compile with it): test_serve.py's (graph replay = direct call, CUDA = CPU replies, max-autotune,
# real-time chunking from its graph), then test_equivalence.py's (the PDL test among them). Logs under $OUT/logs.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left ${SERVE_END:-150}) python3 -m pytest -q -rs test_serve.py -k TestGPU -p no:cacheprovider \
  > $L/gpu_tests_serve.txt 2>&1; el "test_serve rc $?"; tail -n 3 $L/gpu_tests_serve.txt
timeout $(left ${END:-410}) python3 -m pytest -q -rs test_equivalence.py -k TestGPU -p no:cacheprovider \
  > $L/gpu_tests_equivalence.txt 2>&1; el "test_equivalence rc $?"; grep -E "passed|failed|^E  |^FAILED" $L/gpu_tests_equivalence.txt | head -8
