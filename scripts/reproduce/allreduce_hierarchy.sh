#!/usr/bin/env bash
# DAPPLE claim 5: the hierarchical allreduce (reduce-scatter inside a node, allreduce across
# nodes, allgather inside) against a flat ring when the inter-node link is 10x slower than the
# intra-node one, measured with `loom bench allreduce` next to the link model (allreduce_cost.h):
#   ring          T = 2S(n-1) / (n B_inter)
#   hierarchical  T = 2S(G-1)/(G B_intra) + 2S(N-1)/(N G B_inter)     (N nodes of G ranks, n = NG)
# "Nodes" are blocks of ranks on this one machine (--ranks-per-node) and the links are shaped in
# process (--shape-intra-gbps / --shape-inter-gbps, link_shaper.h: each rank owns one outgoing
# intra-node and one inter-node link, a transfer occupies it for bytes / bandwidth). The shaped
# speeds are far below what the machine does unshaped, so link time dominates.
# (scripts/cluster/ has real network-namespace hosts with tc-shaped links; they need root and
# are measured in docs/comm.md, not here.)
#
# Usage: scripts/reproduce/allreduce_hierarchy.sh [LOOM_BINARY] [--quick] [--out DIR]
#   --quick: 2 nodes x 2 ranks, 1 and 4 MB
# Environment: INTRA_GBPS (0.1), INTER_GBPS (0.01), ROUNDS (5; 3 with --quick)
set -euo pipefail
source "$(dirname "$0")/common.sh"
repro_init allreduce_hierarchy "$@"
intra=${INTRA_GBPS:-0.1}
inter=${INTER_GBPS:-0.01}
layouts=("2 2" "2 4" "4 2")   # nodes, ranks per node
sizes=(1M 4M 16M)
rounds=${ROUNDS:-5}
if [ "$quick" = 1 ]; then
  layouts=("2 2")
  sizes=(1M 4M)
  rounds=${ROUNDS:-3}
fi
echo "# links: intra-node ${intra} GB/s, inter-node ${inter} GB/s per rank; median of $rounds rounds of the slowest rank"

for layout in "${layouts[@]}"; do
  read -r nodes per_node <<<"$layout"
  for size in "${sizes[@]}"; do
    "${mpi[@]}" -n $((nodes * per_node)) "$loom" bench allreduce --json --ranks-per-node "$per_node" \
      --shape-intra-gbps "$intra" --shape-inter-gbps "$inter" --algorithms ring,hierarchical \
      --min-bytes "$size" --max-bytes "$size" --warmup 1 --iterations 1 --rounds "$rounds" \
      >"$work/${nodes}x${per_node}-$size.json"
  done
done

"$python" - "$work" "$csv" <<'EOF'
import glob, json, os, sys
import tables

work, out = sys.argv[1:]
rows = []
for path in sorted(glob.glob(os.path.join(work, "*.json"))):
    nodes, per_node = map(int, os.path.basename(path).split("-")[0].split("x"))
    text = open(path).read()
    for r in json.loads(text[text.index("["):]):
        rows.append({"nodes": nodes, "ranks_per_node": per_node, "ranks": r["ranks"], "bytes": r["bytes"],
                     "algorithm": r["algorithm"], "measured_ms": round(r["time_us"] / 1e3, 3),
                     "model_ms": round(r["model_us"] / 1e3, 3),
                     "measured_over_model": round(r["time_us"] / r["model_us"], 3)})
rows.sort(key=lambda r: (r["ranks"], r["nodes"], r["bytes"], r["algorithm"] != "ring"))
tables.write_csv(out, rows)

print("| nodes x ranks | bytes | ring measured ms | ring model ms | hier. measured ms | hier. model ms | speed-up measured | speed-up model |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
pairs = {}
for r in rows:
    pairs.setdefault((r["nodes"], r["ranks_per_node"], r["bytes"]), {})[r["algorithm"]] = r
for (nodes, per_node, size), p in pairs.items():
    ring, hier = p["ring"], p["hierarchical"]
    print(f"| {nodes} x {per_node} | {size // 2**20} M | {ring['measured_ms']:.1f} | {ring['model_ms']:.1f} "
          f"| {hier['measured_ms']:.1f} | {hier['model_ms']:.1f} | {ring['measured_ms'] / hier['measured_ms']:.2f} "
          f"| {ring['model_ms'] / hier['model_ms']:.2f} |")
EOF
repro_plot allreduce_hierarchy
repro_finish
