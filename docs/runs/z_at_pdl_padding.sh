#!/bin/bash
# Prepared 2026-12-06 (session 24) for one device call (issue 17); carry [".whl", ".gl"]; ~4.5 min, timeout_s 330.
# Ran in session 25 (docs/runs/at/); --infer_pdl=False added after it, when bench.py's default became True.
# 1. The PDL GPU test as rewritten in session 24 (two inputs replayed in turn, 1e-4 against pdl=False, bit-identical
#    replays; deterministic mode). If it passes, PDL can become serve.py's default (pdl=None).
# 2. The step row (serve.py's default) with the kernel lists of its batch-1 and batch-8 calls, then the same row with
#    TORCHINDUCTOR_COMPREHENSIVE_PADDING=0 in a process of its own. The question: SigLIP's fc1 (1152 -> 4304) is the
#    one projection whose bias cuBLAS does not add in its epilogue; an eager copy of the bias into the output comes
#    first (27 a call: ~30 us each at batch 8, ~5 us at batch 1). The guess: 4304 bf16 values are not a multiple of
#    inductor's 128-byte padding, so its output buffer gets a padded row stride and the bias epilogue needs a
#    contiguous one. Untested; the two kernel lists say (grep direct_copy).
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left ${TESTS_END:-110}) python3 -m pytest -q -rs test_equivalence.py -p no:cacheprovider -p no:logging \
  -k "pdl_sampler" > $L/gpu_tests.txt 2>&1; el "pdl test rc $?"
grep -E "passed|failed|^E  " $L/gpu_tests.txt | head -6
for v in default nopad; do
  env=""; [ $v = nopad ] && env="TORCHINDUCTOR_COMPREHENSIVE_PADDING=0"
  timeout $(left $([ $v = default ] && echo ${MID_END:-210} || echo ${END:-310})) env $env python3 bench.py --infer=True \
    --infer_calls=30 --infer_variants=step --infer_profile=1,8 --infer_pdl=False --out_dir=$OUT/bench_$v > $L/infer_$v.txt 2>&1
  el "bench $v rc $?"
  grep "^| compiled\|^kernels of\|replay\|failed" $L/infer_$v.txt | cut -c1-200
  for f in $OUT/bench_$v/kernels_one_batch_*.csv; do
    echo "$v $(basename $f): direct_copy $(grep -c direct_copy $f), badd GEMMs $(grep -c _badd_ $f)"; done
done
cd $OUT && tar czf logs.tgz logs $(ls bench_*/*.csv 2>/dev/null) && rm -rf logs bench_default bench_nopad
