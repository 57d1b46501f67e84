#!/bin/bash
# Session 22 (2026-12-06), issue 17, one device call; carry [".whl", ".gl"]; ~9 min, run with timeout_s 600.
# Do L2 prefetch hints ahead of the action expert's batch-1 GEMMs pay (small_gemm.launch(next_w=...))? Ran in session
# 22 at commit dabed2e; the hints were removed after (no gain): re-running needs docs/logs/small_gemm_l2_hints.patch.
# 1. docs/runs/z_ao_l2_prefetch.py: a stand-in denoising step (18 layers of the expert's shapes in one CUDA graph)
#    without hints, with hint kernels of their own, with small_gemm's built-in hints, and with all weights in L2.
# 2. small_gemm's GPU tests (now also: a hint never changes a result).
# 3. bench.py rows 'step' (serve.py's default) and 'small' (gate/up and down_proj through small_gemm, hinting the next
#    layer's q/k/v and o_proj weights into L2), batch 1 / 8 / 32, with kernel lists.
# 4. 'small' again with all four projections through the kernel (this copy's CONFIGS set to the session-21 sweep's
#    fastest kernel configuration for q/k/v and o_proj too), so that every weight is hinted by the kernel before.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left ${PROBE_END:-110}) python3 docs/runs/z_ao_l2_prefetch.py > $L/l2_prefetch.txt 2>&1; el "probe rc $?"
cat $L/l2_prefetch.txt | cut -c1-200
timeout $(left ${TESTS_END:-200}) python3 -m pytest -q -x test_equivalence.py -k "small_gemm" -p no:cacheprovider \
  > $L/gpu_tests.txt 2>&1; el "gpu tests rc $?"; grep -E "passed|failed|Error|assert" $L/gpu_tests.txt | tail -6
timeout $(left ${END:-410}) python3 bench.py --infer=True --infer_calls=30 --infer_variants=step,small \
  --out_dir=$OUT/bench > $L/infer.txt 2>&1; el "bench rc $?"
grep "^| compiled\|^kernels of\|relative\|replay\|failed" $L/infer.txt | cut -c1-220
sed -i 's/^CONFIGS = {(2560, 1024): None, (1024, 2048): None,/CONFIGS = {(2560, 1024): (32, 128, 1, 4), '\
'(1024, 2048): (32, 128, 4, 4),/' small_gemm.py
grep -n "^CONFIGS" small_gemm.py | cut -c1-150
timeout $(left ${ALL_END:-585}) python3 bench.py --infer=True --infer_calls=30 --infer_variants=small \
  --out_dir=$OUT/bench_all > $L/infer_all.txt 2>&1; el "bench all four rc $?"
grep "^| compiled\|^kernels of\|relative\|replay\|failed" $L/infer_all.txt | cut -c1-220
cd $OUT && tar czf logs.tgz logs $(ls bench/*.csv bench_all/*.csv 2>/dev/null) && rm -rf logs bench bench_all
