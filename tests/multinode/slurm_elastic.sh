#!/usr/bin/env bash
# A lost host survived: scripts/cluster/elastic.sh runs loom train on 3 emulated Slurm hosts x 2
# ranks (the plan `loom plan` makes for 3x2), checkpointing every 3 steps; after step 5 host 3 is
# lost, either every process on it killed (MODE kill: its ranks, slurmstepd and slurmd, as when the
# machine dies) or its link cut (MODE link). The supervisor must then, with nobody involved:
#   - name host 3 as lost and restart on hosts 1 and 2 under plan-2.json, which must be what
#     `loom plan` gives for 2x2 (same profile and cluster description) and what the step ran
#     (loom's own layout and hosts lines);
#   - resume from the newest complete checkpoint, redoing at most 3 steps, and reach step 30;
#   - give the losses, bit for bit, of a run started on the same 2 hosts from that checkpoint
#     with that plan (run in the same allocation after the supervisor);
#   - leave nothing running: no loom rank on any host, no slurmstepd on hosts 1 and 2.
# It prints the recovery's phases (failure -> the step's end -> hosts probed -> plan -> start-up -> first step).
# LAUNCHER srun (default): inside with_slurm.sh (3 hosts), the supervisor in a Slurm allocation.
# LAUNCHER mpirun: inside with_cluster.sh (3 hosts, no Slurm), the supervisor with --mpirun
# scripts/cluster/mpirun.sh --hosts (the hosts' addresses); only MODE link there, as a host whose
# processes were killed is still a working namespace that mpirun reaches.
# Usage: slurm_elastic.sh LOOM WORKDIR kill|link [srun|mpirun]
set -euo pipefail
(($# == 3 || $# == 4)) || { echo "usage: slurm_elastic.sh LOOM WORKDIR kill|link [srun|mpirun]" >&2; exit 2; }
loom=$1 work=$2 mode=$3 launcher=${4:-srun}
case "$mode" in kill|link) ;; *) echo "slurm_elastic.sh: error: unknown mode '$mode' (kill or link)" >&2; exit 2 ;; esac
case "$launcher" in srun|mpirun) ;; *) echo "slurm_elastic.sh: error: unknown launcher '$launcher'" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
cd "$work"
slurm=("$CLUSTER_BIN/slurm.sh" exec --name "$CLUSTER_NAME")
h1=${CLUSTER_NAME}h1 h2=${CLUSTER_NAME}h2 h3=${CLUSTER_NAME}h3
# The hosts as the supervisor names them: Slurm's node names, or the addresses mpirun is given.
if [ "$launcher" = srun ]; then id1=$h1 id2=$h2 id3=$h3; else
  id1=198.18.$CLUSTER_SUBNET.1 id2=198.18.$CLUSTER_SUBNET.2 id3=198.18.$CLUSTER_SUBNET.3
fi
steps=30 every=3
cluster=3x2:intra=10GB/s,inter=1GB/s,mem=4GB
model=(--model mlp --set input=16,hidden=64,layers=8,classes=4)
train=("${model[@]}" --data synthetic --global-batch 24 --steps $steps --seed 5 --threads 1 --optimizer adam
       --lr-schedule constant --bucket-mb 0.001 --keep-checkpoints 100)
# A lost peer ends the step within about 5 s + the census (the watchdog); 20 s in a sanitizer
# build, whose start-up on 2 shared cores can keep a healthy rank waiting longer than 5 s.
if grep -q __asan_init "$loom"; then export LOOM_COMM_TIMEOUT_S=20; else export LOOM_COMM_TIMEOUT_S=5; fi
# Rank 0 (host 1) sleeps 5 ms before each forward and backward (about 0.1 s a step), so that host 3
# is lost mid-run however fast the machine.
export LOOM_TEST_SLOW_RANK=0:5
start=$SECONDS

bash "$here/elastic_profile.sh" "$loom" profile.json  # deterministic: the same plans on every run

# The supervisor, then the reference run on hosts 1 and 2 from the checkpoint the supervisor resumed
# from, with its plan and placement: in one allocation (--no-kill: Slurm keeps it when a node dies),
# or with mpirun (the environment reaches every rank: the launcher is local).
mpirun="$CLUSTER_BIN/mpirun.sh -x LOOM_TEST_SLOW_RANK -x LOOM_COMM_TIMEOUT_S -x LOOM_NUM_THREADS"
if [ "$launcher" = srun ]; then
  supervise=()
  reference="SLURM_HOSTFILE=elastic/hosts-\$K srun --overlap --mpi=pmix --kill-on-bad-exit=1 --distribution=arbitrary"
  reference+=" -N \$(sort -u elastic/hosts-\$K | wc -l) -n \$(wc -l < elastic/hosts-\$K)"
