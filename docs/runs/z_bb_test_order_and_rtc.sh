#!/bin/bash
# Session 27 (2026-12-06), issue 17; carry [".whl", ".gl"]; timeout_s up to 470, right after z_ba on the warm machine.
# The rest of z_aw_grouped_prefix_test.sh: the changed grouped-prefix GPU test after the PDL test in one process (as
# the full suite ran them when it failed), TORCH_LOGS=recompiles; then a guided (real-time chunking) call at batch 1
# timed beside the grouped row it is captured from (last timed 2026-12-02: 36.0 ms against 20.3 plain on an H200).
# END, RTC_END: deadlines of the tests and of the timing, s after T0 (200, 450); pytest -s keeps the recompile lines.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
TORCH_LOGS=recompiles timeout $(left ${END:-200}) python3 -m pytest -q -rs -s test_equivalence.py -p no:cacheprovider \
  -k "TestGPU and (pdl_sampler_matches or grouped_prefix_attention_compiles)" > $L/gpu_test_grouped_prefix_2.txt 2>&1
el "tests rc $?"; grep -E "passed|failed|^E  |^FAILED|Recompiling|triggered by" $L/gpu_test_grouped_prefix_2.txt | cut -c1-300 | head -12
timeout $(left ${RTC_END:-450}) python3 bench.py --infer=True --infer_calls=30 --infer_variants=grouped --infer_batches=1 \
  --out_dir=/tmp/b > $L/infer_rtc.txt 2>&1
el "rtc rc $?"; grep "^| compiled\|guided" $L/infer_rtc.txt | cut -c1-200
[ -n "$KEEP_LOGS" ] || (cd $OUT && tar czf logs.tgz logs && rm -rf logs)  # KEEP_LOGS: a caller goes on
