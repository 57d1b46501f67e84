#!/bin/bash
# RAN 2026-12-02 (call 2, one H200 alone): MT10 57% (f1_mt10x50_fixed_tasks.md); the inference table (run without --infer_autotune) ran out of time before its FlexAttention rows (f1_infer.txt)
# session 2026-12-02, call 2: MT10 with 50 demonstrations per task after the first-frame fix, config/metaworld.py to the
# end of its 6000 iterations, evaluated on the evaluation seeds; then the inference table (issue 17) in what is left
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=16 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1
el data; tr '\r' '\n' < $L/gen.txt | grep "kept\|wrote" | cut -c1-160
timeout $(( 360 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --eval_interval=3000 --keep_last=0 > $L/train.txt 2>&1; el trained
cp out/metaworld/log.txt $L/log.txt
C=$(ls -d out/metaworld/ckpt_* | sort -t_ -k2 -n | tail -n 1)
timeout $(( 450 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$C --workers=10 --out_dir=$OUT/mt10x50 > $L/eval.txt 2>&1; el evaluated $C
grep -h "eval iter\|done:" $L/log.txt | cut -c1-250; cat $OUT/mt10x50/tasks.md; tail -n 1 $L/eval.txt
timeout $(( 515 - ($(date +%s) - T0) )) python3 bench.py --infer=True --out_dir=$L/infer > $L/infer.txt 2>&1; el infer
grep "^|\|replay\|relative\|failed" $L/infer.txt | head -n 40
cd $OUT && tar czf logs.tgz logs */*.png 2>/dev/null; rm -rf logs */*.png
