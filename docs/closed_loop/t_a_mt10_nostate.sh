#!/bin/bash
# 2026-12-04 session 7, call 1 (issue 16): is the state in the prompt the shortcut that keeps MT10's puck tasks at 0%?
# q_state_mlp.py: an MLP given the puck's and goal's exact positions but the hand's four values as one-hot bins solves
# push 2 of 20 (all exact: 20), and the MT10 run with the oracle state in the prompt solved no push either. So train
# without the state in the prompt (--prompt_format=pi0: the cameras alone say where the hand is), A on the clean
# demonstrations, B on DART ones (--action_noise=0.3, recoveries the clean data never shows); config/metaworld.py
# otherwise, 6000 iterations each side by side, EMA weights, noise seed 0, 10 episodes per task.
source docs/closed_loop/device_setup.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
ev() { # name ckpt workers deadline
  timeout $(( $4 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$2 \
    --workers=$3 --out_dir=$OUT/$1 > $L/eval_$1.txt 2>&1; el "$1: $(tail -n 1 $OUT/$1/tasks.md 2>/dev/null)"; }
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=16 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1
el data; tr '\r' '\n' < $L/gen.txt | grep "kept of\|wrote" | tail -n 3 | cut -c1-150
timeout $(( 360 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --prompt_format=pi0 --out_dir=out/mwA \
  --eval_interval=3000 --keep_last=0 > $L/train_A.txt 2>&1 &
PA=$!
python3 sim.py metaworld --out=data_cache/mt10d_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=14 --action_noise=0.3 > $L/gen_d.txt 2>&1
python3 prepare.py --src=data_cache/mt10d_lerobot --out=data_cache/mt10d --tokenizer=words --image_size=128 --max_token_len=48 --workers=14 >> $L/gen_d.txt 2>&1
el "DART data"; tr '\r' '\n' < $L/gen_d.txt | grep "kept of\|wrote" | tail -n 3 | cut -c1-150
timeout $(( 450 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --prompt_format=pi0 --out_dir=out/mwB \
  --data_dir=data_cache/mt10d --eval_interval=3000 --keep_last=0 > $L/train_B.txt 2>&1 &
PB=$!
wait $PA; el "A trained"
A=$(ls -d out/mwA/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "A: $A"
ev A $A 8 585 &
wait $PB; el "B trained"
B=$(ls -d out/mwB/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "B: $B"
ev B $B 8 585 &
wait
for r in A B; do grep -h "eval iter\|done:" $L/train_$r.txt | cut -c1-220; done
for d in $OUT/*/; do [ -f $d/tasks.md ] && { echo "== $d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; }; done
cd $OUT && tar czf logs.tgz logs */*.png */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
