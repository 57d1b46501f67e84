#!/bin/bash
# RAN 2026-12-05 session 11 as written (H200, 382 s): 72% and 74% (docs/closed_loop/y_results.txt)
# Prepared 2026-12-04 (session 9) for the next device call, not run yet (issue 16): does training each sample on K
# flow draws sharing one prefix pass (train.py --flow_draws=4) lift MT10? u_cnn_bc.py (the CNN and a flow-matching
# head on push-v3): 18 of 20 with four draws per frame on shared features, 10 with one. config/metaworld.py otherwise
# as it is (6000 iterations) at train seeds 42 (A) and 1 (B), EMA weights, noise scale 1, 8 workers each. The default
# at these seeds scored 73 / 73% (w_b) and 78 / 72% (v_a, v_c). flow_draws has not run on CUDA yet: if both runs die,
# the call ends at once saying so (eval_last finds no checkpoint).
source docs/closed_loop/mt10_call.sh
for r in A:42 B:1; do train_bg ${r%:*} ${r#*:} $TRAIN_END --flow_draws=4; done
wait
for r in A B; do eval_last $r 8 $EVAL_END & done
wait
report A B
