#!/bin/bash
# RAN 2026-12-02 (session 1 of the day, call 1, one H200 alone, torch 2.11.0+cu130): data took 276 s, so the timeout stopped training after iteration 4100 (its last log line) of 6000; checkpoint 4000 (mid-schedule) evaluated: MT10 26% (f0_*). Not a result for 200 demonstrations.
# prepared in session 2026-12-01e for the next one (not yet run): MT10 with 200 demonstrations per task (reach-v3 alone
# on a CPU went from 33% with 50 to 58% with 200 over 60 episodes, docs/closed_loop/e4_*), with the first-frame fix, config/metaworld.py
# (6000 iterations), evaluated on the evaluation seeds. Alone on the machine: nothing compiles or renders beside the
# writers (they slowed threefold when something did in session e).
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python3 sim.py metaworld --out=data_cache/mt10x200_lerobot --tasks=mt10 --episodes=200 --size=128 --workers=16 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10x200_lerobot --out=data_cache/mt10x200 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1
el data; tr '\r' '\n' < $L/gen.txt | grep "kept\|wrote" | cut -c1-160
timeout $(( 470 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --data_dir=data_cache/mt10x200 --out_dir=out/mt10x200 --eval_interval=3000 --keep_last=0 > $L/train.txt 2>&1; el trained
cp out/mt10x200/log.txt $L/log.txt
C=$(ls -d out/mt10x200/ckpt_* | sort -t_ -k2 -n | tail -n 1)
timeout $(( 580 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$C --workers=10 --out_dir=$OUT/mt10x200 > $L/eval.txt 2>&1; el evaluated $C
grep -h "eval iter\|done:" $L/log.txt | cut -c1-250; cat $OUT/mt10x200/tasks.md
cd $OUT && tar czf logs.tgz logs */*.png 2>/dev/null; rm -rf logs */*.png
