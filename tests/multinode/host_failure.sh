#!/usr/bin/env bash
# A host lost mid-step ends the whole job: 2 stages x 2 replicas on 2 hosts (stage 0 on host 1,
# stage 1 on host 2), training until host 2 fails, either by every process on it being killed
# (MODE kill) or by its link going down (MODE link). mpirun must exit non-zero within 30 s, its
# output must name the lost host or one of its ranks (Open MPI's lost-daemon message or loom's
# watchdog), and no process of the job may remain.
# Runs inside with_cluster.sh (2 hosts). Usage: host_failure.sh LOOM WORKDIR kill|link
set -euo pipefail
loom=$1 work=$2 mode=$3
mkdir -p "$work"
cd "$work"
metrics=$work/failure_$mode.jsonl log=$work/failure_$mode.log
rm -f "$metrics" "$log"
a=198.18.$CLUSTER_SUBNET.1 b=198.18.$CLUSTER_SUBNET.2 h1=${CLUSTER_NAME}h1 h2=${CLUSTER_NAME}h2
# Below the ~5 s in which mpirun.sh's daemon keepalive notices a cut link, so that loom's watchdog
# usually aborts first and mpirun must then give up on the unreachable daemon (the harder path).
export LOOM_COMM_TIMEOUT_S=3

"$CLUSTER_BIN/mpirun.sh" -x LOOM_NUM_THREADS -x LOOM_COMM_TIMEOUT_S -H "$a:2,$b:2" -np 4 "$loom" train \
  --model mlp --set input=64,hidden=128,layers=8,classes=4 --data synthetic --global-batch 64 --microbatches 4 \
  --stages 2 --replicas 2 --steps 1000000 --threads 1 --log-every 1 --metrics "$metrics" > "$log" 2>&1 &
job=$!
trap 'kill -9 $job 2>/dev/null || true' EXIT  # with_cluster.sh then ends what is left in the namespaces

# Mid-training: a few steps done (rank 0 prints every step).
trained() { grep -q '^step 3 ' "$log"; }
for _ in $(seq 1 300); do
  trained && break
  kill -0 "$job" 2>/dev/null || { cat "$log"; echo "FAIL: the job ended before host 2 failed"; exit 1; }
  sleep 0.2
done
trained || { cat "$log"; echo "FAIL: training never reached step 3"; exit 1; }

start=$(date +%s.%N)
case "$mode" in
  kill) kill -9 $(ip netns pids "$h2") ;;
  link) ip -n "$h2" link set eth0 down ;;
  *) echo "unknown mode '$mode'"; exit 2 ;;
esac
for _ in $(seq 1 300); do
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
status=0
if kill -0 "$job" 2>/dev/null; then
  status=timeout
  kill -9 "$job" 2>/dev/null || true
fi
wait "$job" || status=$?
echo "---- job output ----"; cat "$log"; echo "--------------------"
echo "host 2 lost by $mode: mpirun ended after $elapsed s with status $status"

failed=0
[ "$status" != timeout ] || { echo "FAIL: mpirun still running 30 s after host 2 was lost"; failed=1; }
[ "$status" != 0 ] || { echo "FAIL: mpirun exited 0 after losing a host"; failed=1; }
grep -qE "$h2|$b|rank [23]\b" "$log" || { echo "FAIL: no message names the lost host ($h2, $b) or its ranks 2, 3"; failed=1; }
grep -E "communication watchdog|lost communication|Remote daemon" "$log" | sed 's/^/named by: /' || true
left_running() { ip netns pids "$h1"; ip netns pids "$h2"; pgrep -f -- "--metrics $metrics" || true; }
# Processes that are already dying get up to 10 s to go (as slurm_elastic.sh waits), not a fixed 1 s.
for _ in $(seq 1 100); do [ -z "$(left_running)" ] && break; sleep 0.1; done
leftovers=$(left_running)
if [ -n "$leftovers" ]; then
  echo "FAIL: processes left behind:"; ps -o pid,args -p $(echo $leftovers | tr ' ' ',') || true
  kill -9 $leftovers 2>/dev/null || true
  failed=1
fi
exit $failed
