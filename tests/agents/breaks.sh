#!/bin/sh
# An agent that truncates the kernel halfway through an edit and then fails.
truncate -s 10 "$AUTOKERNEL_KERNEL"
echo "gave up halfway" >&2
exit 1
