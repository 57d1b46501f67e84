#!/bin/bash
# Session 26 (2026-12-06), issue 17; carry [".whl", ".gl"]; timeout_s 300. The one GPU test that failed in
# session 26's first call (test_grouped_prefix_attention_compiles_at_pi05_heads: its samplers compiled with PDL, the
# default since session 25, gave other bits than the layers compiled without it), now with pdl=False in its
# samplers; TORCH_LOGS=recompiles shows whether the samplers' captures recompile the layers. Then, by its own
# deadline, a guided (real-time chunking) call at batch 1 timed with today's code (last: 36.0 ms, 2026-12-02).
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
TORCH_LOGS=recompiles timeout $(left ${END:-160}) python3 -m pytest -q -rs test_equivalence.py -p no:cacheprovider \
  -k "TestGPU and grouped_prefix_attention_compiles" > $L/gpu_test_grouped_prefix.txt 2>&1
el "rc $?"; grep -E "passed|failed|^E  |^FAILED|Recompiling|triggered by" $L/gpu_test_grouped_prefix.txt | cut -c1-300 | head -20
timeout $(left ${RTC_END:-290}) python3 bench.py --infer=True --infer_calls=30 --infer_variants=grouped --infer_batches=1 \
  --out_dir=/tmp/b > $L/infer_rtc.txt 2>&1
el "rtc rc $?"; grep "^| compiled\|guided" $L/infer_rtc.txt | cut -c1-200
cd $OUT && tar czf logs.tgz logs && rm -rf logs
