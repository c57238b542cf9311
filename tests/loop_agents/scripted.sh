#!/bin/sh
# A scripted "agent" for the loop's tests: each call does the next thing on its list, counting
# calls in the file named by $1 (outside the workspace, which the loop resets).
#   1: breaks the kernel (the engine must record COMPILE_ERROR and restore it)
#   2: never returns (the engine must time it out and go on)
#   3: makes the starter faster (the engine must keep it: one commit)
#   4+: changes nothing
count=$(( $(cat "$1" 2>/dev/null || echo 0) + 1 ))
echo "$count" > "$1"
grep -q "ak_launch" "$AUTOKERNEL_PROMPT" || exit 3   # the prompt carries the kernel
case "$count" in
  1) echo "this is not C++" > "$AUTOKERNEL_KERNEL" ;;
  2) sleep 1000 ;;
  3) sed -i 's/^#define REPEAT 8$/#define REPEAT 1/' "$AUTOKERNEL_KERNEL" ;;
esac
exit 0
