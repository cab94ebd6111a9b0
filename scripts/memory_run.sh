#!/bin/bash
# issue 15 "flat resident memory": 10,000 steps of a small mlp on 2 ranks (2 stages, DAPPLE) with metrics and a trace; samples each
mkdir -p "${OUT:-/tmp/loom-memory-run}"
# rank's resident memory once a second from /proc.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
L=${1:-build/apps/loom}
nice -n 10 mpirun -np 2 --oversubscribe $L train --model mlp --set hidden=64,layers=4 --data synthetic --stages 2 \
  --steps 10000 --global-batch 16 --microbatches 4 --threads 1 --log-every 2500 --metrics ${OUT:-/tmp/loom-memory-run}/m.jsonl --trace ${OUT:-/tmp/loom-memory-run}/t.json > ${OUT:-/tmp/loom-memory-run}/train.log 2>&1 &
start=$(date +%s)
sleep 1
while pgrep -f "apps/loom train --model mlp --set hidden=64" > /dev/null; do
  for pid in $(pgrep -f "apps/loom train --model mlp --set hidden=64"); do
    [ -r /proc/$pid/status ] && echo "$(( $(date +%s) - start )) $pid $(grep VmRSS /proc/$pid/status | awk '{print $2}')"
  done
  sleep 1
done > ${OUT:-/tmp/loom-memory-run}/samples.txt
