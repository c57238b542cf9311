#!/usr/bin/env bash
# The first command of the README: installs what is missing, builds, and runs the main job on its
# embedded default. With a GPU: `autokernel run --model llama` — profile the compact LLaMA (fp16,
# 8 x 512 tokens), extract its top kernels, optimize them for 10 minutes, verify the model with
# them plugged in. Without one: `autokernel optimize --suite` on the host backend (the nine
# operators' CPU starters, 2 minutes) — the CPU's kernels do not beat PyTorch's own. Extra
# arguments go to the command run (e.g. --budget 30m).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ak=build/autokernel
if "$ak" device --backend cuda --json >/dev/null 2>&1; then
  workspace=build/llama-workspace
  echo "== main job: autokernel run --model llama (workspace $workspace)"
  exec "$ak" run --model llama --input-shape 8,512 --dtype fp16 --workspace "$workspace" --restart "$@"
fi
workspace=build/suite-workspace
echo "== main job (no GPU): autokernel optimize --suite on the host backend (workspace $workspace)"
"$ak" optimize --suite --workspace "$workspace" --restart "$@"
exec "$ak" report --workspace "$workspace"
