#!/usr/bin/env bash
# Packs what a GPU machine without internet lacks to build autokernel: the Debian packages of the
# header-only and small libraries (CLI11, nlohmann-json, muparser, xxhash, GoogleTest, libseccomp), unpacked
# under .carry/root (ignored by git); the wheels of Liger-Kernel (bench/gpu_triton.sh compares with
# it), of ninja (PyTorch's extension builder needs it for the custom ops' native kernels), of py-spy
# (bench/gpu_bridge.sh dumps the stacks of a verify that overruns) and of
# Hugging Face transformers with what it needs beyond PyTorch's own environment (the bridge's HF
# rows), for the device's Python 3.12, under .carry/wheels; KernelBench's problems under
# .carry/kernelbench. A device call names .carry in `carry`; the bench/gpu_*.sh scripts point
# CMake and the loader at .carry/root/usr and install the wheels (gpu_env.sh: use_carried_wheels).
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(libcli11-dev nlohmann-json3-dev libmuparser-dev libmuparser2v5 libxxhash-dev libxxhash0
          libgtest-dev googletest libseccomp-dev libseccomp2)
rm -rf .carry && mkdir -p .carry/debs .carry/root .carry/wheels/hf
(cd .carry/debs && apt-get download "${packages[@]}" >/dev/null)
for deb in .carry/debs/*.deb; do dpkg-deb -x "$deb" .carry/root; done
rm -rf .carry/debs .carry/root/usr/share/doc .carry/root/usr/share/man
binary=(--only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64
        --platform manylinux_2_28_x86_64)
python3 -m pip download --quiet --no-deps "${binary[@]}" -d .carry/wheels liger-kernel==0.8.5 ninja py-spy
python3 -m pip download --quiet "${binary[@]}" -d .carry/wheels/hf transformers==5.23.0
rm -f .carry/wheels/hf/numpy-*.whl  # PyTorch's environment has its own (the carry holds 64 MiB)
[[ -d ../shared/kernelbench ]] && cp -r ../shared/kernelbench .carry/kernelbench
du -sh .carry | cut -f1 | xargs echo "carry: .carry ready,"
