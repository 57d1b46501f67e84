#!/bin/bash
# config/metaworld.py alone on the H200 with an 8000-iteration schedule; MT10 closed loop of the newest checkpoint
# (and of 6000 had it been reached; the timeout stopped the training at checkpoint 4000)
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=10 > $L/gen_mt10.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen_mt10.txt 2>&1
el mt10 data
timeout 385 python3 train.py config/metaworld.py > $L/train_log.txt 2>&1; el trained
cp out/metaworld/log.txt out/metaworld/losses.csv $L/ 2>/dev/null
ev() { python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$1 --workers=8 --out_dir=$OUT/$2 > $L/eval_$2.txt 2>&1; }
C6=out/metaworld/ckpt_6000; CN=$(ls -d out/metaworld/ckpt_* | sort -t_ -k2 -n | tail -n 1)
if [ -d $C6 ] && [ $C6 != $CN ]; then ev $C6 mt10_6000 & fi
ev $CN mt10_final & wait; el evaluated $CN
grep -h "kept" $L/gen_mt10.txt; grep -h "eval iter\|done:" $L/log.txt | cut -c1-330
for d in $OUT/mt10_*; do echo $d; cat $d/tasks.md; done
cd $OUT && tar czf logs.tgz logs mt10_*/*.png 2>/dev/null; rm -rf logs mt10_*/*.png
