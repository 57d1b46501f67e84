# RAN 2026-12-02 (session 3, call 2, one H200, torch 2.11.0+cu130), as written. The EMA took an iteration from ~15 to ~24 ms, so the
# 300 s limit stopped demo_gpu at iteration ~7200 and no checkpoint was copied (the copy named 8000-12000); results in i1_results.txt
#!/bin/bash
# 2026-12-02 session 3, call 2: config/demo_gpu.py with 16000 scenes, 12000 iterations and an EMA (c4: 8000 scenes,
# 90/100 at 12000); checkpoints come back and are evaluated on the CPU here. Then issue 17's inference table with
# the grouped and flex denoising-attention rows (never measured) and the max-autotune row, cut by the timeout if long.
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
timeout 300 python3 train.py config/demo_gpu.py --synthetic_episodes=16000 --data_dir=data_cache/synthetic3_64_16000 --ema=True --keep_last=0 > $L/demo_gpu_train.txt 2>&1; el demo_gpu trained
cp out/demo_gpu/log.txt $L/demo_gpu_log.txt; grep -h "eval iter\|done:\|non-finite" $L/demo_gpu_log.txt | cut -c1-300
for c in 8000 10000 12000; do d=ck$c/ckpt_$c; mkdir -p $d; cp out/demo_gpu/ckpt_$c/*.safetensors out/demo_gpu/ckpt_$c/*.json $d/
  python3 -c "import json,os,sys; d=sys.argv[1]; p=d+'/manifest.json'; m=json.load(open(p)); m['files']={k:v for k,v in m['files'].items() if os.path.exists(d+'/'+k)}; json.dump(m,open(p,'w'))" $d
  tar czf $OUT/ck_$c.tgz -C ck$c ckpt_$c; done; ls -la $OUT; ls out/demo_gpu/ckpt_12000
timeout $(( 575 - ($(date +%s) - T0) )) python3 bench.py --infer=True --infer_autotune=True --out_dir=$L/infer > $L/infer.txt 2>&1; el infer
grep "^|\|replay\|relative\|failed\|kernels of" $L/infer.txt | grep -v "^| \`\(nvjet\|void\|triton\|cudnn\)" | head -n 60
cd $OUT && tar czf logs.tgz logs && rm -rf logs
