#!/bin/bash
# Prepared 2026-12-05 (session 13) for a device call (issue 16); ran 2026-12-06 (session 17) on an H100: docs/closed_loop/af_results.txt. First the GPU test of SigLIP's attention
# at 64 keys (model.sdpa_without_cudnn_nan leaves cuDNN out there: its SM90 backward makes NaN query gradients at key
# lengths of 64 mod 128 when a row's logsumexp is below -88.7, pytorch issue 196678), which also prints whether cuDNN
# itself makes them on this GPU. Then the 57M-parameter 'medium' shape on MT10 to the end of config/metaworld.py's
# 6000 iterations at LR (default 5e-4, as z_b and z_h, which met NaN gradients in SigLIP's early layers at iterations
# 1361 and 1862 before that change; LR=2.5e-4 gives the half rate, which ran 2000 iterations clean in z_h), seed 42
# (the small default there: 73 / 78%), alone on the GPU (~33 ms per iteration in z_b: ends by ~330 s), EMA weights,
# 10 episodes per task.
TRAIN_END=${TRAIN_END:-470}; EVAL_END=${EVAL_END:-580}; LR=${LR:-5e-4}  # set first: 'X=1 source f' would not keep f's X
# the 'medium' shape is in model.configs since 2026-12-05 session 14 (medium_config.py patched it in before)
source docs/closed_loop/mt10_call.sh
timeout 90 python3 -m pytest -q -s test_equivalence.py -k "siglip_attention" > $L/gpu_test.txt 2>&1
el "gpu test"; grep "cuDNN\|passed\|failed\|Error" $L/gpu_test.txt | tail -n 4
decay=$(python3 -c "print($LR / 10)")
train_bg A 42 $TRAIN_END --model_name=medium --learning_rate=$LR --decay_lr=$decay
wait
eval_last A 16 $EVAL_END
report A
