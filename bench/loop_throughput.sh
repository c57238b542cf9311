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
"$ak" report --workspace "$workspace" --json --no-plot | python3 -c '
import collections, json, sys
report = json.load(sys.stdin)
s = report["summary"]
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
header, rows = rows[0], rows[1:]
status = collections.Counter(r[header.index("status")] for r in rows)
print(f"loop throughput: {s[\"experiments\"]} experiments in {s[\"elapsed_s\"]:.0f} s = "
      f"{s[\"experiments_per_hour\"]:.0f} experiments/hour (" + ", ".join(f"{k} {v}" for k, v in sorted(status.items())) + ")")
' "$workspace/results.tsv"
