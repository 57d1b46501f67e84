#!/bin/bash
# 2026-12-08 (issue 18): FlashAttention 4 on the lent GPU (docs/runs/z_bq_flash4.py), whose wheels (~72 MB) are more
# than one call may carry beside the repository, so they go in two calls to one warm machine (30 s apart at most).
# Here, once: the CUDA 13 CuTe DSL libraries' wheel (nvidia-cutlass-dsl-libs-cu13 4.8.1, cp312) unpacked, tarred with
# xz -9e and cut by `split -b 31000000` into .fa4a/cu13.part.aa, .fa4b/cu13.part.ab and .fa4a/cu13.part.ac;
# .fa4b/ also holds flash_attn_4 4.0.0b40, nvidia_cutlass_dsl (+ libs_base, libs_core) 4.8.1, apache_tvm_ffi,
# torch_c_dlpack_ext and quack_kernels (cuda-bindings, einops and protobuf are on the machine's image).
#   call 1: STAGE=1 bash docs/runs/z_bq_flash4.sh   carry [".fa4a"]  (keeps its parts in /tmp/fa4stash)
#   call 2: STAGE=2 bash docs/runs/z_bq_flash4.sh   carry [".fa4b"]  (installs, kernels alone, then the A/B in train steps)
if [ "$STAGE" = 1 ]; then
  mkdir -p /tmp/fa4stash && cp .fa4a/* /tmp/fa4stash/ && ls -la /tmp/fa4stash && nvidia-smi --query-gpu=name --format=csv,noheader
  exit
fi
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
L=$OUT/logs; mkdir -p $L
cat /tmp/fa4stash/cu13.part.aa .fa4b/cu13.part.ab /tmp/fa4stash/cu13.part.ac > /tmp/cu13.tar.xz || exit 1
echo "4278171e7e056b481fc9d1b366680b4e9b7dc1ee942d74a09af4052988bc9474  /tmp/cu13.tar.xz" | sha256sum -c || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .fa4b/*.whl || exit 1
tar xJf /tmp/cu13.tar.xz -C /tmp/site || exit 1
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:. PYTHONUNBUFFERED=1
el "installed"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, flash_attn.cute, cutlass; print('torch', torch.__version__, 'flash_attn.cute ok')" 2>&1 | tail -5
OUT_FILE=$L/kernels.txt timeout ${KTIME:-240} python3 docs/runs/z_bq_flash4.py > $L/kernels_full.txt 2>&1
el "kernels rc $?"; cat $L/kernels.txt; tail -30 $L/kernels_full.txt | cut -c1-400
if grep -q "flex FLASH (FA4 CuTe DSL): [0-9]" $L/kernels.txt; then
  timeout $(( ${END:-560} - ($(date +%s) - T0) )) python3 docs/runs/z_bq_flash4.py --ab=$L/ab --order=${ORDER:-ABCAB} > $L/ab.txt 2>&1
  el "ab rc $?"; grep -v "^{" $L/ab.txt | tail -25 | cut -c1-600
fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
