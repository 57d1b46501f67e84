# RAN 2026-12-02 (session 3, call 3, one H200, torch 2.11.0+cu130), as written; the checkpoints were evaluated on a 2-core CPU
# afterwards (i2_results.txt). serve.py then had GraphedSampler(denoise_attn='auto') (commit after b300bcb).
#!/bin/bash
# 2026-12-02 session 3, call 3: i1's (j_a.sh's) demo_gpu run again without the EMA (the EMA took an iteration from 15.4 to
# 24 ms, so the 300 s limit stopped it at 7200 iterations), 16000 scenes, 12000 iterations; checkpoints come back
# for evaluation on the CPU. Beside it, the GPU tests of serve.py's new default (grouped denoising attention at batch 1).
source .gpu/common.sh
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
(timeout 220 python3 -m pytest -q test_serve.py test_equivalence.py -k "TestGPU and (graph_replay or cpu_replies or real_time_chunking_from or pi05_heads)" > $L/gpu_tests.txt 2>&1; el gpu tests; tail -n 3 $L/gpu_tests.txt) &
timeout 320 python3 train.py config/demo_gpu.py --synthetic_episodes=16000 --data_dir=data_cache/synthetic3_64_16000 --keep_last=0 > $L/demo_gpu_train.txt 2>&1; el demo_gpu trained
cp out/demo_gpu/log.txt $L/demo_gpu_log.txt; grep -h "eval iter\|done:\|non-finite" $L/demo_gpu_log.txt | cut -c1-300
for c in 8000 10000 12000; do [ -d out/demo_gpu/ckpt_$c ] || continue; d=ck$c/ckpt_$c; mkdir -p $d; cp out/demo_gpu/ckpt_$c/*.safetensors out/demo_gpu/ckpt_$c/*.json $d/
  python3 -c "import json,os,sys; d=sys.argv[1]; p=d+'/manifest.json'; m=json.load(open(p)); m['files']={k:v for k,v in m['files'].items() if os.path.exists(d+'/'+k)}; json.dump(m,open(p,'w'))" $d
  tar czf $OUT/ck_$c.tgz -C ck$c ckpt_$c; done; ls -la $OUT
wait
grep -i "failed\|error" $L/gpu_tests.txt | head -n 20
cd $OUT && tar czf logs.tgz logs && rm -rf logs
