#!/bin/bash
# 2026-12-04 session 6, call 1 (issue 16): does the sampling noise cost MT10 its precision tasks? On the CPU a push-v3
# policy with no images and the oracle state solved 1 of 20 with the usual noise and 6 of 20 with none
# (s_results.txt). MT10 x50, config/metaworld.py (A, 6000 iterations) beside a 9000-iteration schedule (B), both
# to the end; A evaluated with the noise scaled by 0, 0.5 and 1, B by 0 (noise seed 0, 10 episodes per task).
source docs/closed_loop/device_setup.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
ev() { # name ckpt noise_scale workers deadline
  timeout $(( $5 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$2 --noise_scale=$3 \
    --workers=$4 --out_dir=$OUT/$1 > $L/eval_$1.txt 2>&1; el "$1: $(tail -n 1 $OUT/$1/tasks.md 2>/dev/null)"; }
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=16 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1
el data; tr '\r' '\n' < $L/gen.txt | grep "kept of\|wrote" | tail -n 3 | cut -c1-150
timeout $(( 420 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --out_dir=out/mwB --max_iters=9000 \
  --lr_decay_iters=9000 --eval_interval=4500 --keep_last=0 > $L/train_B.txt 2>&1 &
PB=$!
timeout $(( 330 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --out_dir=out/mwA --eval_interval=3000 \
  --keep_last=0 > $L/train_A.txt 2>&1; el "A trained"
A=$(ls -d out/mwA/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "A: $A"
ev A_s0 $A 0 5 585 & ev A_s05 $A 0.5 5 585 & ev A_s1 $A 1 5 585 &
wait $PB; el "B trained"
B=$(ls -d out/mwB/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "B: $B"
ev B_s0 $B 0 5 585 &
wait
for r in A B; do grep -h "eval iter\|done:" $L/train_$r.txt | cut -c1-220; done
for d in $OUT/*/; do [ -f $d/tasks.md ] && { echo "== $d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; }; done
cd $OUT && tar czf logs.tgz logs */*.png */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
