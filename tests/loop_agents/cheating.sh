#!/bin/sh
# A scripted "agent" that cheats, for the loop's tests: each call puts the next kernel of the
# cheat battery (tests/kernels/cheats) in place, its includes pointed back at the battery.
# Counts calls in the file named by $1 (outside the workspace, which the loop resets); $2 "cuda"
# takes the CUDA cheats (a .cu kernel on the GPU) instead of the host ones.
#   1: forges a verdict on every pipe and socket    3: starts a process (at load time; CUDA: at launch)
#   2: skips the work once timed runs begin          4+: changes nothing
count=$(( $(cat "$1" 2>/dev/null || echo 0) + 1 ))
echo "$count" > "$1"
kernels=$(cd "$(dirname "$0")/../kernels" && pwd)
case "${2:-host}:$count" in
  host:1) cheat=forge_channel.cpp ;;
  host:2) cheat=skip_after_stages.cpp ;;
  host:3) cheat=fork_at_load.cpp ;;
  cuda:1) cheat=cuda_forge_channel.cu ;;
  cuda:2) cheat=cuda_skip_after_stages.cu ;;
  cuda:3) cheat=cuda_fork.cu ;;
  *) exit 0 ;;
esac
sed -e "s|\"../reduce_skeleton.h\"|\"$kernels/reduce_skeleton.h\"|" \
    -e "s|\"../cuda_reduce.cuh\"|\"$kernels/cuda_reduce.cuh\"|" \
    -e "s|\"hidden_calls.h\"|\"$kernels/cheats/hidden_calls.h\"|" \
    "$kernels/cheats/$cheat" > "$AUTOKERNEL_KERNEL"
exit 0
