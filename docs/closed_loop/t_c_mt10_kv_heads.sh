#!/bin/bash
# 2026-12-04 session 7, call 3 (issue 16): is the one shared K/V head the bottleneck? The 'small' model keeps pi05's
# single K/V head, so everything the action expert reads from the images and the prompt passes through one 64-dim
# value per token and layer (pi05: 256). Two variants of 'small', added to model.configs in this copy of the tree
# only: A 6 K/V heads of 64 (every query head its own), B 6 K/V heads of 128 (6 query heads of 128 too);
# config/metaworld.py otherwise (6000 iterations side by side), EMA weights, noise seed 0, 10 episodes per task.
source docs/closed_loop/device_setup.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python3 - <<'PY'
import re
s = open('model.py').read()
s = s.replace("configs = {\n", "configs = {\n"
    "    'small_kv6': Pi05Config(image_size=128, patch=16, vit_width=256, vit_depth=6, vit_mlp=1024, vit_heads=4, width=384,\n"
    "                        depth=6, mlp=1536, vocab=1024, expert_width=192, expert_mlp=768, heads=6, kv_heads=6, head_dim=64,\n"
    "                        action_horizon=10, max_token_len=48),\n"
    "    'small_kv6_d128': Pi05Config(image_size=128, patch=16, vit_width=256, vit_depth=6, vit_mlp=1024, vit_heads=4, width=384,\n"
    "                        depth=6, mlp=1536, vocab=1024, expert_width=192, expert_mlp=768, heads=6, kv_heads=6, head_dim=128,\n"
    "                        action_horizon=10, max_token_len=48),\n", 1)
open('model.py', 'w').write(s)
PY
python3 -c "import model; print({k: (model.configs[k].kv_heads, model.configs[k].head_dim) for k in model.configs})"
ev() { # name ckpt workers deadline
  timeout $(( $4 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$2 \
    --workers=$3 --out_dir=$OUT/$1 > $L/eval_$1.txt 2>&1; el "$1: $(tail -n 1 $OUT/$1/tasks.md 2>/dev/null)"; }
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=16 > $L/gen.txt 2>&1
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1
el data; tr '\r' '\n' < $L/gen.txt | grep "wrote" | tail -n 2 | cut -c1-150
for r in A:small_kv6 B:small_kv6_d128; do
  timeout $(( 440 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --model_name=${r#*:} --out_dir=out/mw${r%:*} \
    --eval_interval=3000 --keep_last=0 > $L/train_${r%:*}.txt 2>&1 &
done
wait; el trained
for r in A B; do C=$(ls -d out/mw$r/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "$r: $C"; ev $r $C 8 585 & done
wait
for r in A B; do grep -h "parameters\|eval iter\|done:" $L/train_$r.txt | cut -c1-220; done
for d in $OUT/*/; do [ -f $d/tasks.md ] && { echo "== $d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; }; done
cd $OUT && tar czf logs.tgz logs */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
