#!/bin/bash
# Session 10 (2026-12-05), issue 16, not run yet: a short first run of train.py --flow_draws=4 on CUDA (compiled with
# CUDA graphs, config/metaworld.py's compile_mode), then the same run with one draw, one after the other, each alone
# on the GPU, on MT10 x 5 demonstrations: does the path compile and train there, and what does an iteration cost?
# K_S: seconds each run may take (default 100).
source docs/closed_loop/device_setup.sh
L=$OUT/logs; mkdir -p $L; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=5 --size=128 --workers=16 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1
el data
for k in 4 1; do
  timeout ${K_S:-100} python3 train.py config/metaworld.py --flow_draws=$k --max_iters=600 --warmup_iters=100 \
    --lr_decay_iters=600 --eval_interval=600 --ckpt_interval=-1 --out_dir=out/k$k > $L/train_k$k.txt 2>&1
  el "flow_draws=$k rc $?"; grep -h "parameters\|^iter [1-6]00/\|eval iter\|done:\|Error" $L/train_k$k.txt | cut -c1-200
done
