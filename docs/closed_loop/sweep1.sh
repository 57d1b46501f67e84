#!/bin/bash
# call 1: demo recipe sweep (CPU demo candidates, GPU three-object candidates) + Meta-World MT10 smoke run, in parallel
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python3 sim.py synthetic --out=/tmp/s1_64 --episodes=2000 --objects=1 --image_size=64 > $L/gen_s1_64.txt 2>&1 &
python3 sim.py synthetic --out=/tmp/s1_32 --episodes=2000 --objects=1 --image_size=32 > $L/gen_s1_32.txt 2>&1 &
python3 sim.py synthetic --out=/tmp/s3_64 --episodes=4000 --objects=3 --image_size=64 > $L/gen_s3_64.txt 2>&1 &
(python3 sim.py metaworld --out=/tmp/mt10_src --tasks=mt10 --episodes=50 --size=128 --workers=10 > $L/gen_mt10.txt 2>&1 &&
 python3 data.py --src=/tmp/mt10_src --out=/tmp/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen_mt10.txt 2>&1) &
wait; el datasets done; tail -n 3 $L/gen_*.txt
DEMO="config/demo.py --device=cuda --dtype=float32 --augment=False --eval_iters=4 --keep_last=0 --log_interval=100"
run() {  # name, minutes, train args...; then closed-loop eval of every checkpoint
  local name=$1 mins=$2; shift 2
  timeout ${mins}m python3 train.py "$@" --out_dir=/tmp/runs/$name > $L/$name.txt 2>&1
  for c in $(ls -d /tmp/runs/$name/ckpt_* | sort -t_ -k2 -n); do
    OMP_NUM_THREADS=2 python3 eval.py --ckpt=$c --episodes=50 --device=cpu --out_dir=$c/eval 2>&1 | tail -n 1 | sed "s|^|$name $(basename $c): |" >> $OUT/closed_loop.txt
  done
  grep "eval iter" $L/$name.txt | sed "s|^|$name |" >> $OUT/evals.txt
}
run A1 5 $DEMO --data_dir=/tmp/s1_64 --synthetic_objects=1 --micro_batch=32 --learning_rate=1e-3 --max_iters=3000 --lr_decay_iters=3000 --warmup_iters=50 --eval_interval=500 --ckpt_interval=500 &
run A2 5 $DEMO --data_dir=/tmp/s1_64 --synthetic_objects=1 --micro_batch=32 --learning_rate=1e-3 --max_iters=3000 --lr_decay_iters=3000 --warmup_iters=50 --eval_interval=500 --ckpt_interval=500 --loss_dims=7 &
run A3 5 $DEMO --data_dir=/tmp/s1_32 --synthetic_objects=1 --image_size=32 --micro_batch=32 --learning_rate=1e-3 --max_iters=3000 --lr_decay_iters=3000 --warmup_iters=50 --eval_interval=500 --ckpt_interval=500 --loss_dims=7 &
run A4 5 $DEMO --data_dir=/tmp/s1_64 --synthetic_objects=1 --micro_batch=64 --learning_rate=2e-3 --max_iters=3000 --lr_decay_iters=3000 --warmup_iters=50 --eval_interval=500 --ckpt_interval=500 --loss_dims=7 &
run G1 6 $DEMO --data_dir=/tmp/s3_64 --micro_batch=64 --learning_rate=1e-3 --max_iters=8000 --lr_decay_iters=8000 --warmup_iters=100 --eval_interval=2000 --ckpt_interval=2000 --loss_dims=7 &
run G2 6 $DEMO --data_dir=/tmp/s3_64 --micro_batch=128 --learning_rate=2e-3 --max_iters=8000 --lr_decay_iters=8000 --warmup_iters=100 --eval_interval=2000 --ckpt_interval=2000 --loss_dims=7 &
MW="config/metaworld.py --data_dir=/tmp/mt10 --max_iters=20000 --eval_interval=1000 --ckpt_interval=1000 --keep_last=1 --log_interval=200"
(timeout 4m python3 train.py $MW --out_dir=/tmp/runs/M1 > $L/M1.txt 2>&1;
 python3 eval.py --env=metaworld --tasks=mt10 --trials=5 --workers=10 --ckpt=/tmp/runs/M1 --out_dir=$OUT/M1_eval > $L/M1_eval.txt 2>&1) &
(timeout 4m python3 train.py $MW --augment=True --out_dir=/tmp/runs/M2 > $L/M2.txt 2>&1;
 python3 eval.py --env=metaworld --tasks=mt10 --trials=5 --workers=10 --ckpt=/tmp/runs/M2 --out_dir=$OUT/M2_eval > $L/M2_eval.txt 2>&1) &
wait; el all done
cat $OUT/closed_loop.txt; grep -h "average\|success rate" $L/M*_eval.txt; grep -h "eval iter" $L/M1.txt $L/M2.txt | tail -n 4
cd $OUT && tar czf logs.tgz logs && rm -rf logs M1_eval/*.png M2_eval/*.png
