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

# The git tree of the files sent (tracked and untracked, not ignored), through a scratch index: the
# device's copy of .git is not the checkout's, so its HEAD says nothing. Match a commit to a call
# with `git rev-parse COMMIT^{tree}`.
if [[ -z ${AK_TREE_PRINTED:-} ]]; then
  scratch_index=$(mktemp -u)
  tree=$(GIT_INDEX_FILE=$scratch_index git -c safe.directory='*' add -A 2>/dev/null &&
    GIT_INDEX_FILE=$scratch_index git -c safe.directory='*' write-tree 2>/dev/null) || tree="unknown (no git)"
  rm -f "$scratch_index"
  echo "== tree $tree"
  echo "$tree" >"$OUT/tree.txt"
  export AK_TREE_PRINTED=1
fi

# machine_summary: the date, the GPU (name, driver, clocks), nvcc's release and PyTorch's version,
# for the head of a script's log.
machine_summary() {
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  nvcc --version | tail -2; python3 -c 'import torch; print("torch", torch.__version__)'
  git log -1 --format='commit %H' 2>/dev/null || true
}

# build_autokernel [TESTS=ON|OFF] [ninja targets...]: configure build-gpu (warnings as errors) and
# build the targets (default: the CLI); the log goes to $OUT/build.log, its tail to the terminal
# on failure. Returns non-zero on failure, so callers say `build_autokernel ... || exit 1`.
# AK_PREBUILT=1 (bench/gpu_pair.sh, which built everything once): nothing is configured or built,
# so that two scripts running at once on two GPUs do not reconfigure one tree under each other.
build_autokernel() {
  [[ ${AK_PREBUILT:-0} == 1 ]] && return 0
  local tests=${1:-OFF}
  shift || true
  local targets=("$@")
  [[ ${#targets[@]} -gt 0 ]] || targets=(autokernel)
  if ! { cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DAK_WERROR=ON -DAK_BUILD_TESTS="$tests" \
           -DCMAKE_PREFIX_PATH="$PREFIX" && ninja -C build-gpu "${targets[@]}"; } >"$OUT/build.log" 2>&1; then
    tail -30 "$OUT/build.log"
    return 1
  fi
}

# use_carried_wheels: installs the wheels in .carry/wheels (Liger-Kernel, ninja) and .carry/wheels/hf
# (transformers and its dependencies, scripts/prepare-carry.sh) into /tmp/ak-wheels, without
# their dependencies (PyTorch's environment has the rest), and puts them on PYTHONPATH (ninja,
# which builds the custom ops' native kernels, on PATH). Absent
# wheels are skipped: the rows that need them say "absent".
use_carried_wheels() {
  local wheels
  shopt -s nullglob
  wheels=(.carry/wheels/*.whl .carry/wheels/hf/*.whl)
  shopt -u nullglob
  ((${#wheels[@]})) || return 0
  python3 -m pip install --quiet --no-index --no-deps --target /tmp/ak-wheels "${wheels[@]}" 2>&1 | tail -3
  export PYTHONPATH=/tmp/ak-wheels${PYTHONPATH:+:$PYTHONPATH}
  export PATH=$PATH:/tmp/ak-wheels/bin
}
