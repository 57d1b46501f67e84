# RAN 2026-12-02 (session 2, call 2, one H200, torch 2.11.0+cu130): results in h1_results.txt
#!/bin/bash
# 2026-12-02 session 2: why does the cpu128 model trained on reach x200 solve 57% on the CPU (e4) but 3% on the GPU (g_a R2)?
# Same eval on the CPU-trained e4 checkpoint and on a GPU-trained one, varying only how the GPU serves it.
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
ev() { # name ckpt mode device workers
  timeout $(( 540 - ($(date +%s) - T0) )) python3 .gpu/evalx.py $3 --env=metaworld --tasks=reach-v3 --ckpt=$2 --trials=30 --weights=model \
    --device=$4 --workers=$5 --out_dir=$OUT/$1 > $L/eval_$1.txt 2>&1; echo "$1: $(grep reach-v3 $OUT/$1/tasks.md 2>/dev/null)"; }
C=.gpu/e4ckpt/ckpt_2000
ev cpuckpt_default $C default cuda 3 & ev cpuckpt_w1 $C default cuda 1 & ev cpuckpt_nofast $C nofast cuda 3 &
ev cpuckpt_fp32w $C fp32w cuda 3 & ev cpuckpt_fp32 $C fp32 cuda 3 & ev cpuckpt_cpu $C default cpu 6 &
python3 sim.py metaworld --out=data_cache/reach_lerobot --tasks=reach-v3 --episodes=200 --size=128 --workers=8 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/reach_lerobot --out=data_cache/reach --tokenizer=words --image_size=128 --max_token_len=48 --workers=8 >> $L/gen.txt 2>&1
el data
CPU="--micro_batch=32 --learning_rate=1e-3 --decay_lr=1e-4 --warmup_iters=100 --max_iters=2000 --lr_decay_iters=2000 --eval_interval=1000 --ckpt_interval=2000 --keep_last=0 --log_interval=100"
timeout 300 python3 docs/closed_loop/d2_train_cpu128.py config/metaworld.py --model_name=cpu128 --data_dir=data_cache/reach --out_dir=out/R2 $CPU > $L/R2.txt 2>&1
el trained; grep -h "done:" out/R2/log.txt | cut -c1-250
G=out/R2/ckpt_2000
mkdir -p $OUT/R2ckpt && cp $G/model.safetensors $G/*.json $OUT/R2ckpt/
ev gpuckpt_default $G default cuda 3 & ev gpuckpt_fp32 $G fp32 cuda 3 & ev gpuckpt_fp32w $G fp32w cuda 3 & ev gpuckpt_cpu $G default cpu 6 &
wait; el evaluated
cd $OUT && tar czf logs.tgz logs */*.png */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
