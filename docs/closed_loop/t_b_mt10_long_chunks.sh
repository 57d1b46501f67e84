#!/bin/bash
# 2026-12-04 session 7, call 2 (issue 16): do longer action chunks carry the puck tasks? The policy sees the first
# frame of an episode exactly as the demonstrations do, and the n_puck_trace diagnosis found it leaving the
# demonstrated states after a few replans; openpi's pi05 predicts 50 actions. config/metaworld.py (pi05 prompt, 6000
# iterations) with 30-action (A) and 50-action (B) chunks side by side; A executed 10 and 25 actions per chunk, B 25
# and 50; EMA weights, noise seed 0, 10 episodes per task.
source docs/closed_loop/device_setup.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
ev() { # name ckpt replan workers deadline
  timeout $(( $5 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$2 --replan=$3 \
    --workers=$4 --out_dir=$OUT/$1 > $L/eval_$1.txt 2>&1; el "$1: $(tail -n 1 $OUT/$1/tasks.md 2>/dev/null)"; }
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=16 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1
el data; tr '\r' '\n' < $L/gen.txt | grep "wrote" | tail -n 2 | cut -c1-150
for r in A:30 B:50; do
  timeout $(( 400 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --action_horizon=${r#*:} --out_dir=out/mw${r%:*} \
    --eval_interval=3000 --keep_last=0 > $L/train_${r%:*}.txt 2>&1 &
done
wait; el trained
A=$(ls -d out/mwA/ckpt_* | sort -t_ -k2 -n | tail -n 1); B=$(ls -d out/mwB/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "$A $B"
ev A_r10 $A 10 4 585 & ev A_r25 $A 25 4 585 & ev B_r25 $B 25 4 585 & ev B_r50 $B 50 4 585 &
wait
for r in A B; do grep -h "eval iter\|done:" $L/train_$r.txt | cut -c1-220; done
for d in $OUT/*/; do [ -f $d/tasks.md ] && { echo "== $d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; }; done
cd $OUT && tar czf logs.tgz logs */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
