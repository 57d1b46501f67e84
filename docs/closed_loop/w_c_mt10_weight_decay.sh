#!/bin/bash
# RAN 2026-12-05 session 11 as written (H200, 368 s): 69% and 69% (docs/closed_loop/y_results.txt)
# Prepared 2026-12-04, session 9 (issue 16; not run yet): 9000 iterations 66% and the default at seeds 42 / 1
# 73% / 73% point at generalisation, not optimisation: does AdamW weight decay regularise the from-scratch model?
# openpi's weight_decay is 1e-10 (none); here --weight_decay=0.1 (decoupled, every parameter) at train seeds 42 (A)
# and 1 (B), config/metaworld.py otherwise as it is (6000 iterations), EMA weights, noise scale 1, 8 workers each.
source docs/closed_loop/mt10_call.sh
for r in A:42 B:1; do train_bg ${r%:*} ${r#*:} $TRAIN_END --weight_decay=0.1; done
wait
for r in A B; do eval_last $r 8 $EVAL_END & done
wait
report A B
