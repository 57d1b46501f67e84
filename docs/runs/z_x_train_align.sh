#!/bin/bash
# Prepared 2026-12-06 (session 17) for a device call (issue 18), not run yet; any single GPU (say which), carry
# [".whl", ".gl"] (device_setup.sh's common lines only). Does a token count that is a multiple of 8 speed up training's
# attention? The default row (64 prompt slots: 512 image + 64 + 50 action tokens = 626) against the same with 70 prompt
# slots (632 tokens, 1% more GEMM rows), each with one profiled step (time per kernel kind: the attention row is the
# one to read). Worth a call if z_t_attention_shapes.py shows cuDNN faster at 632 keys than at 626. ~4 min.
# Micro-batch 16: the default row at 32 peaks at 96 GiB (an H100 ran out of memory on it, bench_2026-12-05_h100_lora.log),
# at 16 it is predicted at ~69 GiB, so the comparison runs on an H100 too (its ms are not the H200's 533 at 32).
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left 560) python3 bench.py --rows=default,align8 --profile=default,align8 --batch_size=16 --steps=10 --warmup=3 \
  --out_dir=$L/bench > $L/bench.txt 2>&1; el "bench rc $?"
grep "^|\|attention\|GEMM\|idle" $L/bench.txt | cut -c1-200 | tail -n 30
cd $OUT && tar czf logs.tgz logs && rm -rf logs
