#!/bin/bash
# session 2026-12-01e, call 2: MT10 after the first-frame goal fix (sim.MetaWorld.reset recomputes the scene, so frame 0
# draws the goal where it is, not where the previous reset put it). A: the fix alone; B: the fix and MuJoCo's default
# render quality (shadow map 4096, 4x MSAA: a floating goal casts a shadow), patched into a copy of the tree. Both
# config/metaworld.py (6000 iterations) side by side, evaluated on the evaluation seeds; the GPU serving tests beside.
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
R=$PWD; rm -rf /tmp/B; mkdir /tmp/B; cp -r *.py config assets /tmp/B/ 2>/dev/null
sed -i 's/shadowsize = 0/shadowsize = 4096/; s/offsamples = 0/offsamples = 4/' /tmp/B/sim.py; grep -n "shadowsize\|offsamples" /tmp/B/sim.py
(timeout 400 python3 -m pytest -v test_serve.py test_equivalence.py -k "TestGPU and (serve or pi05_heads or autotune)" > $L/gpu_tests.txt 2>&1; el gpu tests; grep -h "PASS\|FAIL\|ERROR\|passed\|failed" $L/gpu_tests.txt | tail -n 8) &
gen() { (cd $2 && python3 sim.py metaworld --out=$R/data_cache/$1_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=7 > $L/gen_$1.txt 2>&1
        python3 prepare.py --src=$R/data_cache/$1_lerobot --out=$R/data_cache/$1 --tokenizer=words --image_size=128 --max_token_len=48 --workers=7 >> $L/gen_$1.txt 2>&1); }
gen A $R & gen B /tmp/B & wait; el data; tail -qn 1 $L/gen_*.txt | cut -c1-200; grep -h "it/s\|episode/s\|s/it" $L/gen_*.txt | tail -n 2 | cut -c1-200
for r in A B; do (timeout $(( 420 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --data_dir=data_cache/$r --out_dir=out/$r --eval_interval=3000 --keep_last=0 > $L/train_$r.txt 2>&1; cp out/$r/log.txt $L/log_$r.txt; el $r trained) & done; wait
ev() { C=$(ls -d $R/out/$1/ckpt_* | sort -t_ -k2 -n | tail -n 1); (cd $2 && timeout $(( 570 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$C --workers=7 --out_dir=$OUT/$1 > $L/eval_$1.txt 2>&1); el evaluated $1 $C; }
ev A $R & ev B /tmp/B & wait
grep -h "eval iter 6000\|done:" $L/log_*.txt | cut -c1-300
for d in $OUT/A $OUT/B; do echo $d; cat $d/tasks.md; done
cd $OUT && tar czf logs.tgz logs */*.png 2>/dev/null; rm -rf logs */*.png
