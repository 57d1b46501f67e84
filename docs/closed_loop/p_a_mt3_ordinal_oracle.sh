#!/bin/bash
# session 5 of 2026-12-02, call 4 (issue 16): reach, push, pick-place alone (MT3, 50 demos each), the small model,
# 3000 iterations, three runs side by side: A real state; B real state + ordinal_state; C oracle state (.gpu/oracle_state.patch) + ordinal_state
source .gpu/common.sh
R=$(pwd); L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
left() { echo $(( $1 - ($(date +%s) - T0) )); }
T=reach-v3,push-v3,pick-place-v3
mkdir -p /tmp/orc && tar --exclude=./data_cache --exclude=./out --exclude=./.whl --exclude=./.gl -cf - . | tar -x -C /tmp/orc
(cd /tmp/orc && patch -p1 -s < .gpu/oracle_state.patch) || el "PATCH FAILED"
python3 sim.py metaworld --out=/tmp/d/r_l --tasks=$T --episodes=50 --size=128 --workers=8 > $L/gen_r.txt 2>&1 &
(cd /tmp/orc && python3 sim.py metaworld --out=/tmp/d/o_l --tasks=$T --episodes=50 --size=128 --workers=8 > $L/gen_o.txt 2>&1) &
wait
python3 prepare.py --src=/tmp/d/r_l --out=/tmp/d/r --tokenizer=words --image_size=128 --max_token_len=48 --workers=8 >> $L/gen_r.txt 2>&1 &
python3 prepare.py --src=/tmp/d/o_l --out=/tmp/d/o --tokenizer=words --image_size=128 --max_token_len=48 --workers=8 >> $L/gen_o.txt 2>&1 &
wait; el data
K="--max_iters=3000 --lr_decay_iters=3000 --warmup_iters=300 --eval_interval=3000 --ckpt_interval=1000 --keep_last=0 --log_interval=500"
run() {  # name data_dir tree extra
  cd $3; timeout $(left 215) python3 train.py config/metaworld.py --data_dir=$2 --out_dir=/tmp/out/$1 $K $4 > $L/train_$1.txt 2>&1
  C=$(ls -d /tmp/out/$1/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "$1 trained: $C"
  timeout $(left 292) python3 eval.py --env=metaworld --tasks=$T --ckpt=$C --workers=5 --out_dir=$OUT/$1 > $L/eval_$1.txt 2>&1
  el "$1 evaluated: $(grep 'v3\|average' $OUT/$1/tasks.md | tr '\n' ' ')"
}
run A /tmp/d/r $R "" &
run B /tmp/d/r $R "--ordinal_state=True" &
run C /tmp/d/o /tmp/orc "--ordinal_state=True" &
wait
for r in A B C; do echo "== $r"; grep -h "eval iter\|done:" $L/train_$r.txt | cut -c1-190; done
cd $OUT && tar czf logs.tgz logs */*.png */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
