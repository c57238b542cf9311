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

# The GPU's clocks, load, temperature, power and clock-event reasons every half second of the call
# (one nvidia-smi, in the background, ended by a watcher when the script that sourced this ends),
# into $OUT/gpu-clocks.csv; clock_summary prints what its busy samples say (bench/gpu_clocks.py),
# so that a machine that slowed under load says so beside its figures.
if [[ -z ${AK_CLOCK_LOG:-} ]] && command -v nvidia-smi >/dev/null 2>&1; then
  export AK_CLOCK_LOG=$OUT/gpu-clocks.csv
  clock_fields=timestamp,clocks.sm,clocks.mem,utilization.gpu,temperature.gpu,power.draw,clocks_event_reasons.active
  nvidia-smi -i 0 --query-gpu=$clock_fields --format=csv,noheader >/dev/null 2>&1 ||
    clock_fields=${clock_fields%,clocks_event_reasons.active}  # an older driver's name for them differs
  echo "$clock_fields" >"$AK_CLOCK_LOG"
  (
    nvidia-smi -i 0 --query-gpu=$clock_fields --format=csv,noheader,nounits -lms 500 >>"$AK_CLOCK_LOG" 2>/dev/null &
    logger=$!
    while kill -0 $$ 2>/dev/null; do sleep 1; done
    kill $logger 2>/dev/null
  ) </dev/null >/dev/null 2>&1 &
fi
clock_summary() {
  [[ -n ${AK_CLOCK_LOG:-} ]] && python3 bench/gpu_clocks.py "$AK_CLOCK_LOG"
  return 0
}

# machine_summary: the date, the GPU (name, driver, clocks), nvcc's release and PyTorch's version,
# for the head of a script's log. (No commit: the copy's .git lags the files sent, and printed
# effb8ee for tree 428e21b on 2026-12-07; the tree above is what ran.)
machine_summary() {
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  nvcc --version | tail -2; python3 -c 'import torch; print("torch", torch.__version__)'
}

