#!/bin/bash
# Session 13 (2026-12-05), issue 16: where the 57M-parameter 'medium' shape's NaN gradient norms come from, and whether
# half the learning rate avoids them. z_b_mt10_medium.sh (same shape, seed 42, lr 5e-4) met them at iterations
# 1361-1496 with a finite loss; train.py now names the modules whose gradients were non-finite on each skipped step.
# A: z_b's run again (it stops itself at the 11th skipped step); B: the same at lr 2.5e-4 (decay to 2.5e-5), side by
# side, cut at TRAIN_END. No evaluation: B cannot end its schedule in this call.
TRAIN_END=${TRAIN_END:-245}  # set first: 'X=1 source f' would not keep f's X
python3 - <<'PY'
s = open('model.py').read()
anchor = "    'small': Pi05Config("
assert anchor in s
s = s.replace(anchor, "    'medium': Pi05Config(image_size=128, patch=16, vit_width=384, vit_depth=8, vit_mlp=1536, vit_heads=6, width=512,\n"
              "                         depth=8, mlp=2048, vocab=1024, expert_width=256, expert_mlp=1024, heads=8, head_dim=64,\n"
              "                         action_horizon=10, max_token_len=48),\n" + anchor, 1)
open('model.py', 'w').write(s)
PY
source docs/closed_loop/mt10_call.sh
train_bg A 42 $TRAIN_END --model_name=medium
train_bg B 42 $TRAIN_END --model_name=medium --learning_rate=2.5e-4 --decay_lr=2.5e-5
wait
el trained
for r in A B; do grep -h "skipped\|non-finite\|eval iter" $L/train_$r.txt | cut -c1-900; grep "^iter" $L/train_$r.txt | tail -n 1 | cut -c1-160; done
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
