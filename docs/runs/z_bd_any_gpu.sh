#!/bin/bash
# Session 28 (2026-12-07), issues 17 and 18; carry [".whl", ".gl"]; timeout_s 600; runs on whichever card comes.
# An H200 (139 GiB) runs z_ba_test_and_profile.sh (the default training row needs ~96 GiB). An H100 runs what any
# Hopper card can answer: the changed grouped-prefix GPU test alone, then after the PDL test in one process
# (z_bb's order), the guided (real-time chunking) call timed beside plain sampling, and by the deadline a profiled
# fp8 training step (66.7 GiB on the H200, so it fits) with every kernel to a csv. T1..T4: the four deadlines on an
# H100, s after T0 (170, 330, 470, 590); on an H200, z_ba's PD, DL and ROWS.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then exec bash docs/runs/z_ba_test_and_profile.sh; fi
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
TORCH_LOGS=recompiles timeout $(left ${T1:-170}) python3 -m pytest -q -rs -s test_equivalence.py -p no:cacheprovider \
  -k "TestGPU and grouped_prefix_attention_compiles" > $L/gpu_test_grouped_prefix_1.txt 2>&1
el "test rc $?"; grep -E "passed|failed|^E  |^FAILED|Recompiling|triggered by" $L/gpu_test_grouped_prefix_1.txt | cut -c1-300 | head -12
KEEP_LOGS=1 END=${T2:-330} RTC_END=${T3:-470} bash docs/runs/z_bb_test_order_and_rtc.sh  # same T0, no second install
timeout $(left ${T4:-590}) python3 bench.py --rows=fp8 --profile=fp8 --steps=10 --warmup=2 --out_dir=$L/prof > $L/train_profile_fp8_h100.txt 2>&1
el "fp8 profile rc $?"; grep -E "^\| (\+|default|fp8)|^kernels of|^\{" $L/train_profile_fp8_h100.txt | cut -c1-260
gzip -r $L/prof
cd $OUT && tar czf logs.tgz logs && rm -rf logs
