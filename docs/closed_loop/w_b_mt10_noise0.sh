#!/bin/bash
# 2026-12-04 session 9, call 2 (issue 16): does sampling from zero noise (--noise_scale=0: the flow integrated from
# its mean, deterministically) lift MT10 with the conv stem? Call 1's u_cnn_bc.py (ViT + conv stem + flow-matching
# head on push-v3): 16 of 20 from zero noise where the same head sampled from N(0, 1) solved 8 (session 8). With the
# patch stem, noise scale 0 gave 64% vs 60% (s_results.txt). config/metaworld.py as it is (6000 iterations) at train
# seeds 42 (A; session 8: 78%) and 1 (B; 72%), each checkpoint evaluated with noise scale 1 and 0, 4 workers each.
source docs/closed_loop/device_setup.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
ev() { # name ckpt workers deadline noise_scale
  timeout $(( $4 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$2 \
    --workers=$3 --noise_scale=$5 --out_dir=$OUT/$1 > $L/eval_$1.txt 2>&1; el "$1: $(tail -n 1 $OUT/$1/tasks.md 2>/dev/null)"; }
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=16 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1
el data; tr '\r' '\n' < $L/gen.txt | grep "kept of\|wrote" | tail -n 3 | cut -c1-150
for r in A:42 B:1; do
  timeout $(( 440 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --seed=${r#*:} --max_skipped_steps=10 \
    --out_dir=out/mw${r%:*} --eval_interval=3000 --keep_last=0 > $L/train_${r%:*}.txt 2>&1 &
done
wait
for r in A B; do
  C=$(ls -d out/mw$r/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "$r: $C"
  ev ${r}_noise1 $C 4 592 1 &
  ev ${r}_noise0 $C 4 592 0 &
done
wait
for r in A B; do grep -h "parameters\|eval iter\|done:\|non-finite\|skipped" $L/train_$r.txt | cut -c1-220; done
for d in $OUT/*/; do [ -f $d/tasks.md ] && { echo "== $d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; }; done
cd $OUT && tar czf logs.tgz logs */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
