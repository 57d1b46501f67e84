#!/bin/bash
# Session 26 (2026-12-06), issue 17; carry [".whl", ".gl"]; timeout_s 240. The one GPU test that failed in
# session 26's first call (test_grouped_prefix_attention_compiles_at_pi05_heads: its samplers compiled with PDL, the
# default since session 25, gave other bits than the layers compiled without it), now with pdl=False in its
# samplers; TORCH_LOGS=recompiles shows whether the samplers' captures recompile the layers.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
TORCH_LOGS=recompiles timeout $(left ${END:-220}) python3 -m pytest -q -rs test_equivalence.py -p no:cacheprovider \
  -k "TestGPU and grouped_prefix_attention_compiles" > $L/gpu_test_grouped_prefix.txt 2>&1
el "rc $?"; grep -E "passed|failed|^E  |^FAILED|Recompiling|triggered by" $L/gpu_test_grouped_prefix.txt | cut -c1-300 | head -20
