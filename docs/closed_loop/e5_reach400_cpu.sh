#!/bin/bash
# session 2026-12-01e (CPU, torch 2.13.0+cpu, MUJOCO_GL=osmesa), after e4: the e3/e4 recipe on 400 clean
# demonstrations of reach-v3 (50 gave 33%, 200 gave 58% over 60 episodes), raw weights, the same 60 evaluation seeds.
cd "$(dirname "$0")/../.."  # the repository root
export MUJOCO_GL=osmesa
mkdir -p /tmp/e3
python sim.py metaworld --out=/tmp/e3/reach400_lerobot --tasks=reach-v3 --episodes=400 --size=128 --workers=1
python prepare.py --src=/tmp/e3/reach400_lerobot --out=/tmp/e3/reach400 --tokenizer=words --image_size=128 --max_token_len=48 --workers=2
python docs/closed_loop/d2_train_cpu128.py config/metaworld.py --model_name=cpu128 --data_dir=/tmp/e3/reach400 \
  --out_dir=/tmp/e3/out_reach400 --compile=False --device=cpu --micro_batch=32 --learning_rate=1e-3 --decay_lr=1e-4 \
  --warmup_iters=100 --max_iters=2000 --lr_decay_iters=2000 --eval_interval=500 --eval_iters=2 --ckpt_interval=1000 \
  --log_interval=100
for s in 10000 10030; do
  OMP_NUM_THREADS=1 python eval.py --env=metaworld --tasks=reach-v3 --ckpt=/tmp/e3/out_reach400 --device=cpu --trials=30 \
    --seed=$s --weights=model --out_dir=/tmp/e3/eval_reach400_model_$s > /tmp/e3/eval_reach400_model_$s.txt 2>&1 &
done; wait
