#!/usr/bin/env bash
# The second command of the README (and what CI runs): installs what is missing, builds with
# warnings as errors, checks formatting, and runs the CPU-labelled tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
scripts/check-format.sh
ctest --test-dir build -L cpu --output-on-failure -j "$(nproc)" --timeout 900
