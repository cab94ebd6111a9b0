#!/usr/bin/env bash
# PipeDream claim: pipelining communicates far less than data parallelism (paper: up to 95 % fewer
# bytes per training sample for VGG-16). For the PipeDream profiles (VGG-16, ResNet-50, AlexNet,
# GNMT-8, GNMT-16), the strategy of `loom plan --planner pipedream --json` is set against data
# parallelism on the same devices, in bytes communicated per training sample, summed over workers:
#   DP          2(n-1)/n |W| per worker per minibatch of b samples on each of n workers
#               -> 2(n-1)|W| / (n b) per sample
#   PipeDream   per cut k: the activation forward and its gradient back, 2 a_k / b per sample;
#               per stage s with r_s > 1 replicas: its weight sync, 2(r_s-1)|W_s| / (r_s b)
# with b the per-worker minibatch = the profiled batch (PipeDream's runtime), a_k the bytes crossing
# cut k and |W_s| the stage's parameter bytes (fp32 gradients), read from the same graph.txt with
# the planner's rules (graph_chain.py; the layer count is checked against the plan).
# Clusters (PipeDream paper): 4 GPUs of a PCIe server (1x4), Cluster-A (4x4, PCIe, 10 Gb/s) and
# Cluster-B (2x8, NVLink, 25 Gb/s).
#
# Usage: scripts/reproduce/comm_bytes.sh [LOOM_BINARY] [--quick] [--out DIR]
#   --quick: VGG-16 and AlexNet only
# Environment: PROFILES (default data/profiles in the repository), KEEP
set -euo pipefail
source "$(dirname "$0")/common.sh"
repro_init comm_bytes "$@"
profiles=${PROFILES:-$root/data/profiles}
[ -d "$profiles/pipedream" ] || { echo "comm_bytes.sh: no published profiles at $profiles/pipedream (set PROFILES)" >&2; exit 1; }

# profile, profiled batch (docs/planner.md: from the input tensors; GNMT's cannot be told, 64 is
# PipeDream's GNMT minibatch per GPU)
models=("vgg16 128" "alexnet 256")
[ "$quick" = 1 ] || models+=("resnet50 128" "gnmt 64" "gnmt_large 64")
clusters=("1x4-pcie 1x4:intra=10GB/s,inter=10Gb/s,mem=16GB" "cluster-A 4x4:intra=10GB/s,inter=10Gb/s,mem=16GB"
          "cluster-B 2x8:intra=130GB/s,inter=25Gb/s,mem=16GB")

for entry in "${models[@]}"; do
  read -r name batch <<<"$entry"
  [ -f "$profiles/pipedream/$name.txt" ] || { echo "comm_bytes.sh: missing profile $profiles/pipedream/$name.txt" >&2; exit 1; }
  for cluster in "${clusters[@]}"; do
    read -r label spec <<<"$cluster"
    devices=$(( ${spec%%x*} * $(echo "$spec" | sed 's/^[0-9]*x\([0-9]*\).*/\1/') ))
    "$loom" plan --profile "$profiles/pipedream/$name.txt" --profile-batch "$batch" --cluster "$spec" \
      --global-batch $((batch * devices)) --planner pipedream --json >"$work/$name@$label@$batch.json"
  done
done

"$python" - "$work" "$csv" "$profiles/pipedream" <<'EOF'
import sys
import graph_chain, tables

work, out, profiles = sys.argv[1:]

rows = []
for name, (cluster, batch), result, plan, layers in graph_chain.planned_chains(work, profiles):
    batch = float(batch)
    devices = sum(s["replicas"] for s in plan["stages"])
    weights = sum(l["parameter_bytes"] for l in layers)
    dp = 2 * (devices - 1) * weights / (devices * batch)
    activations = sum(2 * layers[s["layers"][1]]["boundary_bytes"] / batch for s in plan["stages"][:-1])
    sync = sum(2 * (s["replicas"] - 1) * sum(l["parameter_bytes"] for l in layers[s["layers"][0]:s["layers"][1] + 1])
               / (s["replicas"] * batch) for s in plan["stages"])
    pipedream = activations + sync
    rows.append({"model": name, "cluster": cluster, "devices": devices, "profiled_batch": int(batch),
                 "pipedream_strategy": plan["strategy"], "weight_bytes": int(weights),
                 "dp_bytes_per_sample": round(dp), "pipedream_bytes_per_sample": round(pipedream),
                 "pipedream_activation_bytes_per_sample": round(activations),
                 "pipedream_weight_sync_bytes_per_sample": round(sync),
                 "reduction_percent": round(100 * (1 - pipedream / dp), 2)})
tables.write_csv(out, rows)

mb = lambda v: f"{v / 1e6:.2f}"
print("| model | cluster | PipeDream strategy | DP MB/sample | PipeDream MB/sample (activations + weight sync) | reduction |")
print("|---|---|---|---:|---:|---:|")
for r in rows:
    strategy = tables.strategy_cell(r["pipedream_strategy"], 48)
    print(f"| {r['model']} | {r['cluster']} | {strategy} | {mb(r['dp_bytes_per_sample'])} "
          f"| {mb(r['pipedream_bytes_per_sample'])} ({mb(r['pipedream_activation_bytes_per_sample'])} + "
          f"{mb(r['pipedream_weight_sync_bytes_per_sample'])}) | {r['reduction_percent']:.1f} % |")
best = max(rows, key=lambda r: r["reduction_percent"])
print(f"\nlargest reduction: {best['reduction_percent']:.1f} % ({best['model']} on {best['cluster']}; paper: up to 95 % for VGG-16)")
EOF
repro_plot comm_bytes
repro_finish
