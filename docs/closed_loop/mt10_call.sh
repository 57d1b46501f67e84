# sourced by the MT10 device scripts written after session 9 (w_c, w_d; the earlier ones carry these lines inline,
# kept as they ran): the machine's setup, logging helpers, and MT10 x 50 demonstrations written and prepared
source docs/closed_loop/device_setup.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
ev() { # name ckpt workers deadline [eval.py flags...]
  local name=$1 ckpt=$2 workers=$3 deadline=$4; shift 4
  timeout $(( deadline - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$ckpt \
    --workers=$workers --out_dir=$OUT/$name "$@" > $L/eval_$name.txt 2>&1; el "$name: $(tail -n 1 $OUT/$name/tasks.md 2>/dev/null)"; }
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=16 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1
el data; tr '\r' '\n' < $L/gen.txt | grep "kept of\|wrote" | tail -n 3 | cut -c1-150
report() { # run names whose train_<name>.txt to summarise; then every tasks.md under $OUT, and the logs packed
  for r in "$@"; do grep -h "parameters\|eval iter\|done:\|non-finite\|skipped\|Error" $L/train_$r.txt | cut -c1-220; done
  for d in $OUT/*/; do [ -f $d/tasks.md ] && { echo "== $d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; }; done
  (cd $OUT && tar czf logs.tgz logs */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv); }
