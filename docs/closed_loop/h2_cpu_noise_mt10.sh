# RAN 2026-12-02 (session 2, call 3, one H200, torch 2.11.0+cu130) with serve.py drawing the seed-0 noise once on the CPU for every request (an intermediate state of serve.py, never committed; 6cd3e2a draws it per observation): results in h2_results.txt
#!/bin/bash
# 2026-12-02 session 2, call 3: serve.py now draws the sampling noise on the CPU (h1: every CUDA-served variant of the
# same reach policy 3% vs 57% served on the CPU; the one thing left that differs is CUDA's generator for noise seed 0).
# reach: e4's CPU checkpoint served on CUDA with seed 0 (now the CPU's noise) and fresh noise per request.
# MT10 x50 config/metaworld.py 6000 its (as f1, 57%), evaluated with seed 0 and fresh noise.
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
ev() { # name ckpt tasks noise_seed workers deadline
  timeout $(( $6 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=$3 --ckpt=$2 --trials=$7 --weights=${8:-auto} \
    --noise_seed=$4 --workers=$5 --out_dir=$OUT/$1 > $L/eval_$1.txt 2>&1; el "$1: $(tail -n 1 $OUT/$1/tasks.md 2>/dev/null)"; }
C=.gpu/e4ckpt/ckpt_2000
ev reach_seed0 $C reach-v3 0 2 300 30 model & ev reach_fresh $C reach-v3 -1 2 300 30 model &
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=12 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=12 >> $L/gen.txt 2>&1
el data
timeout $(( 370 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --eval_interval=3000 --keep_last=0 > $L/train.txt 2>&1; el trained
cp out/metaworld/log.txt $L/log.txt; grep -h "done:" $L/log.txt | cut -c1-250
M=$(ls -d out/metaworld/ckpt_* | sort -t_ -k2 -n | tail -n 1); echo $M
ev mt10_seed0 $M mt10 0 8 545 10 & ev mt10_fresh $M mt10 -1 8 545 10 & wait
for d in $OUT/*/; do echo "$d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; done
cd $OUT && tar czf logs.tgz logs */*.png */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
