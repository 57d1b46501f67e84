# RAN 2026-12-02 (session 4, call 3, one H200, torch 2.11.0+cu130), as written (.gpu/train_p8.py is m_train_p8.py here, .gpu/promptswap.py l_promptswap.py); results in l_results.txt
#!/bin/bash
# 2026-12-02 session 4, call 3: MT10's small model with 8 px patches (256 tokens per camera instead of 64): l_a's
# prompt-swap table shows the instruction is used; the failures look like placing the gripper on the puck (a 16 px
# patch spans ~16 cm of the table). config/metaworld.py with a 4000-iteration schedule (the budget left), 50 demonstrations per task.
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python3 sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --size=128 --workers=16 > $L/gen.txt 2>&1; el written
python3 prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1; el data
timeout $(( 300 - ($(date +%s) - T0) )) python3 .gpu/train_p8.py config/metaworld.py --model_name=small_p8 --out_dir=out/p8 --max_iters=4000 --lr_decay_iters=4000 --eval_interval=2000 --ckpt_interval=2000 --keep_last=0 > $L/train.txt 2>&1; el trained
cp out/p8/log.txt $L/log.txt; grep -h "eval iter\|done:\|^iter 1000/" $L/log.txt | cut -c1-250
C=$(ls -d out/p8/ckpt_* | sort -t_ -k2 -n | tail -n 1); el "evaluating $C"
timeout $(( 425 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$C --workers=10 --out_dir=$OUT/p8 > $L/eval.txt 2>&1; el "evaluated: $(tail -n 1 $OUT/p8/tasks.md)"
timeout $(( 445 - ($(date +%s) - T0) )) python3 .gpu/promptswap.py $C data_cache/mt10 > $L/swap.txt 2>&1; cat $L/swap.txt
grep "v3\|average" $OUT/p8/tasks.md | tr '\n' ' '; echo
cd $OUT && tar czf logs.tgz logs */*.png */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