# build_autokernel [TESTS=ON|OFF] [ninja targets...]: configure build-gpu (warnings as errors) and
# build the targets (default: the CLI); the log goes to $OUT/build.log (a script's later builds,
# such as gpu_tests_first's, append to it), its tail to the terminal on failure. Returns non-zero
# on failure, so callers say `build_autokernel ... || exit 1`.
# AK_PREBUILT=1 (bench/gpu_pair.sh, which built everything once): nothing is configured or built,
# so that two scripts running at once on two GPUs do not reconfigure one tree under each other.
build_autokernel() {
  [[ ${AK_PREBUILT:-0} == 1 ]] && return 0
  local tests=${1:-OFF}
  shift || true
  local targets=("$@")
  [[ ${#targets[@]} -gt 0 ]] || targets=(autokernel)
  [[ -n ${ak_build_logged:-} ]] || : >"$OUT/build.log"
  ak_build_logged=1
  if ! { cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DAK_WERROR=ON -DAK_BUILD_TESTS="$tests" \
           -DCMAKE_PREFIX_PATH="$PREFIX" && ninja -C build-gpu "${targets[@]}"; } >>"$OUT/build.log" 2>&1; then
    tail -30 "$OUT/build.log"
    return 1
  fi
  # Whether the GPU tests were built too, so that gpu_tests_first need not configure again.
  [[ $tests == ON && " ${targets[*]} " =~ " "(all|autokernel_gpu_tests)" " ]] && ak_tests_built=1
  return 0
}

# gpu_tests_first [LIMIT_S]: `ctest -L gpu`, run by every bench/gpu_*.sh right after its build and
# before its measurements, so that each figure in docs/benchmarks.md stands beside the GPU tests
# of the tree that made it. Builds the GPU tests where the script's build did not, runs them one
# at a time (they time kernels) into $OUT/ctest-gpu.log, prints the tests that did not pass and
# the summary, and sets GPU_TESTS_RESULT, one line for the script's final table, e.g.
# "ctest -L gpu -E kernelbench: 31/31 passed (412 s)". Call it in the script's own shell, not in
# a pipeline, or GPU_TESTS_RESULT is lost with the subshell.
#   GPU_TESTS=0          skip them (docs/benchmarks.md then says why)
#   GPU_TESTS_REGEX      only the tests matching it (ctest -R)
#   GPU_TESTS_EXCLUDE    not the tests matching it (ctest -E)
#   GPU_TESTS_TIMEOUT    seconds for all of them (default LIMIT_S, else 300), so that the script's
#                        own work still fits in the call; the result says where the limit cut in
#   GPU_TESTS_VERBOSE=1  every test's output in the log (ctest -V), e.g. the figures a test prints
# Returns 0 when every test that ran passed (or GPU_TESTS=0), 124 at the time limit, 1 otherwise.
# AK_GPU_TESTS_DONE (bench/gpu_pair.sh, which ran them once for both of its commands) is taken as
# the result, and nothing runs.
GPU_TESTS_RESULT="ctest -L gpu: not run"
gpu_tests_first() {
  if [[ -n ${AK_GPU_TESTS_DONE:-} ]]; then
    GPU_TESTS_RESULT=$AK_GPU_TESTS_DONE
    echo "gpu tests: $GPU_TESTS_RESULT"
    return 0
  fi
  local log=$OUT/ctest-gpu.log
  rm -f "$log"  # an earlier run's, in a reused $OUT, is not this tree's
  if [[ ${GPU_TESTS:-1} == 0 ]]; then
    GPU_TESTS_RESULT="ctest -L gpu: skipped (GPU_TESTS=0)"
    echo "gpu tests: skipped (GPU_TESTS=0)"
    return 0
  fi
  local limit=${GPU_TESTS_TIMEOUT:-${1:-300}} rc summary
  # A deadline's remainder can reach zero, and `timeout 0` would mean no limit.
  [[ $limit =~ ^-?[0-9]+$ ]] && ((limit < 10)) && limit=10
  local filters=(${GPU_TESTS_REGEX:+-R "$GPU_TESTS_REGEX"} ${GPU_TESTS_EXCLUDE:+-E "$GPU_TESTS_EXCLUDE"})
  local what="ctest -L gpu${filters[*]:+ ${filters[*]}}"
  if [[ ${ak_tests_built:-0} != 1 ]]; then
    echo "== build the gpu tests"
    if ! build_autokernel ON autokernel autokernel_gpu_tests; then
      GPU_TESTS_RESULT="$what: not run, the tests' build failed (build.log)"
      echo "$GPU_TESTS_RESULT"
      return 1
    fi
  fi
  echo "== $what (limit ${limit}s)"
  local start=$SECONDS
  # -k: whatever ignores the TERM (a test stuck in the driver) is killed 10 s later.
  timeout -k 10 "$limit" ctest --test-dir build-gpu -L gpu "${filters[@]}" --output-on-failure \
    ${GPU_TESTS_VERBOSE:+-V} >"$log" 2>&1
  rc=$?
  ((rc == 137)) && rc=124
  # ctest's line per finished test: " 3/31 Test  #3: Suite.Name ......   Passed   1.02 sec" (or
  # "***Failed", "***Timeout", "***Exception: ...", "***Not Run (Disabled)", "***Skipped").
  summary=$(awk -v cut=$((rc == 124)) '
    /^ *Start +[0-9]+: / { started++; last = $3 }
    /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / {
      split($1, nm, "/"); total = nm[2]; done++
      if ($0 ~ / Passed +[0-9.]+ sec/) passed++
      else if ($0 ~ /Disabled|Skipped/) skipped++
      else { failed++; names = names " " $4 }
    }
    END {
      if (cut) printf "%d of %s run: %d passed", done, total ? total : "?", passed
      else printf "%d/%d passed", passed, total
      if (skipped) printf ", %d skipped or disabled", skipped
      if (failed) printf ", %d FAILED:%s", failed, names
      if (cut && started > done) printf "; cut off in %s", last
    }' "$log")
  grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*|[0-9]+% tests passed|No tests were found' "$log" | tail -20
  if ((rc == 124)); then
    GPU_TESTS_RESULT="$what: stopped at its ${limit}s limit (GPU_TESTS_TIMEOUT), $summary"
  elif grep -q "No tests were found" "$log"; then
    GPU_TESTS_RESULT="$what: no tests matched"
    rc=1
  elif ((rc != 0)) || [[ $summary == *FAILED* ]]; then
    GPU_TESTS_RESULT="$what: $summary (ctest exit $rc, $((SECONDS - start)) s)"
    rc=1
  else
    GPU_TESTS_RESULT="$what: $summary ($((SECONDS - start)) s)"
  fi
  echo "$GPU_TESTS_RESULT"
  return $rc
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
