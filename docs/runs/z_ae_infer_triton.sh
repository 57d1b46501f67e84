#!/bin/bash
# Prepared 2026-12-06 (session 19) for a device call (issue 17), not run yet (session 20 ran its GPU tests and the step /
# triton rows without kernel lists for triton: docs/closed_loop/ai_results.txt part 3); any single GPU (say which),
# carry [".whl", ".gl"] (only for device_setup.sh's common lines). ~8-9 min. The GPU tests of
# these changes are docs/runs/z_ah_gpu_tests.sh, a call of their own. decode_attn.py (new): the denoising
# attention as one Triton kernel reading the prefix and action keys in place, in place of the six kernels (two
# products, softmax, two concatenations, a view copy) that take ~14 us of each 54.5 us expert layer-step
# (docs/closed_loop/ah_results.txt part 3).
# 1. docs/runs/z_ae_decode_attn.py: the kernel alone at pi05's shapes, 64 configurations (blocks, warps, stages,
#    key splits) checked against the grouped attention and timed inside a CUDA graph, beside inductor's grouped
#    attention; its fastest configuration at batch 1 is written into this copy's decode_attn.py defaults (the record
#    says which; commit them after).
# 2. bench.py's 'step' row (serve.py's default) against 'triton' (the same with the kernel), batch 1 / 8 / 32, with
#    their kernel lists. Both now load the adaRMS Dense in bf16 (set_param_dtype(..., inference=True), as serve.py
#    does): against session 19's 18.6 ms 'step' row, 74 cast kernels (~0.3 ms) should be gone from the list. Then
#    'prefix': 'step' with the grouped attention in the prefix pass too (cuDNN's prefix attention took 48 us per
#    layer at batch 1, 0.82 ms per call: 8 heads x 10 query blocks of 64 leave most of the GPU idle).
# Session 20 (2026-12-06): the sweep now also times each call with its keys read from memory (its own input set per
# call, L2 written over in between, as in the model) and picks the defaults by that; the sweep gets 250 s and the
# bench runs step and triton only ('prefix' left for a call of its own: three rows did not fit with the sweep).
# Session 21 (2026-12-06): the sweep gets 200 s (its batch-1 part, which sets DEFAULTS, comes first), and the bench
# runs step, prefix, triton in that order (bench.py now runs 'prefix' before 'triton'), 30 calls per batch-1 row;
# a row cut by the time limit keeps what it printed; SWEEP_END, END (seconds from the start) and VARIANTS override
# those. Inductor's cache goes under $OUT: its generated code (every compiled graph's kernels and call order, ind.tgz)
# shows offline which ops each of the call's kernels fuses (SigLIP's LayerNorms run as three kernels each in the
# 'step' row's kernel list, 27 x ~6 us).
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left ${SWEEP_END:-200}) python3 docs/runs/z_ae_decode_attn.py > $L/decode_sweep.txt 2>&1; el "sweep rc $?"
grep "^| 1 | grouped\|^| 8 | grouped" $L/decode_sweep.txt; grep "^| 1 | kernel B" $L/decode_sweep.txt | sort -t'|' -k5 -n | head -5
grep "^| 8 | kernel B" $L/decode_sweep.txt | sort -t'|' -k5 -n | head -3; grep "WRONG\|failed\|Error" $L/decode_sweep.txt | head -5
read -r _ BM BN NW NS PR <<< "$(grep '^DEFAULTS' $L/decode_sweep.txt)"
if [ -n "$PR" ]; then
  sed -i "s/^BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES = [0-9]*, [0-9]*, [0-9]*, [0-9]*/BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES = $BM, $BN, $NW, $NS/; s/^PROGRAMS = [0-9]*/PROGRAMS = $PR/" decode_attn.py
  el "defaults now: $(grep '^BLOCK_M, BLOCK_N\|^PROGRAMS' decode_attn.py | cut -c1-60 | tr '\n' ' ')"
fi
TORCHINDUCTOR_CACHE_DIR=$OUT/ind timeout $(left ${END:-585}) python3 bench.py --infer=True --infer_calls=30 --infer_variants=${VARIANTS:-step,prefix,triton} --out_dir=$OUT/bench \
  > $L/infer_step_triton.txt 2>&1; el "bench rc $?"
grep "^| compiled\|^kernels of\|relative\|replay\|failed" $L/infer_step_triton.txt | cut -c1-220
cd $OUT && tar czf logs.tgz logs $(ls bench/*.csv 2>/dev/null) && rm -rf logs bench
find ind -name '*.py' | tar czf ind.tgz -T - && rm -rf ind; ls -la $OUT
