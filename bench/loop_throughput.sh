#!/usr/bin/env bash
# Experiments per hour of the unattended loop: `autokernel optimize --suite` over the
# memory-bound operators with the full harness on every candidate (five stages + anti-cheat
# checks + timing), never stopping early for the roofline or patience, for BUDGET (default 5m).
# Prints the run's report and one line: experiments, wall time, experiments/hour, by status.
#   AK=build/autokernel BUDGET=5m OPS=rmsnorm,softmax bench/loop_throughput.sh [optimize args]
set -euo pipefail
cd "$(dirname "$0")/.."
ak=${AK:-build/autokernel}
budget=${BUDGET:-5m}
ops=${OPS:-rmsnorm,softmax,layernorm,reduce,cross_entropy,rotary_embedding}
workspace=${WORKSPACE:-$(mktemp -d)/workspace}
"$ak" optimize --suite --ops "$ops" --workspace "$workspace" --restart --budget "$budget" \
  --target 10 --patience 100000 "$@"
"$ak" report --workspace "$workspace"
"$ak" report --workspace "$workspace" --json --no-plot >"$workspace/../report.json"
python3 - "$workspace/../report.json" "$workspace/results.tsv" <<'PY'
import collections, csv, json, sys
summary = json.load(open(sys.argv[1]))["summary"]
rows = list(csv.DictReader(open(sys.argv[2]), delimiter="\t"))
status = collections.Counter(r["status"] for r in rows)
seconds = sorted(float(r["elapsed_s"]) for r in rows)
gaps = sorted(b - a for a, b in zip(seconds, seconds[1:]))
median_gap = gaps[len(gaps) // 2] if gaps else 0
print(f"loop throughput: {summary['experiments']} experiments in {summary['elapsed_s']:.0f} s = "
      f"{summary['experiments_per_hour']:.0f} experiments/hour; median {median_gap:.2f} s between results; "
      + ", ".join(f"{k} {v}" for k, v in sorted(status.items())))
PY
