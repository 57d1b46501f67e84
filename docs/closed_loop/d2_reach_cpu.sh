#!/bin/bash
# session 2026-12-01d (no GPU lent): Meta-World reach-v3 alone on the 2-core CPU (torch 2.13.0+cpu, MUJOCO_GL=osmesa),
# the 1.8M-parameter 'cpu128' model (d2_train_cpu128.py) from scratch, 50 demonstrations, 2000 iterations of 32
# samples (~15 min); evaluated on 10 evaluation seeds (EMA and raw weights) and on 10 of the demonstrations' seeds;
# then the same with DART-style demonstrations (--action_noise=0.3); 200 clean demonstrations not finished. Outputs: d2_*.
cd "$(dirname "$0")/../.."  # the repository root
export MUJOCO_GL=osmesa
run() {  # name, action noise, demonstrations, evaluations ('all': also raw weights and the demonstrations' seeds)
  python sim.py metaworld --out=/tmp/mw/$1_lerobot --tasks=reach-v3 --episodes=$3 --size=128 --workers=1 --action_noise=$2
  python prepare.py --src=/tmp/mw/$1_lerobot --out=/tmp/mw/$1 --tokenizer=words --image_size=128 --max_token_len=48 --workers=2
  python docs/closed_loop/d2_train_cpu128.py config/metaworld.py --model_name=cpu128 --data_dir=/tmp/mw/$1 \
    --out_dir=/tmp/mw/out_$1 --compile=False --device=cpu --micro_batch=32 --learning_rate=1e-3 --decay_lr=1e-4 \
    --warmup_iters=100 --max_iters=2000 --lr_decay_iters=2000 --eval_interval=500 --eval_iters=2 --ckpt_interval=1000 \
    --log_interval=100
  python eval.py --env=metaworld --tasks=reach-v3 --ckpt=/tmp/mw/out_$1 --device=cpu --out_dir=/tmp/mw/eval_$1
  [ "$4" = all ] || return 0
  python eval.py --env=metaworld --tasks=reach-v3 --ckpt=/tmp/mw/out_$1 --device=cpu --weights=model --out_dir=/tmp/mw/eval_$1_model
  python eval.py --env=metaworld --tasks=reach-v3 --ckpt=/tmp/mw/out_$1 --device=cpu --seed=0 --out_dir=/tmp/mw/eval_$1_seed0
}
run reach 0 50 all
run reach_dart 0.3 50 all
run reach200 0 200  # stopped at iteration 800 of 2000 when the session ran out of time: no result yet
