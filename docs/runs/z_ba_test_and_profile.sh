#!/bin/bash
# Session 27 (2026-12-06), issues 17 and 18; carry [".whl", ".gl"]; timeout_s 600 (a shorter call sets PD and DL).
# Machines were scarce (session 27 got none to run on), so the two prepared calls shrink into one: (1) the changed
# GPU test alone (z_aw_grouped_prefix_test.sh's first part: test_grouped_prefix_attention_compiles_at_pi05_heads
# with pdl=False samplers for its bit-for-bit checks and a default (PDL) sampler to 1e-2), TORCH_LOGS=recompiles;
# (2) z_ay_train_profile.sh's first part: one profiled steady-state step each of train.py's default and of fp8,
# every kernel to a csv; (3) by the deadline, the
# fp8 trace validation on today's default, its keep-list beside the logs. PD, DL: deadlines of the profile and of
# the validation, s after T0 (450, 590), TD that of the test (200); ROWS: the rows run and profiled (default,fp8; row names, not 'ladder').
# pytest -s: TORCH_LOGS' recompile lines reach the log even when the test passes.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
TORCH_LOGS=recompiles timeout $(left ${TD:-200}) python3 -m pytest -q -rs -s test_equivalence.py -p no:cacheprovider \
  -k "TestGPU and grouped_prefix_attention_compiles" > $L/gpu_test_grouped_prefix_1.txt 2>&1
el "test rc $?"; grep -E "passed|failed|^E  |^FAILED|Recompiling|triggered by" $L/gpu_test_grouped_prefix_1.txt | cut -c1-300 | head -12
timeout $(left ${PD:-450}) python3 bench.py --rows=${ROWS:-default,fp8} --profile=${ROWS:-default,fp8} --steps=10 --warmup=2 --out_dir=$L/prof \
  > $L/train_profile.txt 2>&1
el "profile rc $?"; grep -E "^\| (\+|default)|^kernels of|^\{" $L/train_profile.txt | cut -c1-260
timeout $(left ${DL:-590}) python3 bench.py --fp8_validate=True --fp8_keep_out=$L/fp8_keep.txt --out_dir=$L/val \
  > $L/fp8_validate.txt 2>&1
el "fp8 validate rc $?"; grep -E "ms/step|^step|keep fp8|drop \(not faster\)|static rules" $L/fp8_validate.txt | cut -c1-200 | head -20
gzip -r $L/prof
cd $OUT && tar czf logs.tgz logs && rm -rf logs
