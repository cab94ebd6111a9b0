#!/usr/bin/env bash
# DAPPLE claim 4 (the published-profile half): at the cuts the DAPPLE planner chooses, the
# activations that cross a stage boundary are far smaller than the gradients data parallelism
# would allreduce, which is why pipelining across a slow link pays. For the paper's five models
# on clusters A, B and C: `loom plan --planner dapple --json`, then per plan
#   cut_bytes_per_microbatch   the largest activation crossing one of its cuts, per micro-batch
#                              (boundary bytes of the profile scaled to the plan's micro-batch)
#   cut_bytes_per_step         every cut, every micro-batch, activation forward + gradient back
#   gradient_bytes             all parameters' gradients (fp32), what one DP allreduce carries
#   allreduce_bytes_per_step   the plan's own: each replicated stage's gradients
# The per-layer bytes come from graph_chain.py (the planner's collapse rules; the layer count is
# checked against the plan). The other half plans loom's own paper-size presets the same way, from
# their analytic V100 profiles (`loom profile --device-model v100`: the meta build's bytes per
# block, no weights allocated), at the published profiles' micro-batch sizes; `source` says which.
#
# Usage: scripts/reproduce/boundary_bytes.sh [LOOM_BINARY] [--quick] [--out DIR]
#   --quick: BERT-48, AmoebaNet-36 and VGG-19 on cluster B
# Environment: PROFILES (default data/profiles in the repository), KEEP
set -euo pipefail
source "$(dirname "$0")/common.sh"
repro_init boundary_bytes "$@"
profiles=${PROFILES:-$root/data/profiles}
[ -d "$profiles/dapple" ] || { echo "boundary_bytes.sh: no published profiles at $profiles/dapple (set PROFILES)" >&2; exit 1; }

models=("bert-48-pbs-2 128" "amoeba-36-pbs-1 128" "vgg-19-pbs-32 1024")
presets=("bert48 2 128" "amoebanet36 1 128" "vgg19 32 1024")
clusters="A B C"
if [ "$quick" = 1 ]; then
  clusters="B"
else
  models+=("xlnet-36-pbs-1 128" "gnmt-16-pbs-64 1024")
  presets+=("xlnet36 1 128" "gnmt16 64 1024")
fi
mkdir -p "$work/presets"
for entry in "${presets[@]}"; do
  read -r preset pbs batch <<<"$entry"
  "$loom" profile --model "$preset" --device-model v100 --microbatch "$pbs" --out "$work/presets/$preset.profile" >/dev/null
  for cluster in $clusters; do
    "$loom" plan --profile "$work/presets/$preset.profile" --cluster "$cluster" --global-batch "$batch" \
      --planner dapple --json >"$work/presets/$preset@$cluster.json"
  done
done
for entry in "${models[@]}"; do
  read -r name batch <<<"$entry"
  [ -f "$profiles/dapple/$name.txt" ] || { echo "boundary_bytes.sh: missing profile $profiles/dapple/$name.txt" >&2; exit 1; }
  for cluster in $clusters; do
    "$loom" plan --profile "$profiles/dapple/$name.txt" --cluster "$cluster" --global-batch "$batch" \
      --planner dapple --json >"$work/$name@$cluster.json"
  done
done

"$python" - "$work" "$csv" "$profiles/dapple" <<'EOF'
import re, sys
import graph_chain, tables

work, out, profiles = sys.argv[1:]

def preset_chains(work):
    """loom's presets: the analytic profile's blocks are the plan's layers one to one."""
    import glob, json, os
    for path in sorted(glob.glob(os.path.join(work, "presets", "*@*.json"))):
        name, cluster = os.path.basename(path)[:-len(".json")].split("@")
        profile = json.load(open(os.path.join(work, "presets", name + ".profile")))
        yield name, (cluster,), json.load(open(path)), profile["microbatch"], profile["layers"]


def chains():
    for name, tags, result, plan, layers in graph_chain.planned_chains(work, profiles):
        yield "published V100 profile", name, tags, result, float(re.search(r"-pbs-(\d+)", name).group(1)), layers
    for name, tags, result, profiled, layers in preset_chains(work):
        yield "loom preset, analytic V100", name, tags, result, profiled, layers


rows = []
for source, name, (cluster,), result, profiled, layers in chains():
    plan = result["planners"][0]
    microbatch = result["global_batch"] / plan["microbatches"]
    cuts = [layers[s["layers"][1]]["boundary_bytes"] * microbatch / profiled for s in plan["stages"][:-1]]
    stage_bytes = [sum(l["parameter_bytes"] for l in layers[s["layers"][0]:s["layers"][1] + 1]) for s in plan["stages"]]
    gradients = sum(l["parameter_bytes"] for l in layers)
    rows.append({"source": source, "model": result["model"], "cluster": cluster, "strategy": plan["strategy"],
                 "microbatches": plan["microbatches"], "microbatch_size": microbatch, "cuts": len(cuts),
                 "cut_bytes_per_microbatch": round(max(cuts, default=0)),
                 "cut_bytes_per_step": round(2 * sum(cuts) * plan["microbatches"]),
                 "gradient_bytes": round(gradients),
                 "allreduce_bytes_per_step": round(sum(b for b, s in zip(stage_bytes, plan["stages"]) if s["replicas"] > 1)),
                 "gradient_over_cut": round(gradients / max(cuts), 1) if cuts else ""})
tables.write_csv(out, rows)

mb = lambda v: f"{v / 1e6:.1f}"
print("| source | model | cluster | DAPPLE plan | M | largest cut MB / micro-batch | all cuts MB / step | gradients MB | plan's allreduce MB / step | gradients / largest cut |")
print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
for r in rows:
    strategy = tables.strategy_cell(r["strategy"])
    print(f"| {r['source']} | {r['model']} | {r['cluster']} | {strategy} | {r['microbatches']} | {mb(r['cut_bytes_per_microbatch'])} "
          f"| {mb(r['cut_bytes_per_step'])} | {mb(r['gradient_bytes'])} | {mb(r['allreduce_bytes_per_step'])} "
          f"| {r['gradient_over_cut'] or '— (no cut)'} |")
EOF
repro_plot boundary_bytes
repro_finish
