#!/bin/bash
# Prepared 2026-12-05 (session 14) for a device call (issue 16), not run yet; carry [".whl", ".gl"]. Where is reach's
# goal lost? On the CPU (ab_results.txt) the policy's tower alone placed it from the first frame on 48% of held-out
# seeds, the whole pi05-shaped policy on the same frames and target on 9%, and as a regression through the same
# network not at all. Here, each probe in about a minute on the GPU: the tower alone again (the reference), the
# policy with the flow loss and as a regression, each with pi05's zero-init projector and with a lecun-init one, and
# at lr 3e-4; all side by side (small models: the GPU is mostly idle). ~7 min in all.
source docs/closed_loop/device_setup.sh  # T0, el, left
P=/tmp/probe/reach; mkdir -p /tmp/probe; L=$OUT
python3 docs/closed_loop/d1_goal_probe.py collect reach-v3 0 400 ${P}_train.npz > $L/collect.txt 2>&1 &
python3 docs/closed_loop/d1_goal_probe.py collect reach-v3 10000 100 ${P}_eval.npz >> $L/collect.txt 2>&1; wait
el "data $(ls -la /tmp/probe | grep -c npz) files"
B=docs/closed_loop/ab_pipeline_probe.py
run() { local name=$1; shift; timeout $(left 560) "$@" > $L/$name.txt 2>&1; el "$name: $(grep -h 'within' $L/$name.txt | sed 's/.*: train/train/' | head -n 2 | tr '\n' ' ')"; }
run tower python3 docs/closed_loop/ab_posemb_probe.py $P 50 1500 conv learn pool &
run flow python3 $B $P 50 1500 &
run flow_proj python3 $B $P 50 1500 1e-3 x proj &
run regress python3 $B $P 50 1500 1e-3 regress &
run regress_proj python3 $B $P 50 1500 1e-3 regress proj &
run flow_lr3e-4 python3 $B $P 50 1500 3e-4 &
run regress_lr3e-4 python3 $B $P 50 1500 3e-4 regress &
wait
el done
