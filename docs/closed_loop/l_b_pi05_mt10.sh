# RAN 2026-12-02 (session 4, call 2, one H200, torch 2.11.0+cu130), as written; results in l_results.txt
#!/bin/bash
# what the full pi05 shape reaches on MT10 from scratch in a few minutes of training (350 iterations; no EMA and one
# checkpoint at the end: a pi05 checkpoint with optimizer state is ~39 GB of the 64 GB disk, ~52 with an EMA),
# 224 px data, micro-batch 32, the default compile
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python3 sim.py metaworld --out=data_cache/mt10_224_lerobot --tasks=mt10 --episodes=50 --size=224 --workers=16 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10_224_lerobot --out=data_cache/mt10_224 --tokenizer=words --image_size=224 --max_token_len=48 --workers=12 >> $L/gen.txt 2>&1; el data
timeout $(( 450 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --model_name=pi05 --image_size=224 --data_dir=data_cache/mt10_224 --out_dir=out/mw_pi05 --compile_mode=default --micro_batch=32 --learning_rate=2e-4 --decay_lr=2e-5 --warmup_iters=100 --max_iters=350 --lr_decay_iters=350 --ema=False --eval_interval=350 --ckpt_interval=0 --keep_last=1 > $L/train.txt 2>&1; el trained
cp out/mw_pi05/log.txt $L/log.txt
C=$(ls -d out/mw_pi05/ckpt_* | sort -t_ -k2 -n | tail -n 1)
timeout $(( 575 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$C --workers=16 --out_dir=$OUT/mw_pi05 > $L/eval.txt 2>&1; el evaluated $C
grep -h "eval iter\|done:\|^iter 100/\|^iter 600/" $L/log.txt | cut -c1-300; cat $OUT/mw_pi05/tasks.md
cd $OUT && tar czf logs.tgz logs */*.png 2>/dev/null; rm -rf logs */*.png
