#!/bin/bash
# 2026-12-04 session 8, call 2 (issue 16): v_a's conv stem reached MT10 78% (push 60, pick-place 40, reach 10).
# A: the same with 8000 iterations (its validation loss was still falling at 6000). B: a wider stem (channels doubling
# up to vit_width instead of vit_width/2, then a 1x1 vit_width -> vit_width), 6000 iterations, from a copy of the
# tree with that change (v_b_wide_stem.patch). EMA weights, noise seed 0, 10 episodes per task.
source docs/closed_loop/device_setup.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
ev() { # name ckpt workers deadline
  timeout $(( $4 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$2 \
    --workers=$3 --out_dir=$OUT/$1 > $L/eval_$1.txt 2>&1; el "$1: $(tail -n 1 $OUT/$1/tasks.md 2>/dev/null)"; }
W=/tmp/wide; mkdir -p $W && tar cf - --exclude=./data_cache --exclude=./.whl --exclude=./.gl --exclude=./out --exclude=./.venv . | tar xf - -C $W
(cd $W && patch -p1 < docs/closed_loop/v_b_wide_stem.patch) > $L/patch.txt 2>&1
grep -n "n - 1 - i\|Conv2d(cfg.vit_width, cfg.vit_width, 1)" $W/model.py || { echo "patch did not apply"; cat $L/patch.txt; exit 1; }
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=16 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1
el data; tr '\r' '\n' < $L/gen.txt | grep "kept of\|wrote" | tail -n 3 | cut -c1-150
ln -s $PWD/data_cache $W/data_cache
timeout $(( 480 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --vision_stem=conv --out_dir=out/mwA \
  --max_iters=8000 --lr_decay_iters=8000 --eval_interval=4000 --keep_last=0 > $L/train_A.txt 2>&1 &
PA=$!
(cd $W && timeout $(( 420 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --vision_stem=conv --out_dir=out/mwB \
  --eval_interval=3000 --keep_last=0) > $L/train_B.txt 2>&1 &
PB=$!
wait $PB; el "B trained"
B=$(ls -d $W/out/mwB/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "B: $B"
(cd $W && ev B $B 6 585) &
wait $PA; el "A trained"
A=$(ls -d out/mwA/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "A: $A"
ev A $A 10 585 &
wait
for r in A B; do grep -h "parameters\|eval iter\|done:" $L/train_$r.txt | cut -c1-220; done
for d in $OUT/*/; do [ -f $d/tasks.md ] && { echo "== $d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; }; done
cd $OUT && tar czf logs.tgz logs */*.png */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
