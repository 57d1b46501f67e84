# sourced by the MT10 device scripts written after session 9 (w_c, w_d, w_e; the earlier ones carry such lines inline,
# kept as they ran): the machine's setup, MT10 x 50 demonstrations written and prepared, and helpers to train runs
# side by side and evaluate them against deadlines counted from T0 (the call's start, setup included); EPISODES
# demonstrations per task (default 50), rendered and prepared at SIZE px (default 128), SIM_FLAGS more sim.py flags,
# TRAIN_PY the training script (default train.py; docs/closed_loop/d2_train_cpu128.py adds the 'cpu128' shape)
TRAIN_END=${TRAIN_END:-440}; EVAL_END=${EVAL_END:-570}  # seconds from T0 at which training / evaluation are cut
source docs/closed_loop/device_setup.sh
L=$OUT/logs; mkdir -p $L
train_bg() { # name seed deadline [train.py flags...]: one run of config/metaworld.py in the background
  local n=$1 s=$2 d=$3; shift 3; rm -rf out/mw$n
  timeout $(left $d) python3 ${TRAIN_PY:-train.py} config/metaworld.py --seed=$s "$@" --out_dir=out/mw$n --eval_interval=3000 \
    --keep_last=0 > $L/train_$n.txt 2>&1 & }
ev() { # name ckpt workers deadline [eval.py flags...]
  local name=$1 ckpt=$2 workers=$3 deadline=$4; shift 4
  timeout $(left $deadline) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$ckpt \
    --workers=$workers --out_dir=$OUT/$name "$@" > $L/eval_$name.txt 2>&1; el "$name: $(tail -n 1 $OUT/$name/tasks.md 2>/dev/null)"; }
eval_last() { # name workers deadline [eval.py flags...]: the run's newest checkpoint, flagged if its schedule did not end
  local n=$1 c; c=$(ls -d out/mw$n/ckpt_* 2>/dev/null | sort -V | tail -n 1); shift
  [ -n "$c" ] || { el "$n: no checkpoint (see $L/train_$n.txt)"; return; }
  grep -q "^done:" $L/train_$n.txt || el "$n: MID-SCHEDULE $c (the run did not end)"
  el "$n: $c"; ev $n $c "$@"; }
report() { # run names whose train_<name>.txt to summarise; then every tasks.md under $OUT, and the logs packed
  for r in "$@"; do grep -h "parameters\|eval iter\|done:\|non-finite\|skipped\|Error" $L/train_$r.txt | cut -c1-220; done
  for d in $OUT/*/; do [ -f $d/tasks.md ] && { echo "== $d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; }; done
  (cd $OUT && tar czf logs.tgz logs */episodes.csv */*.png 2>/dev/null; rm -rf logs */*.png */episodes.csv); }
# a warm machine keeps data_cache between calls: the same demonstrations (stamp) are not written again
stamp="episodes=${EPISODES:-50} size=${SIZE:-128} flags=${SIM_FLAGS:-}"
if [ "$(cat data_cache/mt10.stamp 2>/dev/null)" = "$stamp" ] && [ data_cache/mt10.stamp -nt data_cache/mt10/meta.json ]
then el "data kept ($stamp)"; else  # -nt: a script that writes data_cache/mt10 itself leaves the stamp older
rm -f data_cache/mt10.stamp
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=${EPISODES:-50} --size=${SIZE:-128} --workers=16 ${SIM_FLAGS:-} > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=${SIZE:-128} --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1 \
  && echo "$stamp" > data_cache/mt10.stamp
el data; tr '\r' '\n' < $L/gen.txt | grep "kept of\|wrote" | tail -n 3 | cut -c1-150
fi
