#!/bin/bash
# The device call scripts begin with device_setup.sh; this one builds what they carry.
# Run once on the development machine (not on the device), from the repository root, when .whl/ and .gl/ are missing
# (both are git-ignored, so a fresh checkout lacks them): what every device call carries (carry [".whl", ".gl"]) and
# device_setup.sh installs there. Wheels for the GPU machine's python 3.12 (Meta-World and what its import needs,
# websockets for serving, torchao for fp8; ~51 MB) and Debian's GL/EGL loader packages (~0.3 MB).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .whl .gl /tmp/amd64/partial
rm -f .whl/*.whl .gl/*.deb  # two versions of one package would make device_setup.sh's pip install fail
for p in metaworld==3.1.1 mujoco==3.3.0 gymnasium==1.4.0 farama-notifications==0.0.4 PyOpenGL==3.1.10 glfw==2.11.0 \
         websockets==17.4 torchao==0.18.0; do
  python3 -m pip download -q -d .whl --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --platform any "$p"
done
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
apt-get $o update -qq
(cd .gl && apt-get $o download libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
du -sh .whl .gl  # with the tracked files (~13 MB) these must stay under the 64 MiB a call carries: ~61 MiB today
