#!/bin/sh
# A well-behaved agent: records what it was given, then edits the kernel in place.
set -e
cat > received-stdin.md
cp "$AUTOKERNEL_PROMPT" received-prompt.md
printf '%s\n%s\n%s\n%s\n' "$AUTOKERNEL_PROMPT" "$AUTOKERNEL_KERNEL" "$AUTOKERNEL_OP" "$(pwd)" > received-env.txt
sed -i 's/THREADS 256/THREADS 512/' "$AUTOKERNEL_KERNEL"
echo "raised THREADS to 512"
