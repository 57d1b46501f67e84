#!/bin/bash
# Prepared 2026-12-05 (session 13) for a device call (issue 16), not run yet: the 57M-parameter 'medium' shape on
# MT10 to the end of config/metaworld.py's 6000 iterations at half the learning rate (2.5e-4, decay to 2.5e-5). At
# 5e-4 it met NaN gradients in SigLIP's early layers twice (z_b, z_h: iterations 1361 and 1862); at 2.5e-4 it ran
# 2000 iterations clean (z_h B). Alone on the GPU it takes ~33 ms per iteration (z_b), so it ends by ~330 s.
# Seed 42 (the small default there: 73 / 78%), EMA weights, 10 episodes per task.
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
train_bg A 42 $TRAIN_END --model_name=medium --learning_rate=2.5e-4 --decay_lr=2.5e-5
wait
eval_last A 16 $EVAL_END
report A
