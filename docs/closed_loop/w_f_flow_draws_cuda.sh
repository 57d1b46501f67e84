#!/bin/bash
# Not needed any more: w_d (2026-12-05) ran --flow_draws=4 on CUDA with reduce-overhead graphs, 32.0 ms per iteration beside a second run (one draw: 30-31 ms)
# Session 10 (2026-12-05), issue 16, not run yet: a short first run of train.py --flow_draws=4 on CUDA (compiled with
# CUDA graphs, config/metaworld.py's compile_mode), then the same run with one draw, one after the other, each alone
# on the GPU, on MT10 x 5 demonstrations: does the path compile and train there, and what does an iteration cost?
# K_S: seconds each run may take (default 100).
EPISODES=5 source docs/closed_loop/mt10_call.sh
for k in 4 1; do
  timeout ${K_S:-100} python3 train.py config/metaworld.py --flow_draws=$k --max_iters=600 --warmup_iters=100 \
    --lr_decay_iters=600 --eval_interval=600 --ckpt_interval=-1 --out_dir=out/k$k > $L/train_k$k.txt 2>&1
  el "flow_draws=$k rc $?"; grep -h "parameters\|^iter [1-6]00/\|eval iter\|done:\|Error" $L/train_k$k.txt | cut -c1-200
done
