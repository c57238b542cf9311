#!/usr/bin/env bash
# The unattended `autokernel optimize --suite` run on a device machine, longer than one device call
# (10 minutes): `start` builds and launches the run in its own process session (setsid), which
# outlives the call while the machine stays held; `wait` follows it for up to WAIT_S seconds;
# `finish` waits for its end, then writes the report, the progress plot, results.tsv, run.json and
# the run branch's git log to $OUT. Every phase prints the run's latest lines and a snapshot of
# results.tsv comes back each time, so a machine lost mid-run still leaves evidence. `start` runs
# the gpu tests first (gpu_tests_first in bench/gpu_env.sh: GPU_TESTS=0 skips them,
# GPU_TESTS_REGEX / GPU_TESTS_EXCLUDE narrow them); a failing test stops it, and `finish` prints
# their result last.
#   SUITE_BUDGET=20m bash bench/gpu_suite.sh start   # then: wait, ..., finish (calls seconds apart)
# The search settings (SUITE_ARGS) make every kernel search its space until it is exhausted or its
# kernel budget is spent, whatever its roofline: the point of this run is the loop, not the stop.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
phase=${1:?usage: gpu_suite.sh start|wait|finish}
AK=${AK:-$PWD/build-gpu/autokernel}
RUN_DIR=${RUN_DIR:-/tmp/suite}
WS=$RUN_DIR/workspace
SUITE_BUDGET=${SUITE_BUDGET:-20m}
SUITE_ARGS=${SUITE_ARGS:---kernel-budget 4m --patience 1000 --target 10}
WAIT_S=${WAIT_S:-540}
pid_file=$RUN_DIR/pid
log() { echo "== $(date -u +%H:%M:%S) $*"; }
running() { [[ -f $pid_file ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null; }

follow() {  # until the run ends or $1 seconds pass
  local deadline=$((SECONDS + $1))
  while running && ((SECONDS < deadline)); do sleep 5; done
  tail -n 6 "$RUN_DIR/optimize.log"
  cp "$WS/results.tsv" "$OUT/results.tsv" 2>/dev/null
  [[ -f $WS/results.tsv ]] && python3 bench/loop_rates.py "$WS/results.tsv" | tail -n 3
  if running; then log "still running (pid $(cat "$pid_file"))"; else log "run ended: $(cat "$RUN_DIR/exit" 2>/dev/null)"; fi
}

case $phase in
  start)
    { date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } | tee "$OUT/env.txt"
    if [[ ! -x $AK ]]; then log build; build_autokernel ON autokernel autokernel_gpu_tests || exit 1; fi
    # Twenty minutes of a broken harness would be wasted: the gpu tests first. A failure stops
    # here; their time limit (124) does not, as it shows nothing broken.
    gpu_tests_first
    (($? == 1)) && exit 1
    "$AK" device | tee -a "$OUT/env.txt"  # measures the ceilings once, before the clock starts
    rm -rf "$RUN_DIR" && mkdir -p "$RUN_DIR"
    echo "$GPU_TESTS_RESULT" >"$RUN_DIR/gpu-tests.txt"  # for finish, a later call
    log "optimize --suite --budget $SUITE_BUDGET $SUITE_ARGS"
    # shellcheck disable=SC2086
    setsid bash -c "\"$AK\" optimize --suite --workspace \"$WS\" --restart --budget $SUITE_BUDGET $SUITE_ARGS \
      >\"$RUN_DIR/optimize.log\" 2>&1; echo \$? >\"$RUN_DIR/exit\"" </dev/null &
    echo $! >"$pid_file"
    follow "$WAIT_S"
    ;;
  wait) follow "$WAIT_S" ;;
  finish)
    follow "$WAIT_S"
    running && { log "not finished: call finish again"; exit 3; }
    "$AK" report --workspace "$WS" | tee "$OUT/report.txt"
    "$AK" report --workspace "$WS" --json --no-plot >"$OUT/report.json"
    cp "$WS/reports/progress.png" "$OUT/progress.png" 2>/dev/null
    cp "$WS/run.json" "$RUN_DIR/optimize.log" "$OUT/"
    git -C "$WS" log --format='%h %s' >"$OUT/gitlog.txt"
    log "experiments per hour"
    python3 bench/loop_rates.py "$WS/results.tsv" | tee "$OUT/rates.txt"
    cat "$RUN_DIR/gpu-tests.txt" 2>/dev/null || echo "$GPU_TESTS_RESULT"
    ;;
  *) echo "gpu_suite.sh: unknown phase '$phase' (start, wait or finish)" >&2; exit 2 ;;
esac
