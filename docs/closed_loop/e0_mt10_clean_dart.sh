#!/bin/bash
# prepared at the end of session 2026-12-01c for the next one (not yet run): MT10 from clean demonstrations and from
# DART-style noisy ones (sim.py --action_noise=0.3), side by side, each config/metaworld.py (6000 iterations, CUDA
# graphs); the clean one also evaluated on its demonstrations' seeds (memorised or not); the GPU tests of serving first
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
(timeout 150 python3 -m pytest -q test_serve.py test_equivalence.py -k "TestGPU and (serve or pi05_heads)" > $L/gpu_tests.txt 2>&1; el gpu tests; tail -n 3 $L/gpu_tests.txt) &
gen() { python3 sim.py metaworld --out=data_cache/$1_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=8 --action_noise=$2 > $L/gen_$1.txt 2>&1
        python3 prepare.py --src=data_cache/$1_lerobot --out=data_cache/$1 --tokenizer=words --image_size=128 --max_token_len=48 --workers=8 >> $L/gen_$1.txt 2>&1; }
gen mt10 0 & gen mt10dart 0.3 & wait; el data; tail -qn 1 $L/gen_*.txt | cut -c1-200
for r in mt10 mt10dart; do (timeout $(( 440 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --data_dir=data_cache/$r --out_dir=out/$r --eval_interval=3000 --keep_last=0 > $L/train_$r.txt 2>&1; cp out/$r/log.txt $L/log_$r.txt; el $r trained) & done; wait
ev() { C=$(ls -d out/$1/ckpt_* | sort -t_ -k2 -n | tail -n 1); timeout $(( 575 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$C --workers=5 --seed=$2 --out_dir=$OUT/$1_seed$2 > $L/eval_$1_seed$2.txt 2>&1; el evaluated $C seed $2; }
ev mt10 -1 & ev mt10 0 & ev mt10dart -1 & wait
grep -h "eval iter 6000\|done:" $L/log_*.txt | cut -c1-300
for d in $OUT/mt10*_seed*; do echo $d; cat $d/tasks.md; done
cd $OUT && tar czf logs.tgz logs */*.png 2>/dev/null; rm -rf logs */*.png
