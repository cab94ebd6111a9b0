#!/usr/bin/env bash
# Fails unless what the device tool carries to the GPU machine fits: the working tree it copies
# (tracked files and untracked ones git does not ignore) plus each carried FILE, against
# GPU_BUNDLE_LIMIT_MB (default 60, under the tool's 64 MiB so that a few files added later still fit).
# Usage: scripts/gpu_carry_size.sh [FILE...]     e.g. the bundle from scripts/gpu_bundle.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
limit_mb=${GPU_BUNDLE_LIMIT_MB:-60}
# (A tracked file deleted in the working tree is not carried: stat skips it.)
tree=$(git -C "$root" ls-files -z --cached --others --exclude-standard |
  (cd "$root" && xargs -0 stat -c %s 2>/dev/null || true) | awk '{ s += $1 } END { print s + 0 }')
carried=0
for file in "$@"; do
  [ -f "$file" ] || { echo "gpu_carry_size: $file: no such file" >&2; exit 1; }
  carried=$((carried + $(stat -c %s "$file")))
done
total=$((tree + carried))
awk -v t="$tree" -v c="$carried" -v n=$# -v l="$limit_mb" 'BEGIN {
  printf "carried to the GPU machine: working tree %.1f MiB + %d file(s) %.1f MiB = %.1f MiB (limit %d MiB)\n",
    t / 1048576, n, c / 1048576, (t + c) / 1048576, l }'
((total <= limit_mb * 1048576)) || { echo "gpu_carry_size: over the limit of $limit_mb MiB" >&2; exit 1; }
