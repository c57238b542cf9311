#!/bin/sh
# An agent that finds nothing to change.
cat > /dev/null
echo "nothing to improve"
exit 0
