#!/bin/bash
# session 5 of 2026-12-02, call 1 (issue 16): two MT10 x50 runs of config/metaworld.py (6000 iterations), pipelined:
#  D: DART demonstrations (--action_noise=0.3): do corrections in the data fix the puck tasks' covariate shift?
#  O: DIAGNOSTIC oracle state (.gpu/oracle_state.patch in a copy of the tree: state = hand xyz, gripper, object xyz,
#     goal xyz): if the puck tasks succeed when the policy is told where puck and goal are, the images are the
#     bottleneck (perception), else control.
source .gpu/common.sh
R=$(pwd)
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
left() { echo $(( $1 - ($(date +%s) - T0) )); }
mkdir -p /tmp/orc && tar --exclude=./data_cache --exclude=./out --exclude=./.whl --exclude=./.gl -cf - . | tar -x -C /tmp/orc
(cd /tmp/orc && patch -p1 -s < .gpu/oracle_state.patch) && el "oracle tree" || el "PATCH FAILED"
python3 sim.py metaworld --out=data_cache/mt10d_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=16 --action_noise=0.3 > $L/gen_d.txt 2>&1
python3 prepare.py --src=data_cache/mt10d_lerobot --out=data_cache/mt10d --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen_d.txt 2>&1; el "D data"
tr '\r' '\n' < $L/gen_d.txt | grep "kept\|wrote" | cut -c1-120 | tail -n 4
# D trains and is evaluated in the background while O's data are written
( timeout $(left 400) python3 train.py config/metaworld.py --data_dir=data_cache/mt10d --out_dir=out/mt10d --eval_interval=3000 --keep_last=0 > $L/train_d.txt 2>&1
  el "D trained"
  C=$(ls -d out/mt10d/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "D eval $C"
  timeout $(left 560) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$C --workers=8 --out_dir=$OUT/mt10d > $L/eval_d.txt 2>&1
  el "D evaluated: $(tail -n 1 $OUT/mt10d/tasks.md)" ) > $L/d_bg.txt 2>&1 &
cd /tmp/orc
python3 sim.py metaworld --out=/tmp/orc/dc/mt10o_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=14 > $L/gen_o.txt 2>&1
python3 prepare.py --src=/tmp/orc/dc/mt10o_lerobot --out=/tmp/orc/dc/mt10o --tokenizer=words --image_size=128 --max_token_len=48 --workers=14 >> $L/gen_o.txt 2>&1; el "O data"
tr '\r' '\n' < $L/gen_o.txt | grep "kept\|wrote\|longest" | cut -c1-160 | tail -n 4
timeout $(left 440) python3 train.py config/metaworld.py --data_dir=/tmp/orc/dc/mt10o --out_dir=/tmp/orc/out/mt10o --eval_interval=3000 --keep_last=0 > $L/train_o.txt 2>&1; el "O trained"
C=$(ls -d /tmp/orc/out/mt10o/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "O eval $C"
timeout $(left 570) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$C --workers=8 --out_dir=$OUT/mt10o > $L/eval_o.txt 2>&1; el "O evaluated: $(tail -n 1 $OUT/mt10o/tasks.md)"
wait; cat $L/d_bg.txt
cp $R/out/mt10d/log.txt $L/log_d.txt; cp /tmp/orc/out/mt10o/log.txt $L/log_o.txt
for r in d o; do echo "== $r"; grep -h "eval iter\|done:" $L/train_$r.txt | cut -c1-200; grep "v3\|average" $OUT/mt10$r/tasks.md | tr '\n' ' '; echo; done
cd $OUT && tar czf logs.tgz logs */*.png */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
