# Sourced by the bench/gpu_*.sh scripts (from the repository root): the environment of one device
# call. Logs and files to bring back go to $OUT (default ./gpu-logs); the small libraries the
# build needs and the machine lacks come from .carry/root (scripts/prepare-carry.sh); the compile
# and ceilings cache lives in /tmp (the machine is bare each time anyway).
OUT=${OUT:-$PWD/gpu-logs}
mkdir -p "$OUT"
PREFIX=$PWD/.carry/root/usr
export LD_LIBRARY_PATH=$PREFIX/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export AUTOKERNEL_CACHE=${AUTOKERNEL_CACHE:-/tmp/autokernel-cache}
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
