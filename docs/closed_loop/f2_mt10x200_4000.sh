#!/bin/bash
# RAN 2026-12-02 (call 3, one H200 alone): MT10 39% (f2_mt10x200_4000_tasks.md)
# session 2026-12-02, call 3: MT10 with 200 demonstrations per task, config/metaworld.py with its schedule shortened to
# 4000 iterations so that it ends inside one call (call 1's 6000-iteration run was cut at 4100: checkpoint 4000 26%)
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python3 sim.py metaworld --out=data_cache/mt10x200_lerobot --tasks=mt10 --episodes=200 --size=128 --workers=16 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10x200_lerobot --out=data_cache/mt10x200 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1
el data; tr '\r' '\n' < $L/gen.txt | grep "kept\|wrote" | cut -c1-160
timeout $(( 480 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --data_dir=data_cache/mt10x200 --out_dir=out/mt10x200 --max_iters=4000 --lr_decay_iters=4000 --eval_interval=2000 --keep_last=0 > $L/train.txt 2>&1; el trained
cp out/mt10x200/log.txt $L/log.txt
C=$(ls -d out/mt10x200/ckpt_* | sort -t_ -k2 -n | tail -n 1)
timeout $(( 575 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$C --workers=10 --out_dir=$OUT/mt10x200 > $L/eval.txt 2>&1; el evaluated $C
grep -h "eval iter\|done:" $L/log.txt | cut -c1-250; cat $OUT/mt10x200/tasks.md; tail -n 1 $L/eval.txt
cd $OUT && tar czf logs.tgz logs */*.png 2>/dev/null; rm -rf logs */*.png
