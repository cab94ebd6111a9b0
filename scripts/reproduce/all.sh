#!/usr/bin/env bash
# Every paper claim scripts/reproduce/ covers, one after another (never two benchmarks at once),
# each writing DIR/NAME.csv and DIR/NAME.png; the output of each goes to DIR/NAME.log as well.
# docs/REPRODUCING.md puts the figures next to the papers'.
#
# Usage: scripts/reproduce/all.sh [LOOM_BINARY] [--quick] [--out DIR]
#   (about 30 minutes on a loaded 2-core machine; under 15 with --quick)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
args=()
out=$here/../../results
while [ $# -gt 0 ]; do
  case $1 in
    --out) [ $# -ge 2 ] || { echo "all.sh: --out needs a directory" >&2; exit 2; }; out=$2; args+=(--out "$2"); shift ;;
    *) args+=("$1") ;;
  esac
  shift
done
mkdir -p "$out"
scripts=(planner_table comm_bytes boundary_bytes allreduce_hierarchy bubble_vs_microbatches gpipe_vs_dapple
         time_to_accuracy weight_stashing schedule_memory)
started=$(date +%s)
echo "== all.sh: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
failed=()
for script in "${scripts[@]}"; do
  echo "== $script"
  if ! "$here/$script.sh" "${args[@]}" 2>&1 | tee "$out/$script.log"; then
    failed+=("$script")
  fi
done
echo "== all.sh: ${#scripts[@]} scripts in $(( $(date +%s) - started )) s (load average now" \
  "$(cut -d' ' -f1-3 /proc/loadavg)); results in $out"
if [ ${#failed[@]} -gt 0 ]; then
  echo "all.sh: failed: ${failed[*]} (see $out/NAME.log)" >&2
  exit 1
fi
