#!/usr/bin/env bash
# The first command of the README: installs what is missing, builds, and runs the main job on
# its embedded default — `autokernel optimize --suite`: the unattended loop over the nine
# operators at their standard shapes, on the GPU when there is one (CUDA starters), on the host
# backend otherwise, with a short budget (10 minutes on a GPU, 2 on the host). Extra arguments
# go to optimize (e.g. --budget 30m, --ops rmsnorm,softmax).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ak=build/autokernel
workspace=build/suite-workspace
echo "== main job: autokernel optimize --suite (workspace $workspace)"
"$ak" optimize --suite --workspace "$workspace" --restart "$@"
exec "$ak" report --workspace "$workspace"
