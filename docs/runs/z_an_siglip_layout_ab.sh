#!/bin/bash
# Prepared 2026-12-06 (session 21) for a device call (issues 17 and 18), not run yet; any single GPU (say which), carry
# [".whl", ".gl"] (device_setup.sh's common lines only). ~9 min, timeout_s 600.
# Session 21 made SigLIP's patch embeddings contiguous before its layers (model.py, Siglip.forward): inductor's code for
# the served call showed the transposed conv layout passing through every residual add and each LayerNorm split into
# three kernels over strided channels. Training's forward and backward run the same tower. A/B in one call: a copy of
# this tree with that one line reverted ('before') against the tree as it is ('after'):
# 1. bench.py's default training row at micro-batch 16 (32 does not fit an H100), one profiled step each;
# 2. bench.py's 'step' inference row (serve.py's default), batch 1 / 8 / 32, with its kernel list.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
OLD=/tmp/before; rm -rf $OLD; mkdir -p $OLD; cp -r *.py *.json *.txt config assets $OLD/
sed -i 's/        x = (x.flatten(2).transpose(1, 2) + e.position_embedding.weight.float()).to(dtype).contiguous()/        x = (x.flatten(2).transpose(1, 2) + e.position_embedding.weight.float()).to(dtype)/' $OLD/model.py
cmp -s model.py $OLD/model.py && { el "the revert did not apply: stop"; exit 1; }
for side in before after; do
  D=$([ $side = before ] && echo $OLD || echo .)
  (cd $D && timeout $(left $([ $side = before ] && echo 150 || echo 300)) python3 bench.py --rows=default --profile=default \
    --batch_size=16 --steps=10 --warmup=3 --out_dir=$L/train_$side > $L/train_$side.txt 2>&1); el "train $side rc $?"
  grep "^| \*\*train\|^| train\|GEMM\|elementwise" $L/train_$side.txt | cut -c1-200 | head -6
done
for side in before after; do
  D=$([ $side = before ] && echo $OLD || echo .)
  (cd $D && timeout $(left $([ $side = before ] && echo 440 || echo 585)) python3 bench.py --infer=True --infer_calls=30 \
    --infer_variants=step --out_dir=$L/infer_$side > $L/infer_$side.txt 2>&1); el "infer $side rc $?"
  grep "^| compiled\|^kernels of" $L/infer_$side.txt | cut -c1-220
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
