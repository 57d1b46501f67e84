#!/bin/bash
# RAN 2026-12-02 session 5 on a 2-core CPU as written (trees /tmp/r1 = the repo + r_frozen_state_code.patch, /tmp/r1o
# = the same + o_oracle_state.patch); ORD_TOP=4 ORD_FREEZE=1 select the fixed code of at most 4 periods
# $1 = tree (/tmp/r1 real state | /tmp/r1o oracle state); push-v3 x50, cpu128, 2000 iterations, frozen smooth bin code
cd $1; export MUJOCO_GL=osmesa OMP_NUM_THREADS=1 ORD_TOP=4 ORD_FREEZE=1
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python sim.py metaworld --out=$1/dl --tasks=push-v3 --episodes=50 --size=128 --workers=1 > $1/gen.txt 2>&1
python prepare.py --src=$1/dl --out=$1/d --tokenizer=words --image_size=128 --max_token_len=48 --workers=1 >> $1/gen.txt 2>&1; el data
python docs/closed_loop/d2_train_cpu128.py config/metaworld.py --model_name=cpu128 --data_dir=$1/d \
    --out_dir=$1/out --compile=False --device=cpu --micro_batch=32 --learning_rate=1e-3 --decay_lr=1e-4 \
    --warmup_iters=100 --max_iters=2000 --lr_decay_iters=2000 --eval_interval=1000 --eval_iters=2 --ckpt_interval=1000 \
    --keep_last=0 --log_interval=100 --ordinal_state=True > $1/train.txt 2>&1; el trained
for w in model ema; do
python eval.py --env=metaworld --tasks=push-v3 --ckpt=$1/out/ckpt_2000 --device=cpu --trials=20 --workers=1 --weights=$w --out_dir=$1/eval_$w > $1/eval_$w.txt 2>&1; el "eval $w: $(tail -n 1 $1/eval_$w/tasks.md)"
done
