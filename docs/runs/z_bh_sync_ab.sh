#!/bin/bash
# 2026-12-07 (issue 18): the default and fp8 rows with and without the change (augment_images' cameras as a slice
# instead of a list: five host syncs a step fewer), alternating processes, then the GPU tests of a step without host
# syncs, then that test on the old code. Run from a copy of the new code (.snap) with the code before it beside it
# (../.snap_old, with test_equivalence.py copied there as test_eq_new.py); any single H200,
# timeout_s 600 (on an H100, ROWS=sdpa: the default needs 96 GiB).
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
k=0
for i in 1 2; do
  for v in new old; do
    k=$((k + 1)); d=.; [ $v = old ] && d=../.snap_old
    (cd $d && timeout $(left $((10 + 115 * k))) python3 bench.py --rows=${ROWS:-default,fp8} --steps=10 --warmup=2 \
      --out_dir=$L/$v$i > $L/rows_$v$i.txt 2>&1)
    el "rows $v $i rc $?"; grep '^{"row"' $L/rows_$v$i.txt | cut -c1-200
  done
done
timeout $(left 575) python3 -m pytest -q -rs test_equivalence.py test_data.py -k "host_sync or cuda_augment" > $L/gpu_tests.txt 2>&1
el "gpu tests rc $?"; tail -n 4 $L/gpu_tests.txt
# the same test on the code before the change must fail (test_eq_new.py: today's test_equivalence.py copied there)
(cd ../.snap_old && timeout $(left 595) python3 -m pytest -q test_eq_new.py -k whole_train_py_step > $L/gpu_test_old_code.txt 2>&1)
el "gpu test on the old code rc $? (1 expected)"; grep -E "^(FAILED|ERROR)|passed|failed|Synchroniz" $L/gpu_test_old_code.txt | cut -c1-250 | head -6
cd $OUT && tar czf logs.tgz logs && rm -rf logs
