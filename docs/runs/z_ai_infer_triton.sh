#!/bin/bash
# 2026-12-06 (session 20), a device call for issue 17; any single GPU (the record says which), carry [".whl", ".gl"].
# z_ae_infer_triton.sh with decode_attn.py's GPU tests in front: their first run this session failed on shared
# memory (282,624 bytes asked at BLOCK_N 128 / 2 stages, 232,448 on an H100) because the key-split version read a
# prefix and an action block in every iteration of one loop; the kernel now walks the prefix keys and the action
# keys in two loops (attend_keys), as the version the first sweep timed did. Then the sweep (its fastest batch-1
# configuration written into this copy's decode_attn.py defaults; commit them after) and bench.py's step / triton /
# prefix rows at batch 1 / 8 / 32 with their kernel lists. ~9 min.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left 120) python3 -m pytest -q -rs test_equivalence.py -k "TestGPU and triton" > $L/gpu_tests_triton.txt 2>&1
el "triton gpu tests rc $?"; grep -v DEBUG $L/gpu_tests_triton.txt | grep -E "passed|failed|^E " | head -8 | cut -c1-220
timeout $(left 270) python3 docs/runs/z_ae_decode_attn.py > $L/decode_sweep.txt 2>&1; el "sweep rc $?"
grep "^| 1 | grouped\|^| 8 | grouped" $L/decode_sweep.txt; grep "^| 1 |" $L/decode_sweep.txt | sort -t'|' -k4 -n | head -5
grep "^| 8 |" $L/decode_sweep.txt | sort -t'|' -k4 -n | head -3; grep "WRONG\|failed\|Error" $L/decode_sweep.txt | head -5
read -r _ BM BN NW NS PR <<< "$(grep '^DEFAULTS' $L/decode_sweep.txt)"
if [ -n "$PR" ]; then
  sed -i "s/^BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES = [0-9]*, [0-9]*, [0-9]*, [0-9]*/BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES = $BM, $BN, $NW, $NS/; s/^PROGRAMS = [0-9]*/PROGRAMS = $PR/" decode_attn.py
  el "defaults now: $(grep '^BLOCK_M, BLOCK_N\|^PROGRAMS' decode_attn.py | cut -c1-60 | tr '\n' ' ')"
fi
timeout $(left 590) python3 bench.py --infer=True --infer_calls=50 --infer_variants=step,triton,prefix --out_dir=$OUT/bench \
  > $L/infer_step_triton_prefix.txt 2>&1; el "bench rc $?"
grep "^| compiled\|^kernels of\|relative\|replay\|failed" $L/infer_step_triton_prefix.txt | cut -c1-220
cd $OUT && tar czf logs.tgz logs $(ls bench/*.csv 2>/dev/null) && rm -rf logs bench
