#!/bin/bash
# Prepared 2026-12-05 (session 13) for a device call (issue 16), not run yet: the small default at half the learning
# rate (2.5e-4, decay to 2.5e-5) at train seeds 42 and 1 side by side (the default there: 73 / 73% in w_b). Why: the
# 57M shape's NaN gradients came from SigLIP's early layers at 5e-4 (z_h), and the one 8000-iteration run of the
# small shape met one too; the vision tower may learn better at a gentler rate. With the patch stem a lower rate
# (3e-4 at micro-batch 64) did worse, but that changed the batch too.
RUNS="A:42:--learning_rate=2.5e-4,--decay_lr=2.5e-5 B:1:--learning_rate=2.5e-4,--decay_lr=2.5e-5" bash docs/closed_loop/w_e_mt10_runs.sh
