#!/bin/bash
# Prepared 2026-12-06 (session 19) for a device call (issue 17), run in session 20 (10 passed, 2 failed:
# ai_results.txt part 3); any single GPU, carry [".whl", ".gl"]
# (device_setup.sh's common lines; the serving tests need websockets). ~4-6 min. The GPU tests of session 19's
# changes, none of which has passed on a GPU yet: decode_attn.py's kernel at pi05's shapes and inside compiled whole
# steps (its first run failed on NaN actions from keys and values passed in the wrong order, fixed since), the
# grouped prefix attention, the bf16 adaRMS Dense (bit-identical, eager and graphed), and serving's new defaults
# (grouped attention at every batch size, whole-step graphs), beside the earlier attention and replay tests.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left 560) python3 -m pytest -q -rs test_equivalence.py test_serve.py \
  -k "TestGPU and (triton or attention or grouped or replay or real_time or whole_step or cpu_replies or inference_dtype)" \
  > $L/gpu_tests.txt 2>&1; el "gpu tests rc $?"
grep -E "passed|failed|Error|assert|SKIPPED" $L/gpu_tests.txt | tail -n 20 | cut -c1-220
cd $OUT && tar czf logs.tgz logs && rm -rf logs
