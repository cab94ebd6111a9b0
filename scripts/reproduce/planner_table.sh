#!/usr/bin/env bash
# DAPPLE planner vs PipeDream planner vs data parallelism on the DAPPLE paper's five models and its
# clusters A, B, C (issue 6, "Measured"): runs `loom plan --json` on the published V100 profiles and
# prints the Markdown table of docs/planner.md — speedups over one device (predicted by the cost
# model; the schedule simulator's replay in parentheses) and strategies, and the ratios the paper's
# headline claims are about.
#
# Usage: scripts/reproduce/planner_table.sh [path/to/loom]           (default: build/apps/loom)
# Environment: PROFILES (../shared/profiles next to the repository), CLUSTERS ("A B C"),
#   OVERLAP (1: pass --overlap, allreduce during the last backward, to every planner),
#   KEEP (a directory that keeps every `loom plan --json` output and plan file)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
loom=${1:-${LOOM:-$root/build/apps/loom}}
[ -x "$loom" ] || { echo "no loom executable at $loom (build it: scripts/build.sh loom)" >&2; exit 1; }
profiles=${PROFILES:-$root/../shared/profiles}
[ -d "$profiles/dapple" ] || { echo "no profiles at $profiles (set PROFILES)" >&2; exit 1; }
clusters=${CLUSTERS:-A B C}
keep=${KEEP:-$(mktemp -d)}
extra=()
[ "${OVERLAP:-0}" = 1 ] && extra+=(--overlap)
mkdir -p "$keep"

# model profile and global batch (the paper's batch sizes are of this order: 128 for the
# transformers and AmoebaNet, 1024 for GNMT and VGG)
models=("bert-48-pbs-2 128" "xlnet-36-pbs-1 128" "amoeba-36-pbs-1 128" "gnmt-16-pbs-64 1024" "vgg-19-pbs-32 1024")

echo "| model | cluster | B | best DP: speedup, M | PipeDream planner: speedup | strategy | DAPPLE planner: speedup | strategy, M, placement | DAPPLE / PipeDream | DAPPLE / best DP | planning ms |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for entry in "${models[@]}"; do
  read -r name batch <<<"$entry"
  for cluster in $clusters; do
    out="$keep/$name-$cluster.json"
    "$loom" plan --profile "$profiles/dapple/$name.txt" --cluster "$cluster" --global-batch "$batch" \
      --planner all --json --out "$keep/$name-$cluster.plan.json" "${extra[@]}" >"$out"
    jq -r --arg name "$name" --arg cluster "$cluster" --arg batch "$batch" '
      def row(p): .planners[] | select(.planner == p);
      def code(s): "`" + (s | gsub(" \\| "; " \\| ")) + "`";
      def x(v): if v == null then "—" else (v * 100 | round / 100 | tostring) + "×" end;
      def sim(r): "(" + x(.single_device_step_ms / r.simulated_step_ms) + ")";
      (row("dapple")) as $d | (row("pipedream")) as $p |
      ([row("dp"), row("dp-overlap")] | map(select(.feasible)) | min_by(.predicted_step_ms)) as $dp |
      "| \($name) | \($cluster) | \($batch) | " +
      (if $dp == null then "does not fit" else x($dp.speedup) + " " + sim($dp) + ", M=\($dp.microbatches)" +
        (if $dp.planner == "dp-overlap" then " (overlap)" else "" end) end) + " | " +
      (if $p.feasible then x($p.speedup) + " " + sim($p) else "does not fit" end) + " | " + code($p.strategy) + " M=\($p.microbatches) | " +
      x($d.speedup) + " " + sim($d) + " | " + code($d.strategy) + " M=\($d.microbatches), \($d.placement) | " +
      (if $p.feasible then x($p.predicted_step_ms / $d.predicted_step_ms) + " " +
        "(" + x($p.simulated_step_ms / $d.simulated_step_ms) + ")" else "—" end) + " | " +
      (if $dp == null then "—" else x($dp.predicted_step_ms / $d.predicted_step_ms) + " " +
        "(" + x($dp.simulated_step_ms / $d.simulated_step_ms) + ")" end) + " | " +
      "\($d.planning_ms | round) |"' "$out"
  done
done
echo
echo "(outputs kept in $keep)" >&2
