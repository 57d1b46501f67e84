#!/bin/bash
# Prepared 2026-12-05 (session 11) for a device call (issue 17), not run yet: the grouped denoising attention takes
# its logits from a bf16 GEMM with fp32 output when no gradient is taken (plain sampling) and keeps the fp32 product
# where real-time chunking differentiates through q and k (the 2026-12-02 version, docs/logs/grouped_bf16.patch, used the
# bf16 GEMM everywhere: 19.6 ms instead of 20.2 at batch 1, but guided calls failed since that bmm has no derivative).
# 1. python bench.py --infer=True with the bf16 branch switched off (the baseline, on this machine), then as
#    committed: keep the change if the batch-1 grouped row gains
# 2. with the time left: the GPU test of real-time chunking (a guided call replayed from its graph) first, then those
#    of the grouped attention and graph replay
source docs/closed_loop/device_setup.sh  # T0, el, left: the deadlines count the setup too
L=$OUT/logs; mkdir -p $L
cp model.py /tmp/model.py
sed -i 's/^        if q.is_cuda and q.dtype == k.dtype == torch.bfloat16 and not grad:/        if False:/' model.py
grep -q "^        if False:" model.py && el "baseline: bf16 branch off" || el "baseline: the sed found no line (both runs below are the change)"
timeout $(left 230) python3 bench.py --infer=True --infer_calls=50 --out_dir=$L/infer0 > $L/infer0.txt 2>&1; el infer baseline
cp /tmp/model.py model.py
timeout $(left 450) python3 bench.py --infer=True --infer_calls=50 --out_dir=$L/infer1 > $L/infer1.txt 2>&1; el infer change
for f in infer0 infer1; do echo "== $f"; grep "^|\|replay\|relative\|failed\|kernels of" $L/$f.txt | grep -v "^| \`\(void\|sm80\|cutlass\|nvjet\|triton\|cudnn\)" | head -n 30; done
timeout $(left 530) python3 -m pytest -q test_serve.py -k "TestGPU and real_time" > $L/tests_rtc.txt 2>&1; el tests rtc; tail -n 2 $L/tests_rtc.txt
timeout $(left 585) python3 -m pytest -q test_equivalence.py test_serve.py -k "TestGPU and (grouped or replay) and not real_time and not max_autotune" > $L/tests.txt 2>&1; el tests; tail -n 2 $L/tests.txt
grep -h -B2 -A12 "Error\|assert" $L/tests_rtc.txt $L/tests.txt | head -n 40
cd $OUT && tar czf logs.tgz logs && rm -rf logs
