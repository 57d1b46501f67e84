#!/bin/bash
# RAN 2026-12-02 (session 4) as written on a 2-core CPU; results in n_results.txt. Then, by hand, with OMP_NUM_THREADS=1:
#   python docs/closed_loop/n_puck_trace.py /tmp/n1/out/ckpt_4000 push-v3 10000 10  (and pick-place-v3) -> n1_trace_*.txt
#   python docs/closed_loop/n_puck_trace.py /tmp/n1/out/ckpt_4000 push-v3 10000 5 auto expert  (and pick-place-v3) -> n1_trace_*_expert_driven.txt
# session 2026-12-02 (4), 2-core CPU, torch 2.13.0+cpu, MUJOCO_GL=osmesa: are the puck tasks learnable by a small
# pi05-shaped model at all when trained on them alone? reach, push, pick-place x50 (MT3), the cpu128 model of d2-e5,
# the e4 recipe (micro-batch 32, lr 1e-3 -> 1e-4, 100 warm-up) for 4000 iterations, raw and EMA weights, 20 episodes
# per task at the evaluation seeds.
cd /work/main
export MUJOCO_GL=osmesa
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python sim.py metaworld --out=/tmp/n1/mt3_lerobot --tasks=reach-v3,push-v3,pick-place-v3 --episodes=50 --size=128 --workers=2 > /tmp/n1/gen.txt 2>&1
python prepare.py --src=/tmp/n1/mt3_lerobot --out=/tmp/n1/mt3 --tokenizer=words --image_size=128 --max_token_len=48 --workers=2 >> /tmp/n1/gen.txt 2>&1; el data
python docs/closed_loop/d2_train_cpu128.py config/metaworld.py --model_name=cpu128 --data_dir=/tmp/n1/mt3 \
    --out_dir=/tmp/n1/out --compile=False --device=cpu --micro_batch=32 --learning_rate=1e-3 --decay_lr=1e-4 \
    --warmup_iters=100 --max_iters=4000 --lr_decay_iters=4000 --eval_interval=1000 --eval_iters=2 --ckpt_interval=2000 \
    --keep_last=0 --log_interval=100 > /tmp/n1/train.txt 2>&1; el trained
for w in model ema; do
  python eval.py --env=metaworld --tasks=reach-v3,push-v3,pick-place-v3 --ckpt=/tmp/n1/out/ckpt_4000 --device=cpu --trials=20 --workers=2 --weights=$w --out_dir=/tmp/n1/eval_$w > /tmp/n1/eval_$w.txt 2>&1; el "eval $w: $(tail -n 1 /tmp/n1/eval_$w/tasks.md)"
done
python docs/closed_loop/l_promptswap.py /tmp/n1/out/ckpt_4000 /tmp/n1/mt3 cpu > /tmp/n1/swap.txt 2>&1; el swap
