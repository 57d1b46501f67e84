#!/bin/bash
# Session 10 (2026-12-05), issue 16, on a 2-core CPU while no device machine started: push-v3 alone, 50 clean
# demonstrations, the 1.8M-parameter cpu128 model (d2_train_cpu128.py) with the convolutional stem, 2000 iterations
# at micro-batch 32 (as r_push_frozen_code_cpu.sh, where the patch stem solved 2 of 20), one flow draw per sample
# against four (--flow_draws=4), the two trained side by side on one core each; 20 episodes each, raw and EMA weights.
W=${W:-/tmp/x}; mkdir -p $W; export MUJOCO_GL=osmesa OMP_NUM_THREADS=1
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python sim.py metaworld --out=$W/dl --tasks=push-v3 --episodes=50 --size=128 --workers=2 > $W/gen.txt 2>&1
python prepare.py --src=$W/dl --out=$W/d --tokenizer=words --image_size=128 --max_token_len=48 --workers=2 >> $W/gen.txt 2>&1; el data
for k in 1 4; do
  python docs/closed_loop/d2_train_cpu128.py config/metaworld.py --model_name=cpu128 --vision_stem=conv --data_dir=$W/d \
    --out_dir=$W/k$k --compile=False --device=cpu --micro_batch=32 --learning_rate=1e-3 --decay_lr=1e-4 \
    --warmup_iters=100 --max_iters=2000 --lr_decay_iters=2000 --eval_interval=1000 --eval_iters=2 --ckpt_interval=1000 \
    --keep_last=0 --log_interval=100 --flow_draws=$k > $W/train_k$k.txt 2>&1 &
done
wait; el trained
for k in 1 4; do for w in model ema; do
  python eval.py --env=metaworld --tasks=push-v3 --ckpt=$W/k$k/ckpt_2000 --device=cpu --trials=20 --workers=2 --weights=$w \
    --out_dir=$W/eval_k${k}_$w > $W/eval_k${k}_$w.txt 2>&1; el "flow_draws=$k $w: $(grep push $W/eval_k${k}_$w/tasks.md)"
done; done
