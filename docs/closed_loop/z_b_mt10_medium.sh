#!/bin/bash
# Prepared 2026-12-05 (session 12) for the next device call (issue 16), not run yet: a larger pi05-shaped model on
# MT10, never tried with the conv stem. 'medium' (57M parameters against small's 23M): SigLIP 384 wide x 8 layers
# (MLP 1536, 6 heads), Gemma 512 x 8 (MLP 2048, 8 query heads of 64, one K/V head), expert 256 (MLP 1024); added to
# model.configs on the device copy only. config/metaworld.py otherwise as is (conv stem, 128 px, 6000 iterations,
# micro-batch 128), train seed 42 (the default there: 78 and 73%), one run alone, EMA weights, 10 episodes per task.
TRAIN_END=${TRAIN_END:-470}; EVAL_END=${EVAL_END:-580}  # set first: 'X=1 source f' would not keep f's X
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
wait
eval_last A 16 $EVAL_END
report A
