#!/usr/bin/env bash
# When scripts/cluster/elastic.sh restarts and when it stops, on 2 emulated Slurm hosts x 2 ranks:
#   1. bad arguments: one `elastic.sh: error:` line naming the flag, exit 2, nothing launched
#      (outside an allocation; --cluster for another node count; a train flag it owns);
#   2. a run without failures: one attempt, exit 0;
#   3. a damaged checkpoint (a flipped byte in the newest one): loom's `loom: error` names the file,
#      the supervisor stops after that one attempt, exit 1, quoting the error;
#   4. the ranks of host 2 killed while both hosts still run steps: a restart on the same 2 hosts
#      from the newest checkpoint, which trains to the end (exit 0);
#   5. the same with --max-restarts 0: it gives up, exit 4.
# Runs inside with_slurm.sh (2 hosts). Usage: slurm_elastic_stops.sh LOOM WORKDIR
set -euo pipefail
(($# == 2)) || { echo "usage: slurm_elastic_stops.sh LOOM WORKDIR" >&2; exit 2; }
loom=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
cd "$work"
slurm=("$CLUSTER_BIN/slurm.sh" exec --name "$CLUSTER_NAME")
elastic=$CLUSTER_BIN/elastic.sh
h1=${CLUSTER_NAME}h1 h2=${CLUSTER_NAME}h2
model=(--model mlp --set input=16,hidden=64,layers=8,classes=4)
flags=("${model[@]}" --data synthetic --global-batch 24 --seed 5 --threads 1 --optimizer sgd --lr 0.1 --lr-schedule constant)
# A lost peer ends the step within about 5 s + the census (the watchdog); 20 s in a sanitizer
# build, whose start-up on 2 shared cores can keep a healthy rank waiting longer than 5 s.
if grep -q __asan_init "$loom"; then export LOOM_COMM_TIMEOUT_S=20; else export LOOM_COMM_TIMEOUT_S=5; fi
# Rank 0 sleeps 5 ms before each forward and backward (about 0.1 s a step): the kills land mid-run.
export LOOM_TEST_SLOW_RANK=0:5
start=$SECONDS
bash "$here/elastic_profile.sh" "$loom" profile.json
supervisor=(--loom "$loom" --profile profile.json --cluster 2x2:intra=10GB/s,inter=1GB/s,mem=4GB --checkpoint-every 3 --probe-timeout 3)
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# elastic.sh's status and output in CASE.log: in an allocation of both hosts unless NOALLOC.
run() {
  local case=$1 alloc=$2; shift 2
  local status=0
  if [ "$alloc" = alloc ]; then
    "${slurm[@]}" salloc -N2 --ntasks-per-node=2 --no-kill --time=3 "$elastic" "$@" > "$case.log" 2>&1 || status=$?
  else
    "${slurm[@]}" "$elastic" "$@" > "$case.log" 2>&1 || status=$?
  fi
  echo "$status"
}
expect() {  # CASE STATUS WANTED PATTERN: the status, and the pattern in the case's output
  local case=$1 status=$2 wanted=$3 pattern=$4
  if [ "$status" != "$wanted" ] || ! grep -qE "$pattern" "$case.log"; then
    cat "$case.log"; fail "$case: status $status (wanted $wanted), output should match '$pattern'"
  else
    echo "$case: status $status, $(grep -m1 -oE "$pattern" "$case.log")"
  fi
}

# 1. Bad arguments.
status=$(run no-allocation none "${supervisor[@]}" --checkpoint ck1 -- "${flags[@]}" --steps 6)
expect no-allocation "$status" 2 "^elastic.sh: error: not inside a Slurm allocation"
status=$(run wrong-cluster alloc "${supervisor[@]/2x2:/3x2:}" --checkpoint ck1 -- "${flags[@]}" --steps 6)
expect wrong-cluster "$status" 2 "^elastic.sh: error: --cluster 3x2:.* has 3 nodes but the allocation has 2"
status=$(run owned-flag alloc "${supervisor[@]}" --checkpoint ck1 -- "${flags[@]}" --steps 6 --stages 2)
expect owned-flag "$status" 2 "^elastic.sh: error: train flag --stages is set by the supervisor"
[ ! -e ck1 ] || fail "a refused supervisor made its checkpoint directory"

# 2. No failure: one attempt.
status=$(run clean alloc "${supervisor[@]}" --checkpoint ck2 -- "${flags[@]}" --steps 6)
expect clean "$status" 0 "done: trained to the end in attempt 1 after 0 restart"

# 3. The newest checkpoint damaged (a byte of its last tensor's data flipped): no restart.
stage=$(ls ck2/"$(cat ck2/latest)"/stage*.safetensors | head -n 1)
python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(-2, 2); b = f.read(1); f.seek(-2, 2); f.write(bytes([b[0] ^ 0xFF]))' "$stage"
status=$(run damaged alloc "${supervisor[@]}" --checkpoint ck2 -- "${flags[@]}" --steps 12)
expect damaged "$status" 1 "stopped: the step exited with status 1 and every host still answers: an error a restart cannot fix: loom: error.*stage[0-9]*.safetensors.*"
# (A restart before it is allowed where a launch failed inside MPI_Init, with no loom error.)
grep "failed after step" ck2/elastic/events.log | grep -q "loom: error" && fail "damaged: the supervisor restarted after loom's error"

# 4 and 5. Host 2's ranks killed after step 5; the host itself lives on.
kill_ranks_after_step_5() {  # CASE: waits for the case's step 5, then kills host 2's loom ranks
  local case=$1 pid killed=0
  for _ in $(seq 1 600); do grep -q '^step 5 ' "$case.log" 2>/dev/null && break; sleep 0.05; done
  for pid in $(ip netns pids "$h2"); do
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$loom" ] && kill -9 "$pid" && killed=$((killed + 1))
  done
  echo "$case: killed $killed rank(s) on $h2"
}
for case in ranks-killed give-up; do
  restarts=1; [ "$case" = give-up ] && restarts=0
  run "$case" alloc "${supervisor[@]}" --max-restarts $restarts --checkpoint "ck-$case" -- "${flags[@]}" --steps 40 \
    > "$case.status" &
  kill_ranks_after_step_5 "$case"
  wait $!
  status=$(cat "$case.status")
  if [ "$case" = ranks-killed ]; then
    expect "$case" "$status" 0 "a rank or the launch failed \(status [0-9]+.* but every host answers: restarting on the same hosts"
    grep -q "attempt 2: 2 hosts ($h1 $h2), .*resuming from .*/step-" "ck-$case/elastic/events.log" ||
      fail "$case: attempt 2 did not resume on both hosts"
    grep -qE "done: trained to the end in attempt [2-9] " "ck-$case/elastic/events.log" || fail "$case: attempt 2 did not finish"
  else
    expect "$case" "$status" 4 "gave up: 0 restart\(s\) made, --max-restarts 0"
  fi
done
echo "slurm_elastic_stops.sh: $( ((failed)) && echo failed || echo passed) in $((SECONDS - start)) s"
exit $failed
