#!/bin/bash
# Issue 15, "flat resident memory": 10,000 steps of a small mlp on 2 ranks (2 stages, DAPPLE) with
# --metrics and --trace, sampling each rank's VmRSS once a second from /proc into OUT/samples.txt
# ("seconds pid KB"). Usage: scripts/memory_run.sh [path/to/loom]   (OUT defaults to /tmp/loom-memory-run)
set -euo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
loom=${1:-build/apps/loom}
out=${OUT:-/tmp/loom-memory-run}
mkdir -p "$out"
pattern="train --model mlp --set hidden=64,layers=4"
nice -n 10 mpirun -np 2 --oversubscribe "$loom" $pattern --data synthetic --stages 2 --steps 10000 --global-batch 16 \
  --microbatches 4 --threads 1 --log-every 2500 --metrics "$out/m.jsonl" --trace "$out/t.json" >"$out/train.log" 2>&1 &
start=$(date +%s)
sleep 1
while pgrep -f "$pattern" >/dev/null; do
  for pid in $(pgrep -f "$pattern"); do
    [ -r "/proc/$pid/status" ] && echo "$(($(date +%s) - start)) $pid $(awk '/VmRSS/ {print $2}' "/proc/$pid/status")"
  done
  sleep 1
done >"$out/samples.txt"
wait
tail -1 "$out/train.log"
