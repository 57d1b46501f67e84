#!/bin/bash
# session 2026-12-01c call 2: MT10 (128 px) with the random-shift augmentation, the full 6000-iteration schedule with
# CUDA-graphed units; beside it config/demo_gpu.py at micro-batch 256, lr 2e-3 (the graphed step is launch-bound)
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
(timeout 300 python3 train.py config/demo_gpu.py --compile=True --compile_mode=reduce-overhead --dtype=bfloat16 --micro_batch=256 --learning_rate=2e-3 --warmup_iters=300 > $L/demo_gpu_train.txt 2>&1; el demo_gpu trained
 cp out/demo_gpu/log.txt $L/demo_gpu_log.txt
 OMP_NUM_THREADS=3 python3 eval.py --ckpt=out/demo_gpu --episodes=100 --device=cpu --out_dir=$OUT/demo_gpu > $L/demo_gpu_eval.txt 2>&1; el demo_gpu evaluated) &
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=10 > $L/gen_mt10.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=12 >> $L/gen_mt10.txt 2>&1
el mt10 data; tail -n 1 $L/gen_mt10.txt | cut -c1-300
TT=$(( 450 - ($(date +%s) - T0) ))
timeout $TT python3 train.py config/metaworld.py --augment=shift --compile_mode=reduce-overhead --eval_interval=3000 --keep_last=0 > $L/mw_train.txt 2>&1; el mw trained
cp out/metaworld/log.txt $L/mw_log.txt; cp out/metaworld/losses.csv $L/mw_losses.csv
CN=$(ls -d out/metaworld/ckpt_* | sort -t_ -k2 -n | tail -n 1)
timeout $(( 565 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$CN --workers=10 --out_dir=$OUT/mw > $L/mw_eval.txt 2>&1; el mw evaluated $CN
wait
grep -h "eval iter\|done:" $L/mw_log.txt $L/demo_gpu_log.txt | cut -c1-300; grep "^iter 1000/\|^iter 5000/" $L/mw_log.txt; grep "^iter 2000/\|^iter 10000/" $L/demo_gpu_log.txt
grep -v "^W1201" $L/mw_train.txt $L/demo_gpu_train.txt | grep -i "error" | tail -3
cat $OUT/mw/tasks.md; tail -n 2 $L/demo_gpu_eval.txt
cd $OUT && tar czf logs.tgz logs */*.png 2>/dev/null; rm -rf logs */*.png
