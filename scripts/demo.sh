#!/usr/bin/env bash
# The main job from a fresh Debian 12 machine: install dependencies, build, then train the small
# CNN on Fashion-MNIST with 2 pipeline stages x 2 replicas under the DAPPLE schedule for 3 epochs.
# Extra arguments go to `loom train` (e.g. --epochs 1, --metrics metrics.jsonl, --trace trace.json).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" loom
mpi_flags=(--oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi_flags+=(--allow-run-as-root)
epochs=(--epochs 3)  # unless the arguments give their own (loom train takes each flag once)
for arg in "$@"; do [[ $arg == --epochs || $arg == --epochs=* ]] && epochs=(); done
exec mpirun "${mpi_flags[@]}" -np 4 "$root/build/apps/loom" train --model cnn --data fashion-mnist \
  --stages 2 --replicas 2 --schedule dapple "${epochs[@]}" "$@"
