#!/bin/bash
# Prepared 2026-12-04, session 9, as call 3 (issue 16; no device machine was lent for it: not run): calls 1-2 point at generalisation, not optimisation (9000 iterations 66%,
# the default at seeds 42 / 1 73% / 73%): does AdamW weight decay regularise the from-scratch model? openpi's
# weight_decay is 1e-10 (none); here --weight_decay=0.1 (decoupled, every parameter) at train seeds 42 (A) and 1 (B),
# config/metaworld.py otherwise as it is (6000 iterations), EMA weights, noise scale 1, 8 workers each. Deadlines
# are tight: this call had ~450 s of device time left.
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
for r in A:42 B:1; do
  timeout $(( 320 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --seed=${r#*:} --weight_decay=0.1 \
    --max_skipped_steps=10 --out_dir=out/mw${r%:*} --eval_interval=6000 --keep_last=0 > $L/train_${r%:*}.txt 2>&1 &
done
wait
for r in A B; do
  C=$(ls -d out/mw$r/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "$r: $C"
  ev $r $C 8 450 &
done
wait
for r in A B; do grep -h "parameters\|eval iter\|done:\|non-finite\|skipped" $L/train_$r.txt | cut -c1-220; done
for d in $OUT/*/; do [ -f $d/tasks.md ] && { echo "== $d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; }; done
cd $OUT && tar czf logs.tgz logs */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
