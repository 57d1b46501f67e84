#!/bin/bash
# call 2: Meta-World MT10 (two settings), the three-object GPU demo (two settings), the CPU demo candidates at 32 px
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
DEMO="config/demo.py --device=cuda --dtype=float32 --augment=False --eval_iters=4 --keep_last=0 --log_interval=100 --loss_dims=7"
run() {  # name, minutes, train args...; then closed-loop eval of every checkpoint
  local name=$1 mins=$2; shift 2
  timeout ${mins}m python3 train.py "$@" --out_dir=/tmp/runs/$name > $L/$name.txt 2>&1
  for c in $(ls -d /tmp/runs/$name/ckpt_* | sort -t_ -k2 -n); do
    OMP_NUM_THREADS=2 python3 eval.py --ckpt=$c --episodes=50 --device=cpu --out_dir=$c/eval 2>&1 | tail -n 1 | sed "s|^|$name $(basename $c): |" >> $OUT/closed_loop.txt
  done
  grep "eval iter" $L/$name.txt | cut -c1-220 | sed "s|^|$name |" >> $OUT/evals.txt
}
python3 sim.py synthetic --out=/tmp/s1_32 --episodes=2000 --objects=1 --image_size=32 > $L/gen_s1_32.txt 2>&1
C="$DEMO --data_dir=/tmp/s1_32 --synthetic_objects=1 --image_size=32 --micro_batch=64 --max_iters=2000 --lr_decay_iters=2000 --warmup_iters=50 --eval_interval=250 --ckpt_interval=250"
(run C1 4.5 $C --learning_rate=2e-3 & run C2 4.5 $C --learning_rate=3e-3 & wait) &
D="$DEMO --data_dir=/tmp/s3_64 --micro_batch=64 --max_iters=8000 --lr_decay_iters=8000 --warmup_iters=100 --eval_interval=2000 --ckpt_interval=2000"
(python3 sim.py synthetic --out=/tmp/s3_64 --episodes=4000 --objects=3 --image_size=64 > $L/gen_s3_64.txt 2>&1;
 run D1 6 $D --learning_rate=2e-3 & run D2 6 $D --learning_rate=3e-3 --warmup_iters=200 & wait) &
mw() {  # name, minutes, train args; then MT10 x 10 episodes
  local name=$1 mins=$2; shift 2
  timeout ${mins}m python3 train.py config/metaworld.py --data_dir=/tmp/mt10 --out_dir=/tmp/runs/$name "$@" > $L/$name.txt 2>&1
  python3 eval.py --env=metaworld --tasks=mt10 --trials=10 --workers=10 --ckpt=/tmp/runs/$name --out_dir=$OUT/$name > $L/${name}_eval.txt 2>&1
  grep "eval iter" $L/$name.txt | cut -c1-400 | sed "s|^|$name |" >> $OUT/evals.txt
}
(python3 sim.py metaworld --out=/tmp/mt10_src --tasks=mt10 --episodes=50 --size=128 --workers=10 > $L/gen_mt10.txt 2>&1 &&
 python3 data.py --src=/tmp/mt10_src --out=/tmp/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen_mt10.txt 2>&1
 el mt10 data done
 mw MA 5.3 --max_iters=5000 --lr_decay_iters=5000 --ckpt_interval=1000 & mw MB 5.3 --max_iters=4000 --lr_decay_iters=4000 --ckpt_interval=1000 --micro_batch=128 --learning_rate=5e-4 --decay_lr=5e-5 & wait) &
wait; el all done
grep -h 'kept' $L/gen_mt10.txt | head -n 12; cat $OUT/closed_loop.txt; cat $OUT/MA/tasks.md $OUT/MB/tasks.md; grep -h "success rate" $L/M*_eval.txt; grep -h "done:" $L/*.txt | cut -c1-150
cd $OUT && tar czf logs.tgz logs MA/*.png MB/*.png && rm -rf logs MA/*.png MB/*.png
