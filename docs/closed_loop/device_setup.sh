# sourced by every device call: Meta-World's wheels and GL loaders (built here by carry_setup.sh), headless EGL; T0 (the call's start unless the
# caller set it), el (a line stamped with the seconds since T0) and left (seconds to a deadline counted from T0, >= 1);
# a script it runs that sources this again shares T0 and skips the installs
T0=${T0:-$(date +%s)}
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
left() { local t=$(( $1 - ($(date +%s) - T0) )); [ $t -gt 0 ] && echo $t || echo 1; }
[ -n "$DEVICE_SETUP_DONE" ] && return 0  # a script run by another device script: installed and exported already
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site MUJOCO_GL=egl PYTHONUNBUFFERED=1
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
export DEVICE_SETUP_DONE=1 T0
