#!/bin/bash
# Session 15 (2026-12-05), issue 16: the render comparison of z_o alone, for a call with ~4 min of device time left:
# reach-v3's first frames of seeds 10000-10019 as EGL renders them here, against osmesa's on the CPU (committed).
source docs/closed_loop/device_setup.sh  # T0, el, left
PYTHONPATH=.:/tmp/site python3 docs/closed_loop/ae_render_compare.py dump $OUT/reach_first_frames_egl.npz
PYTHONPATH=.:/tmp/site python3 docs/closed_loop/ae_render_compare.py compare $OUT/reach_first_frames_egl.npz \
  docs/closed_loop/ae/reach_first_frames_osmesa.npz
el done
