#!/usr/bin/env bash
# Fails when a C++ source of the project differs from what clang-format (.clang-format) makes of it.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' 2>/dev/null || find src include kernels tests -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh')
if ((${#files[@]})); then
  clang-format --dry-run --Werror "${files[@]}"
fi
echo "format: ${#files[@]} files clean"
