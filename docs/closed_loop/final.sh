#!/bin/bash
# call 3: the README's Meta-World commands and config/demo_gpu.py, as written, side by side on one H200
source .gpu/common.sh
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
(python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 > $OUT/gen_mt10.txt 2>&1
 python3 data.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 >> $OUT/gen_mt10.txt 2>&1
 el mt10 data
 timeout 330 python3 train.py config/metaworld.py > /dev/null 2>&1; el mt10 trained
 python3 eval.py --env=metaworld --tasks=mt10 --ckpt=out/metaworld --workers=10 --out_dir=out/eval_mt10 > out/eval_mt10.txt 2>&1; el mt10 evaluated) &
(timeout 400 python3 train.py config/demo_gpu.py > /dev/null 2>&1; el demo_gpu trained
 OMP_NUM_THREADS=4 python3 eval.py --ckpt=out/demo_gpu --episodes=100 --device=cpu --out_dir=out/eval_demo_gpu > out/eval_demo_gpu.txt 2>&1
 OMP_NUM_THREADS=4 python3 eval.py --ckpt=out/demo_gpu --episodes=100 --device=cpu --weights=init --out_dir=out/eval_demo_gpu_init > out/eval_demo_gpu_init.txt 2>&1
 el demo_gpu evaluated) &
wait; el all done
grep -h "kept\|wrote" $OUT/gen_mt10.txt; grep -h "eval iter\|done:" out/metaworld/log.txt out/demo_gpu/log.txt | cut -c1-300
grep -v "it/s\]" out/eval_mt10.txt | tail -n 18; tail -n 1 out/eval_demo_gpu.txt out/eval_demo_gpu_init.txt
tar czf $OUT/runs.tgz out/metaworld/log.txt out/metaworld/losses.csv out/demo_gpu/log.txt out/demo_gpu/losses.csv out/eval_* 2>/dev/null
