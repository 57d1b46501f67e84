#!/bin/bash
# Session 15 (2026-12-05), issue 16, for the device time left after z_m / z_j (~4 min): does reach's first-frame goal
# placement grow with the number of distinct goals trained on? (and do the GPU's EGL
# renders match the CPU's osmesa ones?) The tower probe (conv stem, pi05 init, attention
# readout; z_m's 'tower') at 50, 200 and 400 training goals, and the whole policy as a regression at lr 3e-4 (z_m's
# best) at 50 and 400, side by side on one GPU; same data protocol as z_m.
source docs/closed_loop/device_setup.sh  # T0, el, left
P=/tmp/probe/reach; mkdir -p /tmp/probe; L=$OUT
python3 docs/closed_loop/d1_goal_probe.py collect reach-v3 0 400 ${P}_train.npz > $L/collect.txt 2>&1 &
python3 docs/closed_loop/d1_goal_probe.py collect reach-v3 10000 100 ${P}_eval.npz >> $L/collect.txt 2>&1; wait
el "data $(ls /tmp/probe | grep -c npz) files"
# first: do EGL here and osmesa on the CPU render the same first frames? (ae_render_compare.py; the CPU's are committed)
T0=$T0 bash docs/closed_loop/z_p_render_compare.sh > $L/render.txt 2>&1; cat $L/render.txt  # writes the npz to $OUT
B=docs/closed_loop/ab_pipeline_probe.py
run() { local name=$1; shift; timeout $(left 330) "$@" > $L/$name.txt 2>&1; el "$name: $(grep -h 'within' $L/$name.txt | sed 's/.*: train/train/' | head -n 1)"; }
for n in 50 200 400; do run tower_n$n python3 docs/closed_loop/ab_posemb_probe.py $P $n 1500 conv learn pool & done
for n in 50 400; do run regress_n$n python3 $B $P $n 1500 3e-4 regress & done
wait
el done
