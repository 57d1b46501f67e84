#!/bin/bash
# 2026-12-04 session 7, call 4 (issue 16), the device budget's last ~5 minutes: does the 23M model learn push-v3 and
# pick-place-v3 when each is its only task? (untested on the GPU: on MT10 they stay near 0%). 50 demonstrations of
# one task, config/metaworld.py's model and recipe with a 3000-iteration schedule (~125 passes over its ~3000 frames),
# the two side by side, EMA weights, noise seed 0, 20 episodes each.
source docs/closed_loop/device_setup.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
for t in push pick-place; do
  (python3 sim.py metaworld --out=data_cache/${t}_lerobot --tasks=$t-v3 --episodes=50 --size=128 --workers=8 > $L/gen_$t.txt 2>&1
   python3 prepare.py --src=data_cache/${t}_lerobot --out=data_cache/$t --tokenizer=words --image_size=128 --max_token_len=48 --workers=8 >> $L/gen_$t.txt 2>&1) &
done
wait; el data
for t in push pick-place; do
  timeout $(( 170 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --data_dir=data_cache/$t --out_dir=out/$t \
    --max_iters=3000 --lr_decay_iters=3000 --eval_interval=3000 --keep_last=0 > $L/train_$t.txt 2>&1 &
done
wait; el trained
for t in push pick-place; do
  C=$(ls -d out/$t/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "$t: $C"
  timeout $(( 245 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=$t-v3 --trials=20 --ckpt=$C --workers=8 \
    --out_dir=$OUT/$t > $L/eval_$t.txt 2>&1 &
done
wait; el evaluated
for t in push pick-place; do grep -h "eval iter\|done:" $L/train_$t.txt | cut -c1-200; tail -n 1 $L/eval_$t.txt; done
cd $OUT && tar czf logs.tgz logs */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
