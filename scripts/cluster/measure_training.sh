#!/usr/bin/env bash
# Two-host training on the emulated cluster against the simulator and the planner (docs/comm.md):
# profile a model on this machine, plan it for 2 hosts x 1 rank at each link rate (the plan's
# "simulated" step time is the simulator's prediction for that link), then train the planner's
# choice ("best"), the two-stage pipeline (even split) and data parallelism on 2 hosts with the
# link shaped to that rate and print
# the measured step time (median over the logged intervals after the first).
# Usage: measure_training.sh [--loom PATH] [--gbit "1 10"] [--steps N] [--work DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
loom=$here/../../build/apps/loom rates="1 10" steps=50 work=/tmp/loom-measure-training
while (($#)); do
  case "$1" in
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --loom) loom=$2; shift ;;
    --gbit) rates=$2; shift ;;
    --steps) steps=$2; shift ;;
    --work) work=$2; shift ;;
    *) cluster_die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
cluster_require_root
loom=$(cd "$(dirname "$loom")" && pwd)/$(basename "$loom")
[ -x "$loom" ] || cluster_die "no loom executable at '$loom' (scripts/build.sh first, or --loom PATH)"
mkdir -p "$work" && cd "$work"
name=loomtr
export CLUSTER_NAME=$name
trap '"$here/netns.sh" down --name "$name"' EXIT
model=(--model mlp --set input=256,hidden=1024,layers=8,classes=10)
export LOOM_NUM_THREADS=1

"$loom" profile "${model[@]}" --microbatch 8 --threads 1 --repeats 5 --out profile.json | tail -2
for gbit in $rates; do
  cluster="2x1:intra=2GB/s,inter=${gbit}Gb/s,inter_lat=30us,mem=4GB"
  echo "## link $gbit Gbit/s; cluster $cluster"
  plan=("$loom" plan --profile profile.json --cluster "$cluster" --global-batch 32 --optimizer momentum --overlap
        --microbatches 4)
  "${plan[@]}" --planner papers --out "best_$gbit.json" | grep -E '^(planner|dapple|dp|dp-overlap|gpipe) |^wrote'
  "${plan[@]}" --planner gpipe --out "pipeline_$gbit.json" >/dev/null
  "${plan[@]}" --planner dp --out "dp_$gbit.json" >/dev/null
  "$here/netns.sh" down --name "$name"
  "$here/netns.sh" up 2 --name "$name" --inter-gbit "$gbit" >/dev/null
  for plan in best pipeline dp; do
    "$here/mpirun.sh" -x LOOM_NUM_THREADS -H 198.18.0.1:1,198.18.0.2:1 -np 2 "$loom" train "${model[@]}" \
      --plan "${plan}_$gbit.json" --data synthetic --steps "$steps" --log-every 10 --optimizer sgd --momentum 0.9 \
      --metrics "${plan}_$gbit.jsonl" --quiet
    /usr/bin/python3 -c '
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if "samples_per_s" in l][1:]
ms = statistics.median(32 / r["samples_per_s"] * 1e3 for r in rows)
print(f"measured  {sys.argv[2]:<9} plan on 2 hosts at {sys.argv[3]} Gbit/s: {ms:.1f} ms per step (median of {len(rows)} intervals)")
' "${plan}_$gbit.jsonl" "$plan" "$gbit"
    echo "          $(uptime | sed 's/.*load/load/')"
  done
done
