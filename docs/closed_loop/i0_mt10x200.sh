# RAN 2026-12-02 (session 3, call 1, one H200, torch 2.11.0+cu130), as written; results in i0_results.txt
#!/bin/bash
# prepared 2026-12-02 (session 2) for the next GPU call, not yet run: MT10 with 200 demonstrations per task and
# config/metaworld.py's full 6000 iterations (the writer now splits a task's seeds over the 16 processes), evaluated
# with the default noise (seed 0, drawn per observation on the CPU) and with fresh noise. Compare with h2 (x50: 67% fresh).
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
python3 sim.py metaworld --out=data_cache/mt10x200_lerobot --tasks=mt10 --episodes=200 --size=128 --workers=16 > $L/gen.txt 2>&1; el written
python3 prepare.py --src=data_cache/mt10x200_lerobot --out=data_cache/mt10x200 --tokenizer=words --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1
el data; tr '\r' '\n' < $L/gen.txt | grep "kept\|wrote" | cut -c1-160
timeout $(( 480 - ($(date +%s) - T0) )) python3 train.py config/metaworld.py --data_dir=data_cache/mt10x200 --out_dir=out/mt10x200 --eval_interval=3000 --keep_last=0 > $L/train.txt 2>&1; el trained
cp out/mt10x200/log.txt $L/log.txt; grep -h "eval iter\|done:" $L/log.txt | cut -c1-250
C=$(ls -d out/mt10x200/ckpt_* | sort -t_ -k2 -n | tail -n 1); echo $C
# h8: more training raised validation metrics and lowered closed-loop success on reach: evaluate checkpoint 4000 too
for n in 0 -1; do (timeout $(( 585 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=$C --workers=5 --noise_seed=$n --out_dir=$OUT/mt10x200_noise$n > $L/eval_$n.txt 2>&1; el "noise $n: $(tail -n 1 $OUT/mt10x200_noise$n/tasks.md)") & done
[ -d out/mt10x200/ckpt_4000 ] && (timeout $(( 585 - ($(date +%s) - T0) )) python3 eval.py --env=metaworld --tasks=mt10 --ckpt=out/mt10x200/ckpt_4000 --workers=5 --out_dir=$OUT/mt10x200_ckpt4000 > $L/eval_4000.txt 2>&1; el "ckpt 4000: $(tail -n 1 $OUT/mt10x200_ckpt4000/tasks.md)") &
wait
for d in $OUT/mt10x200_*/; do echo "$d"; grep "v3\|average" $d/tasks.md | tr '\n' ' '; echo; done
cd $OUT && tar czf logs.tgz logs */*.png */episodes.csv 2>/dev/null; rm -rf logs */*.png */episodes.csv
