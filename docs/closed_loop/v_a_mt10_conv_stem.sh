#!/bin/bash
# 2026-12-04 session 8, call 1 (issue 16): does a convolutional stem on the from-scratch vision tower lift MT10's
# puck tasks? u_cnn_bc.py: a plain CNN solves push 19/20 where the 23M pi05-shaped model solves 0/20 trained alone.
# A: config/metaworld.py with --vision_stem=conv; B: the same without the state in the prompt (--prompt_format=pi0).
# Beside them on the GPU, u_cnn_bc.py on push-v3 (64 px, 3000 steps, 20 episodes): the CNN, the pi05 ViT tower
# (patch stem), the ViT with the conv stem, and that with a flow-matching head, to say which part loses the puck.
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
timeout $(( 420 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --vision_stem=conv --out_dir=out/mwA \
  --eval_interval=3000 --keep_last=0 > $L/train_A.txt 2>&1 &
PA=$!
timeout $(( 420 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --vision_stem=conv --prompt_format=pi0 \
  --out_dir=out/mwB --eval_interval=3000 --keep_last=0 > $L/train_B.txt 2>&1 &
PB=$!
for v in "" "vit" "vit conv" "vit conv fm"; do
  n=u_push_$(echo cnn $v | tr ' ' _)
  timeout 400 python3 docs/closed_loop/u_cnn_bc.py push-v3 64 3000 20 $v > $L/$n.txt 2>&1 &
done
wait $PA; el "A trained"
A=$(ls -d out/mwA/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "A: $A"
ev A $A 8 585 &
wait $PB; el "B trained"
B=$(ls -d out/mwB/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "B: $B"
ev B $B 8 585 &
wait
for r in A B; do grep -h "parameters\|eval iter\|done:" $L/train_$r.txt | cut -c1-220; done
tail -n 2 $L/u_push_*.txt
for d in $OUT/*/; do [ -f $d/tasks.md ] && { echo "== $d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; }; done
cd $OUT && tar czf logs.tgz logs */*.png */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
