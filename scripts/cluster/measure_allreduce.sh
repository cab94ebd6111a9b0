#!/usr/bin/env bash
# Allreduce across emulated hosts (docs/comm.md, "Measured on the emulated cluster"): for each
# layout HOSTSxRANKS and link rate, bring up a cluster, run `loom bench allreduce` through
# mpirun.sh, tear the cluster down, and print the measurement beside the link model of
# comm/include/loom/comm/allreduce_cost.h (the same formulas, evaluated here; B_intra given).
# Usage: measure_allreduce.sh [--loom PATH] [--intra-gbps GB/s] [--layouts "2x2 4x1"] [--gbit "1 10"]
#                             [--min-bytes B] [--max-bytes B]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
loom=$here/../../build/apps/loom intra=2 layouts="2x2 4x1" rates="1 10" min=64K max=16M
while (($#)); do
  case "$1" in
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --loom) loom=$2; shift ;;
    --intra-gbps) intra=$2; shift ;;
    --layouts) layouts=$2; shift ;;
    --gbit) rates=$2; shift ;;
    --min-bytes) min=$2; shift ;;
    --max-bytes) max=$2; shift ;;
    *) cluster_die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
cluster_require_root
[ -x "$loom" ] || cluster_die "no loom executable at '$loom' (scripts/build.sh first, or --loom PATH)"
name=loomar
export CLUSTER_NAME=$name
trap '"$here/netns.sh" down --name "$name"' EXIT

for layout in $layouts; do
  hosts=${layout%x*} per_host=${layout#*x}
  host_list=$(seq -s, -f "198.18.0.%g:$per_host" 1 "$hosts")
  for gbit in $rates; do
    "$here/netns.sh" down --name "$name"
    "$here/netns.sh" up "$hosts" --name "$name" --inter-gbit "$gbit" >/dev/null
    echo "## $layout hosts x ranks, links $gbit Gbit/s; $(uptime | sed 's/.*load/load/')"
    LOOM_NUM_THREADS=1 "$here/mpirun.sh" -H "$host_list" -np $((hosts * per_host)) "$loom" bench allreduce --json \
      --min-bytes "$min" --max-bytes "$max" --rounds 5 --seconds 1 |
      /usr/bin/python3 "$here/allreduce_model.py" --nodes "$hosts" --per-node "$per_host" \
        --inter-gbps "$(awk -v g="$gbit" 'BEGIN { print g / 8 }')" --intra-gbps "$intra"
  done
done
