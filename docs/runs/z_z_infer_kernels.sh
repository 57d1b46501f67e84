#!/bin/bash
# Prepared 2026-12-06 (session 18) for a device call (issues 17 and 18), not run yet; any single GPU (the H200 is the
# goal's; say which in the record), carry [".whl", ".gl"] (only for device_setup.sh's common lines). ~9-10 min
# (the last run is cut at 590 s if it has not ended).
# 1. serve.py's batch-1 call (fused projections + grouped denoising attention) timed and profiled; bench.py now writes
#    every kernel of the profiled call in launch order (kernels_*.csv under --out_dir), so the ~19 kernels of one
#    expert layer-step can be named one by one (session 18's A/B, docs/closed_loop/ag_results.txt part 3, printed only
#    the ten busiest). Then the same with each plain denoising step compiled as one graph (the 'step' variant,
#    model.compile_denoise_step, new: inductor may then fuse across layer boundaries; its compile time is the row's
#    last column, and its relative difference to the grouped row is printed).
# 2. The same row after the separate and fused rows, as bench.py's full table runs them: there the grouped call was
#    4,049 kernels (docs/logs/infer_2026-12-06_h100.log), in session 18's A/B (fused and grouped rows only, the order
#    serve.py compiles in) 4,229 with the same model.py; the two kernel lists say which kernel the 180 extra are.
# 3. (run third) docs/runs/z_t_attention_shapes.py again, for its new part C: training's masked attention as two
#    calls that need only a key-padding mask (issue 18; parts A and B repeat session 18's figures on this GPU).
# 4. (run last) The grouped row with inductor's coordinate-descent tuning of its Triton kernels (block sizes of the
#    elementwise and reduction kernels: 3.9 ms of kernel time in a call whose profile spans 20.6 ms), a fresh
#    process (the setting is part of inductor's cache key, so its kernels are tuned anew).
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
run() { # name deadline [VAR=value...] [bench.py flags...]: the grouped row at batch 1 / 8 / 32, 50 calls at batch 1
  local n=$1 d=$2 envs=() flags=(); shift 2
  for a in "$@"; do [[ $a == --* ]] && flags+=("$a") || envs+=("$a"); done
  env "${envs[@]}" timeout $(left $d) python3 bench.py --infer=True --infer_calls=50 --infer_variants=grouped \
    "${flags[@]}" --out_dir=$OUT/$n > $L/infer_$n.txt 2>&1; el "$n rc $?"
  grep "^| compiled\|^kernels of\|replay\|relative" $L/infer_$n.txt | cut -c1-220; }
run grouped_step 300 --infer_variants=grouped,step
run full_order 430 --infer_variants=separate,fused,grouped
timeout $(left 490) python3 docs/runs/z_t_attention_shapes.py > $L/attention_shapes.txt 2>&1; el "attention shapes"
cut -c1-220 $L/attention_shapes.txt
run coordinate_descent 590 TORCHINDUCTOR_COORDINATE_DESCENT_TUNING=1
cd $OUT && tar czf logs.tgz logs $(ls */*.csv 2>/dev/null) && rm -rf logs */*.csv
