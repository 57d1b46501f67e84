#!/bin/bash
# RAN 2026-12-02 (session 4) on a 2-core CPU up to checkpoint 2000 (its training shared the CPU with CI and the n1
# traces, ~0.5 s per iteration); stopped there for the session's time; then, by hand, n1's and this run's checkpoint 2000
# (raw weights: the EMA lags at 2000) evaluated side by side, one process each:
#   python eval.py --env=metaworld --tasks=push-v3,pick-place-v3 --ckpt=/tmp/n{1,2}/out/ckpt_2000 --device=cpu --trials=20 --workers=1 --weights=model
# results in n_results.txt
# session 2026-12-02 (4), 2-core CPU, torch 2.13.0+cpu, MUJOCO_GL=osmesa: n1 (MT3 alone, the cpu128 model, 4000
# iterations) with DART demonstrations (--action_noise=0.3: the robot runs the expert action plus noise, the dataset
# records the expert action at every visited state, so it shows corrections back to the puck); push and pick-place
# evaluated, 20 episodes each, EMA weights.
cd /work/main
export MUJOCO_GL=osmesa
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python sim.py metaworld --out=/tmp/n2/mt3_lerobot --tasks=reach-v3,push-v3,pick-place-v3 --episodes=50 --size=128 --workers=2 --action_noise=0.3 > /tmp/n2/gen.txt 2>&1
python prepare.py --src=/tmp/n2/mt3_lerobot --out=/tmp/n2/mt3 --tokenizer=words --image_size=128 --max_token_len=48 --workers=2 >> /tmp/n2/gen.txt 2>&1; el data
python docs/closed_loop/d2_train_cpu128.py config/metaworld.py --model_name=cpu128 --data_dir=/tmp/n2/mt3 \
    --out_dir=/tmp/n2/out --compile=False --device=cpu --micro_batch=32 --learning_rate=1e-3 --decay_lr=1e-4 \
    --warmup_iters=100 --max_iters=4000 --lr_decay_iters=4000 --eval_interval=1000 --eval_iters=2 --ckpt_interval=2000 \
    --keep_last=0 --log_interval=100 > /tmp/n2/train.txt 2>&1; el trained
for w in ema; do
  python eval.py --env=metaworld --tasks=push-v3,pick-place-v3 --ckpt=/tmp/n2/out/ckpt_4000 --device=cpu --trials=20 --workers=2 --weights=$w --out_dir=/tmp/n2/eval_$w > /tmp/n2/eval_$w.txt 2>&1; el "eval $w: $(tail -n 1 /tmp/n2/eval_$w/tasks.md)"
done
for t in push-v3 pick-place-v3; do python docs/closed_loop/n_puck_trace.py /tmp/n2/out/ckpt_4000 $t 10000 10 > /tmp/n2/trace_$t.txt 2>&1; done; el trace
