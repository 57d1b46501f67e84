#!/bin/bash
# session 2026-12-01c call 1: MT10 at 224 px (the goal ball and puck of reach/push/pick-place are ~3 px at 128 px),
# 5000-iteration schedule with CUDA-graphed units; beside it config/demo_gpu.py with compile + CUDA graphs
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
(timeout 330 python3 train.py config/demo_gpu.py --compile=True --compile_mode=reduce-overhead --dtype=bfloat16 > $L/demo_gpu_train.txt 2>&1; el demo_gpu trained
 cp out/demo_gpu/log.txt $L/demo_gpu_log.txt
 OMP_NUM_THREADS=3 python3 eval.py --ckpt=out/demo_gpu --episodes=100 --device=cpu --out_dir=$OUT/demo_gpu > $L/demo_gpu_eval.txt 2>&1; el demo_gpu evaluated) &
python3 sim.py metaworld --out=data_cache/mt10_224_lerobot --tasks=mt10 --episodes=50 --size=224 --workers=10 > $L/gen_mt10.txt 2>&1
python3 prepare.py --src=data_cache/mt10_224_lerobot --out=data_cache/mt10_224 --tokenizer=words --image_size=224 --max_token_len=48 --workers=12 >> $L/gen_mt10.txt 2>&1
el mt10 data; tail -n 2 $L/gen_mt10.txt | cut -c1-300
TT=$(( 430 - ($(date +%s) - T0) ))
timeout $TT python3 train.py config/metaworld.py --data_dir=data_cache/mt10_224 --image_size=224 --out_dir=out/mw224 --compile_mode=reduce-overhead --max_iters=5000 --lr_decay_iters=5000 --eval_interval=2500 --keep_last=0 > $L/mw224_train.txt 2>&1; el mw224 trained
cp out/mw224/log.txt $L/mw224_log.txt; cp out/mw224/losses.csv $L/mw224_losses.csv
CN=$(ls -d out/mw224/ckpt_* | sort -t_ -k2 -n | tail -n 1)
timeout $(( 565 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$CN --workers=10 --out_dir=$OUT/mw224 > $L/mw224_eval.txt 2>&1; el mw224 evaluated $CN
wait
grep -h "eval iter\|done:" $L/mw224_log.txt $L/demo_gpu_log.txt | cut -c1-300; grep "^iter 1000/\|^iter 4000/" $L/mw224_log.txt; grep "^iter 2000/\|^iter 10000/" $L/demo_gpu_log.txt
grep -v "^W1201" $L/mw224_train.txt $L/demo_gpu_train.txt | grep -i "error" | tail -3
cat $OUT/mw224/tasks.md; tail -n 2 $L/demo_gpu_eval.txt
cd $OUT && tar czf logs.tgz logs */*.png 2>/dev/null; rm -rf logs */*.png
