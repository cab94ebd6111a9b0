#!/usr/bin/env bash
# Bubble fraction against the number of micro-batches, from `loom simulate` with balanced stages
# (F = 1 ms, B = 2 ms, so BI = BW = F for ZB-H1) and free communication, next to the closed forms
# of docs/schedules.md. Prints the Markdown table that docs/schedules.md shows.
# Usage: scripts/reproduce/bubble_table.sh [path/to/loom]   (default: build/apps/loom)
# (scripts/reproduce/bubble_vs_microbatches.sh measures the same against `loom train` and runs this too.)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
loom=${1:-${LOOM:-$root/build/apps/loom}}
[ -x "$loom" ] || { echo "no loom executable at $loom (build it: scripts/build.sh loom)" >&2; exit 1; }

bubble() {  # bubble fraction of one schedule
  printf '%.4f' "$("$loom" simulate --json --forward-ms 1 --backward-ms 2 "$@" | jq -r '.bubble_fraction')"
}
peak0() {  # peak in-flight micro-batches on stage 0
  "$loom" simulate --json "$@" | jq -r '.per_stage[0].peak_activation_microbatches'
}

echo "| S | M | (S−1)/(M+S−1) | gpipe | dapple | interleaved v=2 | (S−1)/(2M+S−1) | zb-h1 | (S−1)/(3M+S−1) | peak act. stage 0: gpipe / dapple / zb-h1 |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for S in 2 4 8; do
  for M in 1 2 4 8 16 32 64; do
    common=(--stages "$S" --microbatches "$M")
    interleaved="—"
    if (( M % S == 0 )); then interleaved=$(bubble --schedule interleaved --chunks 2 "${common[@]}"); fi
    interleaved_formula="—"
    if (( M % S == 0 )); then interleaved_formula=$(printf '%.4f' "$(echo "($S-1)/(2*$M+$S-1)" | bc -l)"); fi
    printf '| %d | %d | %.4f | %s | %s | %s | %s | %s | %.4f | %s / %s / %s |\n' "$S" "$M" \
      "$(echo "($S-1)/($M+$S-1)" | bc -l)" \
      "$(bubble --schedule gpipe "${common[@]}")" "$(bubble --schedule dapple "${common[@]}")" \
      "$interleaved" "$interleaved_formula" \
      "$(bubble --schedule zb-h1 "${common[@]}")" "$(echo "($S-1)/(3*$M+$S-1)" | bc -l)" \
      "$(peak0 --schedule gpipe "${common[@]}")" "$(peak0 --schedule dapple "${common[@]}")" \
      "$(peak0 --schedule zb-h1 "${common[@]}")"
  done
done
