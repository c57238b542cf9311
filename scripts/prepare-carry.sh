#!/usr/bin/env bash
# Packs what a GPU machine without internet lacks to build autokernel: the Debian packages of the
# header-only and small libraries (CLI11, nlohmann-json, muparser, xxhash, GoogleTest, libseccomp), unpacked
# under .carry/root (ignored by git). A device call names .carry in `carry`; the bench/gpu_*.sh
# scripts point CMake and the loader at .carry/root/usr.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(libcli11-dev nlohmann-json3-dev libmuparser-dev libmuparser2v5 libxxhash-dev libxxhash0
          libgtest-dev googletest libseccomp-dev libseccomp2)
rm -rf .carry && mkdir -p .carry/debs .carry/root
(cd .carry/debs && apt-get download "${packages[@]}" >/dev/null)
for deb in .carry/debs/*.deb; do dpkg-deb -x "$deb" .carry/root; done
rm -rf .carry/debs .carry/root/usr/share/doc .carry/root/usr/share/man
du -sh .carry | cut -f1 | xargs echo "carry: .carry/root ready,"
