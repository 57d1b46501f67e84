#!/bin/bash
# Session 15 (2026-12-05, 2-core CPU, torch 2.13.0+cpu, MUJOCO_GL=osmesa; no device machine could be started after
# the first two calls), issue 16: does reach-v3 alone gain from more demonstrations (more distinct goals) with the
# conv stem and the learning rate the GPU probe liked (z_m: 3e-4, where 1e-3 held the goal back)? The e3/e4 recipe
# (d2_train_cpu128.py: the 'demo' shape at 128 px, micro-batch 32, 2000 iterations, raw weights, 30 evaluation seeds
# 10000-10029; with the patch stem at lr 1e-3: 50 demonstrations 30%, 200 demonstrations 57%), here with
# --vision_stem=conv at lr 3e-4, 50 and 200 demonstrations side by side, one core each.
cd "$(dirname "$0")/../.."  # the repository root
export MUJOCO_GL=osmesa OMP_NUM_THREADS=1
D=/tmp/ad; mkdir -p $D
gen() { python sim.py metaworld --out=$D/$1_lerobot --tasks=reach-v3 --episodes=$2 --size=128 --workers=1 &&
  python prepare.py --src=$D/$1_lerobot --out=$D/$1 --tokenizer=words --image_size=128 --max_token_len=48 --workers=1; }
train() {  # data, out
  python docs/closed_loop/d2_train_cpu128.py config/metaworld.py --model_name=cpu128 --vision_stem=conv \
    --data_dir=$D/$1 --out_dir=$D/out_$2 --compile=False --device=cpu --micro_batch=32 --learning_rate=3e-4 \
    --decay_lr=3e-5 --warmup_iters=100 --max_iters=2000 --lr_decay_iters=2000 --eval_interval=1000 --eval_iters=2 \
    --ckpt_interval=1000 --log_interval=100 --compile_mode=default
  python eval.py --env=metaworld --tasks=reach-v3 --ckpt=$D/out_$2 --device=cpu --trials=30 --weights=model \
    --out_dir=$D/eval_$2
}
(gen reach50 50 && train reach50 reach50) > $D/reach50.txt 2>&1 &
(gen reach200 200 && train reach200 reach200) > $D/reach200.txt 2>&1 &
wait
for r in reach50 reach200; do echo "== $r"; grep "done:" $D/out_$r/log.txt 2>/dev/null | cut -c1-200; tail -n 2 $D/eval_$r/tasks.md; done
