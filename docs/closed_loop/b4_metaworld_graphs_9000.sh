#!/bin/bash
# config/metaworld.py with CUDA-graphed units (compile_mode=reduce-overhead), 9000 iterations
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=12 > $L/gen_mt10.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen_mt10.txt 2>&1
el mt10 data
timeout 310 python3 train.py config/metaworld.py --compile_mode=reduce-overhead --max_iters=9000 --lr_decay_iters=9000 --keep_last=0 > $L/train_out.txt 2>&1; el trained
cp out/metaworld/log.txt out/metaworld/losses.csv $L/ 2>/dev/null
ev() { python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$1 --workers=8 --out_dir=$OUT/$2 > $L/eval_$2.txt 2>&1; }
CN=$(ls -d out/metaworld/ckpt_* | sort -t_ -k2 -n | tail -n 1)
if [ -d out/metaworld/ckpt_6000 ] && [ $CN != out/metaworld/ckpt_6000 ]; then ev out/metaworld/ckpt_6000 mt10_6000 & fi
ev $CN mt10_final & wait; el evaluated $CN
grep -h "eval iter\|done:" $L/log.txt | cut -c1-330; grep "^iter 1000/\|^iter 5000/" $L/log.txt; grep -v "^W1201" $L/train_out.txt | grep -i "error" | tail -3
for d in $OUT/mt10_*; do echo $d; cat $d/tasks.md; done
cd $OUT && tar czf logs.tgz logs mt10_*/*.png 2>/dev/null; rm -rf logs mt10_*/*.png
