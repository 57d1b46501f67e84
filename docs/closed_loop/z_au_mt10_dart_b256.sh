#!/bin/bash
# Prepared 2026-12-06 (session 25) for device calls (issue 16); carry [".whl", ".gl"]; timeout_s 500 each. Two small
# gains measured at micro-batch 128, stacked at today's config (micro-batch 256): DART demonstrations (sim.py
# --action_noise=0.3: the robot runs the expert's action plus noise, the dataset keeps the expert's action; 74.5%
# against 73.0% over four and five runs, ag_results.txt) and sampling from zero noise at evaluation (eval.py
# --noise_scale=0: 72 / 77% against 73 / 73% on two checkpoints, w_results.txt). One train seed per call (SEED,
# default 42); the checkpoint is evaluated twice side by side, noise scale 1 and 0. A second call on the still-warm
# machine (SEED=1) finds the demonstrations written (mt10_call.sh's stamp) and skips the ~100 s of writing them.
# Estimated: data ~100 s, 6000 iterations ~230 s, the two evaluations side by side ~60-90 s. WITH_TESTS=1 runs every
# GPU test (test_serve.py's and test_equivalence.py's TestGPU, PDL on by default since session 25) beside the
# training, in place of a call of their own (docs/runs/z_au_gpu_tests.sh).
SIM_FLAGS="--action_noise=0.3" TRAIN_END=${TRAIN_END:-400} EVAL_END=${EVAL_END:-490}
source docs/closed_loop/mt10_call.sh
S=${SEED:-42}
el "D$S: seed $S, DART demonstrations"
train_bg D$S $S $TRAIN_END
if [ -n "${WITH_TESTS:-}" ]; then  # WITH_TESTS=1: every GPU test beside the training (~10% slower, as in session 20)
  ( timeout $(left $((TRAIN_END - 20))) python3 -m pytest -q -rs test_serve.py test_equivalence.py -k TestGPU \
      -p no:cacheprovider > $L/gpu_tests.txt 2>&1
    el "GPU tests rc $?: $(tail -n 1 $L/gpu_tests.txt)"; grep -E "^FAILED|^E  " $L/gpu_tests.txt | head -6 ) &
fi
wait
c=$(ls -d out/mwD$S/ckpt_* 2>/dev/null | sort -V | tail -n 1)
grep -q "^done:" $L/train_D$S.txt || el "D$S: MID-SCHEDULE $c (the run did not end)"
[ -n "$c" ] && { ev D${S}_noise1 $c 8 $EVAL_END & ev D${S}_noise0 $c 8 $EVAL_END --noise_scale=0 & wait; }
report D$S
