#!/bin/bash
# 2026-12-07 (issue 18): the step's GEMMs shape by shape (z_bl_gemm_shapes.py), then cat_projections A/B on a row that
# fits 80 GB (z_bm_ab.py, BASE=sdpa; BASE=default on an H200). No carry needed (torch only). END: deadline, s.
T0=$(date +%s); left() { local t=$(( $1 - ($(date +%s) - T0) )); [ $t -gt 0 ] && echo $t || echo 1; }
L=${OUT:-.}/logs; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $L/gpu.txt
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a $L/gpu.txt
export PYTHONPATH=. PYTHONUNBUFFERED=1
timeout $(left 120) python3 docs/runs/z_bl_gemm_shapes.py --out=$L/gemm_shapes.md > $L/gemm_shapes.txt 2>&1
echo "gemm shapes rc $? at $(( $(date +%s) - T0 ))s"; tail -22 $L/gemm_shapes.txt
timeout $(left ${END:-585}) python3 docs/runs/z_bm_ab.py --base=${BASE:-sdpa} --change=cat_projections=True \
  --pairs=${PAIRS:-2} --out_dir=$L/ab > $L/ab.txt 2>&1
echo "ab rc $? at $(( $(date +%s) - T0 ))s"; grep -v '^{' $L/ab.txt | tail -12
