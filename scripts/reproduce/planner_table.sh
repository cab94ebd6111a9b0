#!/usr/bin/env bash
# DAPPLE claim 1: the DAPPLE planner against the PipeDream planner (its strategies run
# synchronously, as the DAPPLE paper does) and against the best data parallelism, on the published
# V100 profiles of the paper's five models and its clusters A (2x8, NVLink + 25 Gb/s), B (16x1,
# 25 Gb/s) and C (16x1, 10 Gb/s). Paper: up to 3.23x over PipeDream's planner, up to 2.32x over DP.
#
# Every case is planned twice, and within one run all planners share the assumption:
#   overlap=0  the allreduce runs after the last backward (DAPPLE's cost model); DP is `dp`
#   overlap=1  it runs bucket by bucket during the last backward (`--overlap`, as loom's executor
#              does with gradient buckets); DP is `dp-overlap`
# Speedups are over one device processing the global batch, from the cost model; the schedule
# simulator's replay of the same plans is in the *_simulated columns.
# The same table is made a second time from loom's own paper-size presets (bert48, amoebanet36,
# vgg19, xlnet36, gnmt16) and their analytic V100 profiles (`loom profile --device-model v100`: the
# meta build's bytes and FLOP-derived times per block, no weights allocated) at the published
# profiles' micro-batch sizes; the `source` column says which (published | preset).
#
# Usage: scripts/reproduce/planner_table.sh [LOOM_BINARY] [--quick] [--out DIR]
#   --quick: BERT-48, AmoebaNet-36 and VGG-19 only (XLNet-36 and GNMT-16 take the longest to plan)
# The DAPPLE search runs to the end (`loom plan --time-limit 0`; loom plan's default stops it after
# 60 s and returns the best plan so far, which on a loaded machine loses cases); `dapple_search`
# says whether it did (exact) or was stopped.
# Environment: PROFILES (default data/profiles in the repository), CLUSTERS ("A B C"),
#   TIME_LIMIT (seconds for each DAPPLE search, 0: none; default 0),
#   KEEP (a directory that keeps every `loom plan --json` output)
set -euo pipefail
source "$(dirname "$0")/common.sh"
repro_init planner_table "$@"
profiles=${PROFILES:-$root/data/profiles}
[ -d "$profiles/dapple" ] || { echo "planner_table.sh: no published profiles at $profiles/dapple (set PROFILES)" >&2; exit 1; }
clusters=${CLUSTERS:-A B C}

# profile and global batch (the paper's order: 128 for the transformers and AmoebaNet, 1024 for
# GNMT and VGG)
models=("bert-48-pbs-2 128" "amoeba-36-pbs-1 128" "vgg-19-pbs-32 1024")
presets=("bert48 2 128" "amoebanet36 1 128" "vgg19 32 1024")
if [ "$quick" != 1 ]; then
  models+=("xlnet-36-pbs-1 128" "gnmt-16-pbs-64 1024")
  presets+=("xlnet36 1 128" "gnmt16 64 1024")
fi

plan_all() {  # plan_all PROFILE OUT_PREFIX GLOBAL_BATCH: every planner, both allreduce assumptions
  local cluster overlap flags
  for cluster in $clusters; do
    for overlap in 0 1; do
      flags=()
      [ "$overlap" = 1 ] && flags+=(--overlap)
      "$loom" plan --profile "$1" --cluster "$cluster" --global-batch "$3" --planner papers --json \
        --time-limit "${TIME_LIMIT:-0}" "${flags[@]}" \
        >"$2-$cluster-$overlap.json"
    done
  done
}
for entry in "${models[@]}"; do
  read -r name batch <<<"$entry"
  [ -f "$profiles/dapple/$name.txt" ] || { echo "planner_table.sh: missing profile $profiles/dapple/$name.txt" >&2; exit 1; }
  plan_all "$profiles/dapple/$name.txt" "$work/$name" "$batch"
done
mkdir -p "$work/presets"
for entry in "${presets[@]}"; do
  read -r preset pbs batch <<<"$entry"
  "$loom" profile --model "$preset" --device-model v100 --microbatch "$pbs" --out "$work/presets/$preset.profile" >/dev/null
  plan_all "$work/presets/$preset.profile" "$work/presets/$preset" "$batch"
done

"$python" - "$work" "$csv" <<'EOF'
import glob, json, os, sys
import tables

