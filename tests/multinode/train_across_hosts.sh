#!/usr/bin/env bash
# Pipelined training across emulated hosts equals the sequential run (relative error <= 1e-5 per
# step and per final weight, compare_runs.py): stage 0 on host 1 and stage 1 on host 2; then 2
# stages x 2 replicas with every replica group and every stage boundary crossing hosts (a rankfile
# places ranks 0 1 2 3 on hosts 1 2 2 1; loom's layout is stage-major, rank = stage * R + replica).
# Runs inside with_cluster.sh (2 hosts).
# Usage: train_across_hosts.sh LOOM WORKDIR
set -euo pipefail
loom=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
cd "$work"
rm -rf ./*.jsonl ./*.ckpt rankfile
a=198.18.$CLUSTER_SUBNET.1 b=198.18.$CLUSTER_SUBNET.2
mpirun=("$CLUSTER_BIN/mpirun.sh" -x LOOM_NUM_THREADS -x LOOM_COMM_TIMEOUT_S)
model=(--model mlp --set input=16,hidden=24,layers=8,classes=4 --data synthetic --global-batch 16 --microbatches 4
       --steps 3 --seed 5 --threads 1 --optimizer sgd --lr 0.1 --momentum 0.9 --lr-schedule constant --bucket-mb 0.001
       --quiet)

# Where each rank runs, by the same launcher flags as the training run: "rank host" lines.
check_placement() {
  local expected=$1; shift
  local placed
  placed=$("${mpirun[@]}" "$@" bash -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"' | sort -n | tr '\n' ' ')
  [ "$placed" = "$expected" ] || { echo "FAIL: ranks placed as '$placed', expected '$expected'"; exit 1; }
  echo "placement: $placed"
}

# Per-step losses and final weights of two runs (NAME.jsonl, NAME.ckpt) agree to a relative 1e-5.
compare() {
  /usr/bin/python3 "$here/compare_runs.py" "$loom" "$1" "$2" 3
}
# The flags that keep run NAME's metrics and final checkpoint where compare() reads them.
outputs() {
  echo --metrics "$1.jsonl" --checkpoint "$PWD/$1.ckpt"
}

"$loom" train "${model[@]}" $(outputs sequential)

h1=${CLUSTER_NAME}h1 h2=${CLUSTER_NAME}h2
check_placement "0 $h1 1 $h2 " -H "$a:1,$b:1" -np 2
"${mpirun[@]}" -H "$a:1,$b:1" -np 2 "$loom" train "${model[@]}" --stages 2 $(outputs two_hosts_2x1)
compare sequential two_hosts_2x1

printf 'rank 0=%s slot=0\nrank 1=%s slot=0\nrank 2=%s slot=1\nrank 3=%s slot=1\n' "$a" "$b" "$b" "$a" > rankfile
check_placement "0 $h1 1 $h2 2 $h2 3 $h1 " -H "$a:2,$b:2" -np 4 --rankfile rankfile
for allreduce in hierarchical ring; do
  "${mpirun[@]}" -H "$a:2,$b:2" -np 4 --rankfile rankfile "$loom" train "${model[@]}" --stages 2 --replicas 2 \
    --allreduce "$allreduce" $(outputs "two_hosts_2x2_$allreduce")
  compare sequential "two_hosts_2x2_$allreduce"
done
