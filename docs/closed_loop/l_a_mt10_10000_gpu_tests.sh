# RAN 2026-12-02 (session 4, call 1, one H200, torch 2.11.0+cu130), as written (.gpu/promptswap.py is l_promptswap.py here); results in l_results.txt
#!/bin/bash
# 2026-12-02 session 4, call 1: (a) the GPU tests after the grouped default (the perturbed replay check never ran on a
# GPU); (b) does MT10's small model ground its instruction? reach, push and pick-place share one scene and only the
# instruction (and the goal ball's colour) tells them apart; i0's strip shows the same reach-like motion for all three.
# config/metaworld.py on 50 demonstrations per task with a schedule of 10000 instead of 6000 iterations (the demo's
# three-object task needed ~9000 iterations to ground its instructions), checkpoints 5000 and 10000 evaluated on
# MT10 (10 episodes per task), and the prompt-swap table (promptswap.py) for both.
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
timeout 200 python3 -m pytest -q test_serve.py test_equivalence.py -k "TestGPU and not max_autotune" > $L/gpu_tests.txt 2>&1 &
TP=$!
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=16 > $L/gen.txt 2>&1; el written
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1
el data; tr '\r' '\n' < $L/gen.txt | grep "kept\|wrote" | cut -c1-160
wait $TP; el gpu tests; tail -n 3 $L/gpu_tests.txt; grep -B2 -A8 "Error\|assert" $L/gpu_tests.txt | head -n 30
timeout $(( 440 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --out_dir=out/mt10 --max_iters=10000 --lr_decay_iters=10000 --eval_interval=5000 --ckpt_interval=5000 --keep_last=0 > $L/train.txt 2>&1 &
TT=$!
ev() { timeout $(( 585 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=out/mt10/ckpt_$1 --workers=$2 --out_dir=$OUT/mt10_$1 > $L/eval_$1.txt 2>&1; el "ckpt $1: $(tail -n 1 $OUT/mt10_$1/tasks.md)"; }
while [ ! -f out/mt10/ckpt_5000/manifest.json ] && kill -0 $TT 2>/dev/null; do sleep 2; done
el ckpt 5000; (ev 5000 4; python3 .gpu/promptswap.py out/mt10/ckpt_5000 data_cache/mt10 > $L/swap_5000.txt 2>&1) &
wait $TT; el trained; cp out/mt10/log.txt $L/log.txt; grep -h "eval iter\|done:" $L/log.txt | cut -c1-250
[ -d out/mt10/ckpt_10000 ] && (ev 10000 10; python3 .gpu/promptswap.py out/mt10/ckpt_10000 data_cache/mt10 > $L/swap_10000.txt 2>&1) &
wait; cat $L/swap_*.txt
for d in $OUT/mt10_*/; do echo "$d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; done
cd $OUT && tar czf logs.tgz logs */*.png */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
