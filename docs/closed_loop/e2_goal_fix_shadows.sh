#!/bin/bash
# session 2026-12-01e, call 3 (call 2 ran out of time: its demonstration writers took 253 and 322 s):
# MT10 after the first-frame goal fix (its first form, an mj_forward after reset). A: the fix alone; B: the fix and MuJoCo's default render quality (shadow map
# 4096, 4x MSAA: a floating goal casts a shadow) patched into a copy of the tree. Each its own pipeline: demonstrations
# (50 per task), config/metaworld.py (6000 iterations), MT10 evaluation on the evaluation seeds.
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
R=$PWD; rm -rf /tmp/B; mkdir /tmp/B; cp -r *.py config assets /tmp/B/
sed -i 's/shadowsize = 0/shadowsize = 4096/; s/offsamples = 0/offsamples = 4/' /tmp/B/sim.py
pipe() { cd $2
  python3 sim.py metaworld --out=$R/data_cache/$1_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=7 > $L/gen_$1.txt 2>&1
  python3 prepare.py --src=$R/data_cache/$1_lerobot --out=$R/data_cache/$1 --tokenizer=words --image_size=128 --max_token_len=48 --workers=7 >> $L/gen_$1.txt 2>&1
  el $1 data
  (cd $R && timeout $(( 390 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --data_dir=data_cache/$1 --out_dir=out/$1 --eval_interval=3000 --keep_last=0 > $L/train_$1.txt 2>&1); cp $R/out/$1/log.txt $L/log_$1.txt; el $1 trained
  C=$(ls -d $R/out/$1/ckpt_* | sort -t_ -k2 -n | tail -n 1)
  timeout $(( 545 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$C --workers=7 --out_dir=$OUT/$1 > $L/eval_$1.txt 2>&1; el evaluated $1 $C; }
pipe A $R & pipe B /tmp/B & wait
grep -h "eval iter\|done:" $L/log_*.txt | cut -c1-250
for d in $OUT/A $OUT/B; do echo $d; cat $d/tasks.md; done
cd $OUT && tar czf logs.tgz logs */*.png 2>/dev/null; rm -rf logs */*.png