work, out = sys.argv[1:]
columns = ["source", "model", "cluster", "global_batch", "overlap", "dp_speedup", "dp_microbatches",
           "pipedream_speedup", "pipedream_microbatches", "pipedream_strategy",
           "dapple_speedup", "dapple_microbatches", "dapple_placement", "dapple_strategy",
           "dapple_over_pipedream", "dapple_over_dp", "dapple_over_pipedream_simulated",
           "dapple_over_dp_simulated", "dapple_planning_ms", "dapple_search"]

def row(path):
    result = json.load(open(path))
    overlap = int(path.rsplit("-", 1)[1].split(".")[0])
    by_name = {p["planner"]: p for p in result["planners"]}
    dapple, pipedream = by_name["dapple"], by_name["pipedream"]
    dp = by_name["dp-overlap" if overlap else "dp"]
    def ratio(a, b, key):  # step-time ratio b / a: > 1 means a is faster
        return round(b[key] / a[key], 4) if b["feasible"] and a["feasible"] else ""
    speedup = lambda p: round(p["speedup"], 4) if p["feasible"] else ""
    source = "preset" if os.path.basename(os.path.dirname(path)) == "presets" else "published"
    return {"source": source, "model": result["model"], "cluster": result["cluster"], "global_batch": result["global_batch"],
            "overlap": overlap, "dp_speedup": speedup(dp), "dp_microbatches": dp["microbatches"],
            "pipedream_speedup": speedup(pipedream), "pipedream_microbatches": pipedream["microbatches"],
            "pipedream_strategy": pipedream["strategy"], "dapple_speedup": speedup(dapple),
            "dapple_microbatches": dapple["microbatches"], "dapple_placement": dapple["placement"],
            "dapple_strategy": dapple["strategy"],
            # The papers' closed form (the searches' objective), and in parentheses the one model.
            "dapple_over_pipedream": ratio(dapple, pipedream, "objective_ms"),
            "dapple_over_dp": ratio(dapple, dp, "objective_ms"),
            "dapple_over_pipedream_simulated": ratio(dapple, pipedream, "predicted_step_ms"),
            "dapple_over_dp_simulated": ratio(dapple, dp, "predicted_step_ms"),
            "dapple_planning_ms": round(dapple["planning_ms"], 1), "dapple_search": dapple.get("search", "")}

paths = glob.glob(os.path.join(work, "*.json")) + glob.glob(os.path.join(work, "presets", "*.json"))
rows = sorted((row(p) for p in paths), key=lambda r: (r["source"] != "published", r["overlap"], r["model"], r["cluster"]))
tables.write_csv(out, rows, columns)

print("| profiles | model | cluster | overlap | best DP | PipeDream planner | DAPPLE planner | DAPPLE strategy | DAPPLE/PipeDream (sim.) | DAPPLE/DP (sim.) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    x = lambda v: f"{v:.2f}x" if v != "" else "does not fit"
    print(f"| {r['source']} | {r['model']} | {r['cluster']} | {'yes' if r['overlap'] else 'no'} | {x(r['dp_speedup'])} "
          f"| {x(r['pipedream_speedup'])} | {x(r['dapple_speedup'])} | {tables.strategy_cell(r['dapple_strategy'])} M={r['dapple_microbatches']} "
          f"| {x(r['dapple_over_pipedream'])} ({x(r['dapple_over_pipedream_simulated'])}) "
          f"| {x(r['dapple_over_dp'])} ({x(r['dapple_over_dp_simulated'])}) |")
for source, overlap in ((s, o) for s in ("published", "preset") for o in (0, 1)):
    part = [r for r in rows if r["overlap"] == overlap and r["source"] == source]
    best = lambda key: max(part, key=lambda r: r[key] or 0)
    p, d = best("dapple_over_pipedream"), best("dapple_over_dp")
    print(f"\n{source} profiles, allreduce {'overlapped with' if overlap else 'after'} the backward: DAPPLE planner up to "
          f"{p['dapple_over_pipedream']:.2f}x over PipeDream's ({p['model']} on {p['cluster']}; paper 3.23x), "
          f"up to {d['dapple_over_dp']:.2f}x over DP ({d['model']} on {d['cluster']}; paper 2.32x)")
EOF
repro_plot planner_table
repro_finish
