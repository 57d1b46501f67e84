#!/bin/bash
# session 2026-12-01c call 3: the GPU tests (CUDA-graph units, graphed serving incl. guided + fused replays) beside
# config/demo_gpu.py at micro-batch 256 in fp32 (bf16 at lr 2e-3 hit a NaN gradient at iter 1975); then
# bench.py --infer alone (separate vs fused projections, RTC direct vs graphed)
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
(timeout 170 python3 -m pytest -q test_equivalence.py test_serve.py test_data.py test_fp8.py -k "TestGPU or cuda or Cuda" > $L/gpu_tests.txt 2>&1; el gpu tests; tail -n 4 $L/gpu_tests.txt) &
TESTS=$!
(timeout 270 python3 train.py config/demo_gpu.py --compile=True --compile_mode=reduce-overhead --micro_batch=256 --warmup_iters=300 > $L/demo_gpu_train.txt 2>&1; el demo_gpu trained) &
wait
cp out/demo_gpu/log.txt $L/demo_gpu_log.txt
(OMP_NUM_THREADS=3 python3 eval.py --ckpt=out/demo_gpu --episodes=100 --device=cpu --out_dir=$OUT/demo_gpu > $L/demo_gpu_eval.txt 2>&1; el demo_gpu evaluated) &
timeout $(( 540 - ($(date +%s) - T0) )) python3 bench.py --infer=True --out_dir=$L/infer > $L/infer.txt 2>&1; el infer
wait
grep -v "^W1201\|^{\|Warning\|warn" $L/infer.txt | grep "^|\|replay\|kernels of\|guided\|fused" | head -n 60
grep -h "eval iter\|done:\|non-finite" $L/demo_gpu_log.txt | cut -c1-300; grep "^iter 2000/\|^iter 10000/" $L/demo_gpu_log.txt; tail -n 2 $L/demo_gpu_eval.txt
grep -i "failed\|error" $L/gpu_tests.txt | head -n 20
cd $OUT && tar czf logs.tgz logs */*.png 2>/dev/null; rm -rf logs */*.png
