#!/bin/bash
# Prepared 2026-12-06 (session 17) for a device call (issue 17), not run yet; any single GPU (say which in the record),
# carry [".whl", ".gl"] (only for device_setup.sh's common lines; nothing here needs Meta-World).
# A/B of two changes to the grouped denoising attention on one warm machine, one process each, the same command:
#   now:    model.py as committed: the cached prefix padded with masked keys to a multiple of 8 keys (Tp + 50 keys gave
#           cuBLAS 2-element-aligned rows: two sm80 WMMA kernels, 180 calls each, 2.5 ms of the 21.8 ms call on the
#           H100, docs/logs/infer_2026-12-06_h100.log), and the rows in (query, head) order (no transpose copy);
#   before: the same tree with z_s_grouped_layout.patch reversed (model.py of commit 4484688).
# Then the GPU tests of the grouped attention and of serving's batch-1 replay, and z_t_attention_shapes.py (training's
# attention at 626 / 632 / 640 keys, with and without the mask; issue 18). ~7-8 min in all.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
run() { # name dir: bench.py's fused and grouped rows, 50 calls at batch 1
  (cd $2 && timeout $(left $3) python3 bench.py --infer=True --infer_calls=50 --infer_variants=fused,grouped \
    --out_dir=$L/$1 > $L/infer_$1.txt 2>&1); el "$1 rc $?"
  grep "^| compiled\|^kernels of\|relative\|replay" $L/infer_$1.txt | cut -c1-200; }
B=/tmp/before; mkdir -p $B && tar cf - --exclude=./.whl --exclude=./.gl --exclude=./data_cache --exclude=./out . | tar xf - -C $B
(cd $B && { git apply -R docs/runs/z_s_grouped_layout.patch 2>/dev/null || patch -s -R -p1 < docs/runs/z_s_grouped_layout.patch; })
# the patch must be regenerated (git diff 4484688 HEAD -- model.py) whenever model.py's changed lines change again
if grep -q "% 8 if impl == 'grouped'" $B/model.py || [ -e $B/model.py.rej ]; then el "the patch did not reverse: no 'before' row"; B=; fi
run now . 230
[ -n "$B" ] && run before $B 420
timeout $(left 540) python3 -m pytest -q test_equivalence.py test_serve.py -k "TestGPU and (grouped or replay or real_time)" \
  > $L/gpu_tests.txt 2>&1; el "gpu tests"; tail -n 3 $L/gpu_tests.txt
timeout $(left 590) python3 docs/runs/z_t_attention_shapes.py > $L/attention_shapes.txt 2>&1; el "attention shapes"
cat $L/attention_shapes.txt | cut -c1-220
cd $OUT && tar czf logs.tgz logs && rm -rf logs
