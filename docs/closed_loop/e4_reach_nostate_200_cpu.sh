#!/bin/bash
# session 2026-12-01e (CPU, torch 2.13.0+cpu, MUJOCO_GL=osmesa), after e3: reach-v3 alone, the d2/e3 recipe, two runs
# side by side on one core each: (1) e3's 50 clean demonstrations with the prompt that carries no state
# (--prompt_format=pi0, openpi's pi05_libero prompt: the images alone must say where the hand and the goal are);
# (2) 200 clean demonstrations with the usual prompt. Raw weights evaluated (the EMA lags at 2000 iterations), 30
# evaluation seeds each; then 30 more seeds for (2) and for e3's 50-demonstration run; then traced (e3_reach_trace.py,
# 6 seeds, EMA weights). Run after e3_reach_hold_cpu.sh: it needs /tmp/e3/reach and /tmp/e3/out_reach.
# Outputs, copied by hand into docs/closed_loop: out_*/log.txt -> e4_*_train_log.txt; eval_*_model*/episodes.csv ->
# e4_*_episodes.txt (and e3_reach_end_episodes.txt for e3's run), each block under a comment naming its seeds;
# trace_*.txt -> e4_reach_trace.txt.
cd "$(dirname "$0")/../.."  # the repository root
export MUJOCO_GL=osmesa OMP_NUM_THREADS=1
[ -d /tmp/e3/reach ] && [ -d /tmp/e3/out_reach ] || { echo "run e3_reach_hold_cpu.sh first"; exit 1; }
train() {  # data, out, extra train.py arguments
  python docs/closed_loop/d2_train_cpu128.py config/metaworld.py --model_name=cpu128 --data_dir=/tmp/e3/$1 \
    --out_dir=/tmp/e3/out_$2 --compile=False --device=cpu --micro_batch=32 --learning_rate=1e-3 --decay_lr=1e-4 \
    --warmup_iters=100 --max_iters=2000 --lr_decay_iters=2000 --eval_interval=500 --eval_iters=2 --ckpt_interval=1000 \
    --log_interval=100 $3
  python eval.py --env=metaworld --tasks=reach-v3 --ckpt=/tmp/e3/out_$2 --device=cpu --trials=30 --weights=model --out_dir=/tmp/e3/eval_$2_model
}
train reach reach_nostate --prompt_format=pi0 > /tmp/e3/reach_nostate.txt 2>&1 &
(python sim.py metaworld --out=/tmp/e3/reach200_lerobot --tasks=reach-v3 --episodes=200 --size=128 --workers=1
 python prepare.py --src=/tmp/e3/reach200_lerobot --out=/tmp/e3/reach200 --tokenizer=words --image_size=128 --max_token_len=48 --workers=1
 train reach200 reach200) > /tmp/e3/reach200.txt 2>&1 &
wait
for r in reach reach200; do  # 30 more evaluation seeds for the 50- and 200-demonstration runs
  python eval.py --env=metaworld --tasks=reach-v3 --ckpt=/tmp/e3/out_$r --device=cpu --trials=30 --seed=10030 \
    --weights=model --out_dir=/tmp/e3/eval_${r}_model_b > /tmp/e3/eval_${r}_model_b.txt 2>&1 &
done; wait
for r in reach_nostate reach200; do python docs/closed_loop/e3_reach_trace.py /tmp/e3/out_$r 10000 6 > /tmp/e3/trace_$r.txt 2>&1; done