else
  supervise=(--mpirun "$mpirun" --hosts "$id1,$id2,$id3")
  reference="$mpirun -H $id1:2,$id2:2 --rankfile elastic/rankfile-\$K -np \$(wc -l < elastic/hosts-\$K)"
fi
cat > job.sh <<JOB
set -u
"$CLUSTER_BIN/elastic.sh" --loom "$loom" --profile profile.json --cluster $cluster --checkpoint "$work/ckpt" \\
  --checkpoint-every $every --work "$work/elastic" --max-restarts 2 $( ((${#supervise[@]})) && printf '%q ' "${supervise[@]}") -- ${train[*]}
echo \$? > supervisor.status
K=\$(awk '/ done: trained to the end in attempt / { print \$9 }' elastic/events.log)
[ -n "\$K" ] || exit 0
resumed=\$(awk '/ resumed from / { print \$4; exit }' elastic/attempt-\$K.log)
# Open MPI's launch flake after a lost host (MPI_Init: "PML add procs failed", about 1 in 15 steps
# started in this allocation) gets one more try here too, as the supervisor gives its restarts.
for try in 1 2; do
  $reference "$loom" train ${train[*]} --plan elastic/plan-\$K.json --resume "\$resumed" \\
    --checkpoint "$work/reference-ckpt" --metrics reference.jsonl --quiet > reference-\$try.log 2>&1
  echo \$? > reference.status
  cat reference-\$try.log
  [ "\$(cat reference.status)" != 0 ] && grep -q "PML add procs failed" reference-\$try.log || break
  echo "reference run: MPI_Init failed at launch (PML add procs failed): once more"
  rm -rf "$work/reference-ckpt" reference.jsonl
done
JOB
if [ "$launcher" = srun ]; then
  "${slurm[@]}" salloc -N3 --ntasks-per-node=2 --no-kill --time=4 bash job.sh > supervisor.log 2>&1 &
else
  bash job.sh > supervisor.log 2>&1 &
fi
job=$!
trap 'kill -9 $job 2>/dev/null || true' EXIT  # with_slurm.sh then ends what is left in the hosts

trained() { grep -q '^step 5 ' supervisor.log; }
for _ in $(seq 1 600); do
  trained && break
  kill -0 "$job" 2>/dev/null || { cat supervisor.log; echo "FAIL: the supervisor ended before host 3 was lost"; exit 1; }
  sleep 0.05
done
trained || { cat supervisor.log; echo "FAIL: training never reached step 5"; exit 1; }
failure=$EPOCHREALTIME
case "$mode" in
  kill) kill -9 $(ip netns pids "$h3") ;;
  link) ip -n "$h3" link set eth0 down ;;
esac
echo "host 3 lost ($mode) at $failure"
for _ in $(seq 1 1500); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$job" 2>/dev/null; then cat supervisor.log; echo "FAIL: the supervisor still runs 150 s after the failure"; exit 1; fi
wait "$job" || true
echo "---- supervisor output (without the step lines) ----"
grep -v '^step [0-9]' supervisor.log || true
echo "---- events ----"; cat elastic/events.log; echo "----------------"

failed=0
fail() { echo "FAIL: $*"; failed=1; }
[ "$(cat supervisor.status 2>/dev/null)" = 0 ] || fail "the supervisor exited with status $(cat supervisor.status 2>/dev/null || echo '?')"
# The attempt that lost host 3: 1, or a later one where an earlier attempt's launch failed inside
# MPI_Init (Open MPI's flake, "PML add procs failed": the supervisor restarts it on the same hosts;
# CI met it in attempt 1 on 2026-12-05).
L=$(awk '/ failed after step .*: lost host\(s\) / { print $3; exit }' elastic/events.log)
[ -n "$L" ] || { fail "the supervisor named no lost host"; L=1; }
grep -q "attempt $L failed .*: lost host(s) $id3 " elastic/events.log || fail "the supervisor did not name $id3 (alone) as lost"
for ((k = 1; k < L; k++)); do
  grep -q "attempt $k failed .*restarting on the same hosts" elastic/events.log &&
    cat "elastic/attempt-$k.log" supervisor.log | grep -q "PML add procs failed" ||
    fail "attempt $k failed before host 3 was lost, and not in Open MPI's launch"
done
# The attempt that finished (L + 1, or later where a restart's launch failed: MPI_Init inside Open
# MPI failed once in about 15 of these runs, "PML add procs failed"; the supervisor restarts those).
K=$(awk '/ done: trained to the end in attempt / { print $9 }' elastic/events.log)
[ -n "$K" ] || { fail "the run did not finish"; K=$((L + 1)); }
for ((k = L + 1; k <= K; k++)); do
  grep -q "attempt $k: 2 hosts ($id1 $id2), plan " elastic/events.log || fail "attempt $k did not run on $id1 and $id2"
done

# The plan of attempt 2 is loom plan's for 2x2, and the step ran exactly it.
"$loom" plan --profile profile.json --cluster "2x${cluster#3x}" --global-batch 24 --optimizer adam --planner dapple \
  --out fresh-plan.json > /dev/null
python3 - elastic/plan-$K.json fresh-plan.json elastic/attempt-$K.log "$h1" "$h2" <<'PY' || failed=1
import json, re, sys
written, fresh, log, hosts = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), open(sys.argv[3]).read(), sys.argv[4:]
def layout(plan):
    return [(s["layers"], s["ranks"], [(d["node"], d["device"]) for d in s["devices"]]) for s in plan["stages"]]
ok = True
if layout(written) != layout(fresh) or written["microbatches"] != fresh["microbatches"]:
    print(f"FAIL: {sys.argv[1]} {layout(written)} is not loom plan's for 2x2: {layout(fresh)}"); ok = False
if written["cluster"] != {"devices_per_node": 2, "nodes": 2}:
    print(f"FAIL: {sys.argv[1]} was made for {written['cluster']}, not 2 nodes x 2"); ok = False
stages = " | ".join(f"stage {i}: rank{'s' if len(s['ranks']) > 1 else ''} " + " ".join(map(str, s["ranks"]))
                    for i, s in enumerate(written["stages"]))
counts = {len(s["ranks"]) for s in written["stages"]}
replicas = f" x {counts.pop()} replicas" if len(counts) == 1 and min(len(s["ranks"]) for s in written["stages"]) > 1 else ""
expected = (f"{len(written['stages'])} stages{replicas} ({stages}) | plan ",
            f"plan-{sys.argv[1].split('plan-')[-1]} | schedule {written['schedule']} | M={written['microbatches']} |")
if not re.search(re.escape(expected[0]) + r"\S*" + re.escape(expected[1]), log):
    print(f"FAIL: {sys.argv[3]} did not run {sys.argv[1]}'s layout '{expected}'"); ok = False
node_ranks = {}
for s in written["stages"]:
    for rank, d in zip(s["ranks"], s["devices"]):
        node_ranks.setdefault(d["node"], []).append(rank)
placed = " | ".join(f"{hosts[n]} ranks " + " ".join(map(str, sorted(r))) for n, r in sorted(node_ranks.items()))
if f"loom train: hosts: {placed}\n" not in log:
    print(f"FAIL: {sys.argv[3]}: the ranks are not on the plan's hosts '{placed}'"); ok = False
if ok:
    print(f"{sys.argv[3]} ran loom plan's 2x2 layout: {expected} hosts: {placed}")
sys.exit(0 if ok else 1)
PY

# Steps: the failure came after step F; attempt K resumed from the newest checkpoint R (a multiple
# of the interval), F - R <= the interval, and it reached the last step.
failed_after=$(grep -o '"step":[0-9]*' "elastic/attempt-$L.jsonl" | tail -n 1 | cut -d: -f2)
resumed_after=$(awk '/ resumed from / { print $NF; exit }' elastic/attempt-$K.log)
resumed_dir=$(awk '/ resumed from / { print $4; exit }' elastic/attempt-$K.log)
last=$(grep -o '"step":[0-9]*' elastic/attempt-$K.jsonl | tail -n 1 | cut -d: -f2)
echo "steps: attempt $L failed after step $failed_after, attempt $K resumed after step $resumed_after, ended at step $last"
[ -n "$failed_after" ] && [ -n "$resumed_after" ] && [ -n "$last" ] || fail "steps not found in the attempts' metrics and logs"
if [ -n "$resumed_after" ] && [ -n "$failed_after" ]; then
  ((resumed_after % every == 0 && failed_after - resumed_after >= 0 && failed_after - resumed_after <= every)) ||
    fail "resumed after step $resumed_after, failed after $failed_after: more than $every steps redone"
  [ "$last" = "$steps" ] || fail "the run ended at step $last, not $steps"
fi

# The losses of attempt 2 equal, bit for bit, the reference's (same checkpoint, plan and hosts).
[ "$(cat reference.status 2>/dev/null)" = 0 ] || fail "the reference run exited with status $(cat reference.status 2>/dev/null || echo '?')"
python3 - elastic/attempt-$K.jsonl reference.jsonl <<'PY' || failed=1
import json, sys
def losses(path):
    return {r["step"]: r["loss"] for r in map(json.loads, open(path)) if "loss" in r and "step" in r}
run, reference = losses(sys.argv[1]), losses(sys.argv[2])
if not reference or run != reference:
    print(f"FAIL: {sys.argv[1]}'s losses {run} differ from the reference run's {reference}"); sys.exit(1)
print(f"losses of steps {min(run)}-{max(run)} equal the reference run's bit for bit (step {max(run)}: {run[max(run)]!r})")
PY

# Nothing left running: no loom rank on any host (on a cut-off host 3 the watchdog ends them), no
# slurmstepd, orted or mpirun on hosts 1 and 2.
leftovers() {
  local host pid
  for host in "$h1" "$h2" "$h3"; do
    for pid in $(ip netns pids "$host"); do
      # loom executes itself again at start (OMP_WAIT_POLICY), so its comm is "exe": by binary.
      [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$loom" ] && echo "$host:$pid:loom"
      case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
        slurmstepd|orted|mpirun) [ "$host" != "$h3" ] && echo "$host:$pid:$(cat "/proc/$pid/comm" 2>/dev/null)" ;;
      esac
    done
  done
  return 0
}
for _ in $(seq 1 100); do [ -z "$(leftovers)" ] && break; sleep 0.1; done
left=$(leftovers)
[ -z "$left" ] || fail "left running after the supervisor: $left"

# The recovery's phases from the supervisor's events and the step logs (one clock: this machine's).
# loom train prints its first line after the checkpoint load, so the load is inside the start-up;
# reading and verifying that checkpoint's every tensor with loom checkpoint inspect bounds it.
inspect_start=$EPOCHREALTIME
"$loom" checkpoint inspect "$resumed_dir" > /dev/null || fail "loom checkpoint inspect $resumed_dir failed"
inspect_seconds=$(awk -v a="$inspect_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
python3 - "$failure" elastic "$inspect_seconds" "$K" "$L" <<'PY'
import re, sys
failure, work, lost = float(sys.argv[1]), sys.argv[2], int(sys.argv[5])
events = [(float(t), text) for t, text in (line.rstrip("\n").split(" ", 1) for line in open(f"{work}/events.log"))]
def event(pattern, after=0.0):
    return next(t for t, text in events if t >= after and re.search(pattern, text))
def line(log, pattern):
    return next(float(l.split(" ", 1)[0]) for l in open(log) if re.search(pattern, l.split(" ", 1)[1]))
began = event(rf"^attempt {lost}: \d+ hosts")  # the attempt that lost host 3 (1 unless a launch failed)
failing, ended = event(r"^probing the hosts: the step is failing", began), event(rf"^attempt {lost}: the step ended")
decided, planned = event(rf"^attempt {lost} failed"), event(rf"^attempt {lost + 1}: ")
final = f"{work}/attempt-{sys.argv[4]}.log"  # attempt 2, or a later one where a launch failed
started, first = line(final, r"^loom train: hosts:"), line(final, r"^step \d+ ")
print(f"recovery: detection {ended - failure:.2f} s (failure -> first error line {failing - failure:.2f} s, -> the step's end "
      f"{ended - failing:.2f} s; the hosts probed meanwhile, {decided - ended:.2f} s more), re-planning {planned - decided:.2f} s, "
      f"start-up {started - planned:.2f} s (launch, MPI_Init, build and checkpoint load: loom's first line follows the load), "
      f"first step {first - started:.2f} s; failure -> first step {first - failure:.2f} s; reading and verifying the "
      f"checkpoint (loom checkpoint inspect) {sys.argv[3]} s")
PY
echo "slurm_elastic.sh $mode ($launcher): $( ((failed)) && echo failed || echo passed) in $((SECONDS - start)) s"
exit $failed
