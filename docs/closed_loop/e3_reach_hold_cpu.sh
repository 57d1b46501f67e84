#!/bin/bash
# session 2026-12-01e (CPU, torch 2.13.0+cpu, MUJOCO_GL=osmesa): reach-v3 alone after the first-frame goal fix, the
# d2 recipe (the 1.8M 'cpu128' model, 50 demonstrations, 2000 iterations of 32), two datasets side by side on one core
# each: demonstrations ended at the first success (as before) and demonstrations that go on 20 steps past it
# (sim.py --hold_steps=20); each evaluated on 30 evaluation seeds with the EMA and the raw weights, then traced.
# Outputs: e3_*. (The runs used the fix's first form, an mj_forward after reset; for reach-v3 its demonstrations
# are the same as those of the fix as it is now, which leaves the physics alone.)
cd "$(dirname "$0")/../.."  # the repository root
export MUJOCO_GL=osmesa OMP_NUM_THREADS=1
mkdir -p /tmp/e3
run() {  # name, hold steps
  python sim.py metaworld --out=/tmp/e3/$1_lerobot --tasks=reach-v3 --episodes=50 --size=128 --workers=1 --hold_steps=$2
  python prepare.py --src=/tmp/e3/$1_lerobot --out=/tmp/e3/$1 --tokenizer=words --image_size=128 --max_token_len=48 --workers=1
  python docs/closed_loop/d2_train_cpu128.py config/metaworld.py --model_name=cpu128 --data_dir=/tmp/e3/$1 \
    --out_dir=/tmp/e3/out_$1 --compile=False --device=cpu --micro_batch=32 --learning_rate=1e-3 --decay_lr=1e-4 \
    --warmup_iters=100 --max_iters=2000 --lr_decay_iters=2000 --eval_interval=500 --eval_iters=2 --ckpt_interval=1000 \
    --log_interval=100
  python eval.py --env=metaworld --tasks=reach-v3 --ckpt=/tmp/e3/out_$1 --device=cpu --trials=30 --out_dir=/tmp/e3/eval_$1
}
run reach 0 > /tmp/e3/reach.txt 2>&1 &
run reach_hold20 20 > /tmp/e3/reach_hold20.txt 2>&1 &
wait
for r in reach reach_hold20; do  # the raw weights, then where the EMA policy goes (run after the above)
  python eval.py --env=metaworld --tasks=reach-v3 --ckpt=/tmp/e3/out_$r --device=cpu --trials=30 --weights=model \
    --out_dir=/tmp/e3/eval_${r}_model > /tmp/e3/eval_${r}_model.txt 2>&1 &
done; wait
for r in reach reach_hold20; do python docs/closed_loop/e3_reach_trace.py /tmp/e3/out_$r 10000 6 > /tmp/e3/trace_$r.txt 2>&1 & done; wait
