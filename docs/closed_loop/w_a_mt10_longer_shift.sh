#!/bin/bash
# 2026-12-04 session 9, call 1 (issue 16): config/metaworld.py (conv stem) with A: a 9000-iteration schedule
# (--max_iters=9000 --lr_decay_iters=9000) and --max_skipped_steps=10 (session 8's 8000-iteration run stopped on a
# NaN gradient norm at 3726), B: the 6000-iteration schedule with DrQ's random shift (--augment=shift), untried since
# the first-frame goal fix. Both train seed 42 (the default; the same run without shift: 78%). Beside them on the GPU,
# u_cnn_bc.py on push-v3 with the ViT tower + conv stem and flow-matching head variants (session 8 on the GPU: regression
# 15 of 20, the plain flow-matching head 8).
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
timeout $(( 480 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --max_iters=9000 --lr_decay_iters=9000 \
  --max_skipped_steps=10 --out_dir=out/mwA --eval_interval=3000 --keep_last=0 > $L/train_A.txt 2>&1 &
PA=$!
timeout $(( 420 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --augment=shift \
  --out_dir=out/mwB --eval_interval=3000 --keep_last=0 > $L/train_B.txt 2>&1 &
PB=$!
for v in "fm beta" "fm skip" "fm det" "fm beta skip"; do
  n=u_push_vit_conv_$(echo reg $v | tr ' ' _)
  timeout 330 python3 docs/closed_loop/u_cnn_bc.py push-v3 64 3000 20 vit conv $v > $L/$n.txt 2>&1 &
done
wait $PB; el "B trained"
B=$(ls -d out/mwB/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "B: $B"
ev B $B 6 590 &
wait $PA; el "A trained"
A=$(ls -d out/mwA/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "A: $A"
ev A $A 10 590 &
wait
for r in A B; do grep -h "parameters\|eval iter\|done:\|non-finite\|skipped" $L/train_$r.txt | cut -c1-220; done
tail -qn 1 $L/u_push_*.txt
for d in $OUT/*/; do [ -f $d/tasks.md ] && { echo "== $d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; }; done
cd $OUT && tar czf logs.tgz logs */*.png */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
