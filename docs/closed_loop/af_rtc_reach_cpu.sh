#!/bin/bash
# Session 17 (2026-12-06), issue 16, 2-core CPU (torch 2.13.0+cpu, MUJOCO_GL=osmesa): does eval.py --rtc=True change
# closed-loop success on Meta-World? Results in af_results.txt part 4, outputs in af/cpu_rtc/.
# reach-v3 alone on the CPU: the ad recipe (cpu128 shape, conv stem, lr 3e-4, 2000 iterations), then 30 episodes plain
# and with --rtc=True from the same checkpoint
cd "$(dirname "$0")/../.."  # the repository root, with a venv of requirements.txt active
export MUJOCO_GL=osmesa
D=${D:-/tmp/rtc}; mkdir -p $D; T0=$(date +%s)
python sim.py metaworld --out=$D/reach50_lerobot --tasks=reach-v3 --episodes=50 --size=128 --workers=2 &&
python prepare.py --src=$D/reach50_lerobot --out=$D/reach50 --tokenizer=words --image_size=128 --max_token_len=48 --workers=2
echo "data $(( $(date +%s) - T0 )) s"
OMP_NUM_THREADS=2 python docs/closed_loop/d2_train_cpu128.py config/metaworld.py --model_name=cpu128 --vision_stem=conv \
    --data_dir=$D/reach50 --out_dir=$D/out --compile=False --device=cpu --micro_batch=32 --learning_rate=3e-4 \
    --decay_lr=3e-5 --warmup_iters=100 --max_iters=2000 --lr_decay_iters=2000 --eval_interval=1000 --eval_iters=2 \
    --ckpt_interval=1000 --log_interval=100 --compile_mode=default
echo "trained $(( $(date +%s) - T0 )) s"
for r in False True; do
  OMP_NUM_THREADS=1 python eval.py --env=metaworld --tasks=reach-v3 --ckpt=$D/out --device=cpu --trials=30 --weights=model \
    --rtc=$r --out_dir=$D/eval_rtc$r > $D/eval_rtc$r.txt 2>&1 &
done
wait
echo "evaluated $(( $(date +%s) - T0 )) s"
for r in False True; do tail -n 1 $D/eval_rtc$r.txt; done
