#!/bin/sh
# An agent that never returns: it damages the kernel, then waits on a child that sleeps.
echo "half an edit" > "$AUTOKERNEL_KERNEL"
sleep 1000 &
echo $! > sleep.pid
wait
