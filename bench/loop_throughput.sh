#!/usr/bin/env bash
# Experiments per hour of the unattended loop: `autokernel optimize --suite` over the
# memory-bound operators with the full harness on every candidate (five stages + anti-cheat
# checks + timing), never stopping early for the roofline or patience, for BUDGET (default 5m).
# Prints the run's report and its experiments/hour per kernel and in all (bench/loop_rates.py).
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
python3 bench/loop_rates.py "$workspace/results.tsv"
