#!/usr/bin/env bash
# The elastic supervisor: runs `loom train` as a job step of the Slurm allocation it is started in
# (or under mpirun on a list of hosts) and, when the step fails because a rank or a host failed,
# finds the hosts still alive, plans the model for them with `loom plan` (the same profile and
# cluster description, one node fewer per lost host) and resumes from the newest complete
# checkpoint under the new plan, with nobody involved. It stops on success, after --max-restarts
# restarts, when no host is left, and on an error a restart cannot fix (loom's own `loom: error`
# exit while every host still answers: bad input, a damaged checkpoint), saying which. Why a script
# and not `loom elastic`: docs/DESIGN.md, "Elastic training"; what it measures and how it was
# tested: docs/reliability.md, "31. Surviving a lost host".
#
# Usage (inside an allocation made with --no-kill, so that Slurm keeps it when a node dies):
#   salloc -N 3 --ntasks-per-node=2 --no-kill elastic.sh --loom LOOM --profile P.json \
#          --cluster 3x2:inter=1GB/s,mem=4GB --checkpoint DIR --checkpoint-every K [options] -- TRAIN FLAGS...
# or, without Slurm: elastic.sh --mpirun mpirun --hosts node1,node2,node3 ... (the same options)
# Exit status: 0 trained to the end; 1 stopped on an error a restart cannot fix; 2 bad arguments;
# 4 gave up (restarts exhausted, no host left, or no plan fits the hosts left).
set -uo pipefail

usage() {
  cat <<'HELP'
usage: elastic.sh --loom LOOM --profile FILE --cluster NxD[:OPTIONS] --checkpoint DIR
                  --checkpoint-every K [--work DIR] [--max-restarts R] [--probe-timeout S]
                  [--planner NAME] [--mpirun "MPIRUN [OPTIONS]" --hosts H1,H2,...] -- TRAIN FLAGS...

  --loom LOOM           the loom executable (the same path on every host)
  --profile FILE        the profile `loom plan` plans from (`loom profile`)
  --cluster NxD[:OPT]   the cluster as `loom plan --cluster` takes it, N = the allocation's nodes,
                        D = ranks (devices) per node; after losing hosts, N is the hosts left
  --checkpoint DIR      checkpoints (on a file system every host sees); a restart resumes from
                        DIR/latest, the newest complete checkpoint
  --checkpoint-every K  steps between checkpoints: at most K steps are redone after a failure
  --work DIR            plans, per-attempt logs and metrics, events (default DIR/elastic)
  --max-restarts R      restarts before giving up (default 3)
  --probe-timeout S     seconds a host has to run a one-task step before it counts as lost
                        (default 5)
  --planner NAME        loom plan --planner (default dapple)
  --mpirun COMMAND      launch with Open MPI's mpirun instead of srun: COMMAND (split at spaces,
                        e.g. "mpirun -x LOOM_COMM_TIMEOUT_S --mca btl_tcp_if_include eth1") with
                        the hosts of --hosts; each attempt runs COMMAND -H HOST:D,... --rankfile
                        WORK/rankfile-K (rank r on the plan's host, slot = its index there)
                        -np RANKS LOOM train ...; a host is probed with COMMAND -H HOST:1 -np 1 true
  --hosts H1,H2,...     with --mpirun: the hosts, N of them as --cluster says (names or addresses
                        mpirun reaches)
  TRAIN FLAGS           loom train's flags for the model and data; must include --global-batch
                        and --steps (or --epochs); not --plan, --resume, --checkpoint*,
                        --metrics, --stages, --replicas, --microbatches, --schedule or --quiet
                        (the supervisor owns those)

Each attempt K writes WORK/plan-K.json (`loom plan --out`), WORK/hosts-K (one host per rank, for
srun --distribution=arbitrary; WORK/rankfile-K for mpirun), WORK/attempt-K.log (the step's output,
each line prefixed with the time it arrived) and WORK/attempt-K.jsonl (--metrics); WORK/events.log
holds the supervisor's decisions, and after a restart one `recovery:` line with the time of each
phase. A DIR/latest that exists at the start is resumed from too (a supervisor started again).
HELP
}

die() { echo "elastic.sh: error: $*" >&2; exit 2; }
say() { echo "elastic.sh: $*"; echo "$EPOCHREALTIME $*" >> "$work/events.log"; }
# Seconds between two $EPOCHREALTIME values, to 0.01 s.
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
later() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > a ? b - a : 0) }'; }  # seconds, 0 if b is earlier

loom="" profile="" cluster="" checkpoint="" every="" work="" max_restarts=3 probe_timeout=5 planner=dapple
mpirun_command="" host_list="" mpirun=()
while (($#)); do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --loom|--profile|--cluster|--checkpoint|--checkpoint-every|--work|--max-restarts|--probe-timeout|--planner|--mpirun|--hosts)
      (($# >= 2)) || die "$1 needs a value"
      case "$1" in
        --loom) loom=$2 ;; --profile) profile=$2 ;; --cluster) cluster=$2 ;; --checkpoint) checkpoint=$2 ;;
        --checkpoint-every) every=$2 ;; --work) work=$2 ;; --max-restarts) max_restarts=$2 ;;
        --probe-timeout) probe_timeout=$2 ;; --planner) planner=$2 ;; --mpirun) mpirun_command=$2 ;;
        --hosts) host_list=$2 ;;
      esac
      shift ;;
    --) shift; break ;;
    *) die "unknown argument '$1' (the train flags go after --; see --help)" ;;
  esac
  shift
done
train=("$@")

[ -n "$loom" ] && [ -x "$loom" ] || die "--loom must name the loom executable, got '${loom}'"
[ -n "$profile" ] && [ -r "$profile" ] || die "--profile: cannot read '${profile}'"
[[ "$cluster" =~ ^([0-9]+)x([0-9]+)(:.*)?$ ]] ||
  die "--cluster must be NxD[:OPTIONS] as loom plan takes it (e.g. 3x2:inter=1GB/s,mem=4GB), got '$cluster'"
cluster_nodes=${BASH_REMATCH[1]} per_host=${BASH_REMATCH[2]} cluster_options=${BASH_REMATCH[3]}
((per_host >= 1)) || die "--cluster: D (ranks per node) must be at least 1, got '$cluster'"
[ -n "$checkpoint" ] || die "--checkpoint DIR is required (a restart resumes from it)"
[[ "$every" =~ ^[1-9][0-9]*$ ]] || die "--checkpoint-every must be a number of steps >= 1, got '$every'"
[[ "$max_restarts" =~ ^[0-9]+$ ]] || die "--max-restarts must be a number >= 0, got '$max_restarts'"
[[ "$probe_timeout" =~ ^[1-9][0-9]*$ ]] || die "--probe-timeout must be whole seconds >= 1, got '$probe_timeout'"
((${#train[@]})) || die "no train flags after -- (the model, data, --global-batch, --steps)"

# The train flags: the ones the supervisor sets itself are refused; --global-batch and --optimizer
# are also what the plan is made for.
global_batch="" optimizer=adam
for ((i = 0; i < ${#train[@]}; i++)); do
  flag=${train[i]%%=*}
  case "$flag" in
    --plan|--resume|--checkpoint|--checkpoint-every|--metrics|--stages|--replicas|--microbatches|--schedule|--quiet)
      die "train flag $flag is set by the supervisor (each attempt's plan, checkpoint and metrics); leave it out" ;;
    --global-batch|--optimizer)
      if [[ "${train[i]}" == *=* ]]; then value=${train[i]#*=}; else value=${train[i + 1]:-}; fi
      if [ "$flag" = --global-batch ]; then global_batch=$value; else optimizer=$value; fi ;;
  esac
done
[ -n "$global_batch" ] || die "the train flags need --global-batch B (the plan is made for it)"

if [ -n "$mpirun_command" ]; then
  read -ra mpirun <<< "$mpirun_command"
  command -v "${mpirun[0]}" >/dev/null || die "--mpirun: '${mpirun[0]}' is not a command"
  [[ "$host_list" =~ ^[^,[:space:]]+(,[^,[:space:]]+)*$ ]] || die "--mpirun needs --hosts H1,H2,... (got '$host_list')"
  IFS=, read -ra hosts <<< "$host_list"
  ((${#hosts[@]} == cluster_nodes)) ||
    die "--cluster $cluster has $cluster_nodes nodes but --hosts names ${#hosts[@]} (${hosts[*]})"
else
  [ -z "$host_list" ] || die "--hosts goes with --mpirun (under Slurm the hosts are the allocation's)"
  [ -n "${SLURM_JOB_ID:-}" ] ||
    die "not inside a Slurm allocation: start it with salloc -N N --no-kill (or from an sbatch --no-kill" \
        "script), or give --mpirun and --hosts"
  for tool in srun scontrol; do command -v "$tool" >/dev/null || die "'$tool' is not installed"; done
  mapfile -t hosts < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
  ((${#hosts[@]} == cluster_nodes)) ||
    die "--cluster $cluster has $cluster_nodes nodes but the allocation has ${#hosts[@]} (${hosts[*]})"
  # SLURM_TASKS_PER_NODE reads like "2(x3)" or "2,1": every node must take D tasks.
  for tasks in $(tr ',' ' ' <<< "${SLURM_TASKS_PER_NODE:-}"); do
    tasks=${tasks%%(*}
    ((tasks >= per_host)) ||
      die "the allocation has $tasks task(s) on a node, --cluster $cluster needs $per_host (salloc --ntasks-per-node=$per_host)"
  done
fi
command -v timeout >/dev/null || die "'timeout' (coreutils) is not installed"

work=${work:-$checkpoint/elastic}
mkdir -p "$work" "$checkpoint" || die "cannot create '$work'"
: > "$work/events.log"

# The hosts of `hosts` that run one task within the probe timeout, in order, into FILE (written
# whole, by rename). srun --overlap: a step stuck on a lost host may still hold the others' CPUs in
# slurmctld's books.
probe_hosts() {
  local out=$1 host dir probe
  dir=$(mktemp -d)
  for host in "${hosts[@]}"; do
    if ((${#mpirun[@]})); then probe=("${mpirun[@]}" -H "$host:1" -np 1 true)
    else probe=(srun --overlap -N1 -n1 -w "$host" --quiet true); fi
    (timeout -k 1 "$probe_timeout" "${probe[@]}" </dev/null >/dev/null 2>&1 && touch "$dir/$host") 2>/dev/null &
  done
  wait 2>/dev/null
  for host in "${hosts[@]}"; do [ -e "$dir/$host" ] && echo "$host"; done > "$out.tmp"
  echo "$EPOCHREALTIME" > "$out.time"
  mv "$out.tmp" "$out"
  rm -rf "$dir"
}

# Copies the step's output to stdout and, each line with its arrival time, to LOG; at the first
# sign of a failure (a loom or srun error) it starts probing the hosts into ALIVE, while srun still
# waits for the step's last tasks (up to KillWait + 2 s for those on a lost host).
follow_step() {
  local log=$1 alive=$2 line probing=""
  while IFS= read -r line; do
    echo "$line"
    echo "$EPOCHREALTIME $line" >> "$log"
    if [ -z "$probing" ] && [[ "$line" =~ ^(loom:\ error|srun:\ error|srun:\ Job\ step\ aborted|ORTE\ has\ lost|mpirun\ noticed) ]]; then
      probing=1
      echo "$EPOCHREALTIME probing the hosts: the step is failing" >> "$work/events.log"
      probe_hosts "$alive" </dev/null &
    fi
  done
  echo "$EPOCHREALTIME" > "$log.end"  # srun closed its output: the step is over
  wait
}

# loom plan for the current hosts into WORK/plan-K.json, then one host per rank into WORK/hosts-K
# (rank order, from each rank's node in the plan). Returns non-zero when no plan fits.
make_plan() {
  local attempt=$1 n=${#hosts[@]}
  local plan=$work/plan-$attempt.json
  if ! "$loom" plan --profile "$profile" --cluster "${n}x${per_host}${cluster_options}" --global-batch "$global_batch" \
       --optimizer "$optimizer" --planner "$planner" --out "$plan" > "$work/plan-$attempt.txt" 2>&1 ||
     [ ! -s "$plan" ]; then
    sed 's/^/  plan: /' "$work/plan-$attempt.txt"
    return 1
  fi
  # Each stage lists its ranks and their (node, device): rank -> host hosts[node].
  python3 - "$plan" "${hosts[@]}" > "$work/hosts-$attempt" <<'PY' || return 1
import json, sys
plan, hosts = json.load(open(sys.argv[1])), sys.argv[2:]
node_of = {}
for stage in plan["stages"]:
    for rank, device in zip(stage["ranks"], stage["devices"]):
        node_of[rank] = device["node"]
for rank in range(len(node_of)):
    print(hosts[node_of[rank]])
PY
}

# The layout of a plan in one line: "[0-2]x2 | [3-4]x2 | [5-7]x2 on 6 ranks".
plan_layout() {
  python3 -c '
import json, sys
plan = json.load(open(sys.argv[1]))
# Version 2 lists one [first, last] per chunk the stage holds; version 1 one range.
def ranges(layers):
    return layers if isinstance(layers[0], list) else [layers]
stages = ["+".join("[%d-%d]" % tuple(r) for r in ranges(s["layers"])) + "x%d" % s["replicas"] for s in plan["stages"]]
print(" | ".join(stages), "on", sum(len(s["ranks"]) for s in plan["stages"]), "ranks, M=%d" % plan["microbatches"])' "$1"
}

# The time (first field of WORK/attempt-K.log) of the first line matching a pattern.
time_of() { awk -v pattern="$2" '{ line = $0; sub(/^[^ ]* /, "", line) } line ~ pattern { print $1; exit }' "$1"; }
# The last completed step in a metrics file (0 when none).
last_step() { { grep -o '"step":[0-9]*' "$1" 2>/dev/null || true; } | tail -n 1 | sed 's/.*://;s/^$/0/'; }

attempt=0 restarts=0 failed_at="" last_progress="" steps_done=0
while :; do
  attempt=$((attempt + 1))
  plan_start=$EPOCHREALTIME
  if ! make_plan "$attempt"; then
    say "gave up: no plan fits ${#hosts[@]} hosts (${hosts[*]}) x $per_host (loom plan's output above)"
    exit 4
  fi
  plan_end=$EPOCHREALTIME
  resume=()
  [ -e "$checkpoint/latest" ] && resume=(--resume "$checkpoint")
  ranks=$(wc -l < "$work/hosts-$attempt") nodes=$(sort -u "$work/hosts-$attempt" | wc -l)
  from=${resume:+, resuming from $checkpoint/$(cat "$checkpoint/latest" 2>/dev/null)}
  say "attempt $attempt: ${#hosts[@]} hosts (${hosts[*]}), plan $work/plan-$attempt.json:" \
      "$(plan_layout "$work/plan-$attempt.json")$from"
  log=$work/attempt-$attempt.log metrics=$work/attempt-$attempt.jsonl
  rm -f "$work/alive-$attempt" "$work/alive-$attempt.time"
  launch_start=$EPOCHREALTIME
  # Rank r on the host of line r of WORK/hosts-K, the plan's placement: srun's arbitrary
  # distribution, or a rankfile for mpirun.
  if ((${#mpirun[@]})); then
    # A rankfile: rank r=HOST slot=its index on that host.
    awk '{ print "rank " NR - 1 "=" $1 " slot=" seen[$1]++ }' "$work/hosts-$attempt" > "$work/rankfile-$attempt"
    launch=("${mpirun[@]}" -H "$(sort -u "$work/hosts-$attempt" | sed "s/\$/:$per_host/" | paste -sd,)"
            --rankfile "$work/rankfile-$attempt" -np "$ranks")
  else
    # --overlap: the failed step, stuck on a lost host until slurmctld marks it down, still holds
    # the other hosts' CPUs; without it this step waits ("Requested nodes are busy").
    launch=(env SLURM_HOSTFILE="$work/hosts-$attempt" srun --overlap --mpi=pmix --kill-on-bad-exit=1
            --distribution=arbitrary -N "$nodes" -n "$ranks")
  fi
  "${launch[@]}" "$loom" train "${train[@]}" --plan "$work/plan-$attempt.json" --checkpoint "$checkpoint" \
    --checkpoint-every "$every" "${resume[@]}" --metrics "$metrics" --log-every 1 </dev/null 2>&1 |
    follow_step "$log" "$work/alive-$attempt"
  status=${PIPESTATUS[0]}
  ended=$(cat "$log.end")

  if [ -n "$failed_at" ]; then  # the phases of the recovery that led to this attempt
    started=$(time_of "$log" '^loom train: hosts:') first=$(time_of "$log" '^step [0-9]+ ')
    resumed_step=$(awk '/^[^ ]* resumed from .* after step [0-9]+$/ { print $NF; exit }' "$log")
    if [ -n "$started" ] && [ -n "$first" ]; then
      say "recovery: the failed step ended $(seconds "$last_progress" "$failed_at") s after its last step line;" \
          "the probe of the hosts (started at its first error line) ended $(later "$failed_at" "$probe_end") s after it;" \
          "re-planning $(seconds "$plan_start" "$plan_end") s;" \
          "start-up $(seconds "$launch_start" "$started") s (launch, MPI_Init, build, checkpoint load: loom prints its first" \
          "line after the load; attempt 1, which loaded nothing: $first_startup s); first step $(seconds "$started" "$first") s;" \
          "from the step's end to the first step $(seconds "$failed_at" "$first") s; steps redone $((steps_done - ${resumed_step:-0}))" \
          "(failed after step $steps_done, resumed after step ${resumed_step:-0})"
    fi
  else
    started=$(time_of "$log" '^loom train: hosts:')
    first_startup=$( [ -n "$started" ] && seconds "$launch_start" "$started" || echo "?")
  fi

  if ((status == 0)); then
    say "done: trained to the end in attempt $attempt after $restarts restart(s) on ${#hosts[@]} hosts (${hosts[*]})"
    exit 0
  fi
  failed_at=$ended
  echo "$ended attempt $attempt: the step ended with status $status" >> "$work/events.log"
  last_progress=$(awk '{ line = $0; sub(/^[^ ]* /, "", line) } line ~ /^step [0-9]+ / { t = $1 } END { print t }' "$log")
  last_progress=${last_progress:-$launch_start}
  steps_done=$(last_step "$metrics")

  # Which hosts still run a step: a host that does not is lost, whatever loom said.
  [ -e "$work/alive-$attempt" ] || probe_hosts "$work/alive-$attempt"
  mapfile -t alive < "$work/alive-$attempt"
  probe_end=$(cat "$work/alive-$attempt.time")
  lost=()
  for host in "${hosts[@]}"; do [[ " ${alive[*]} " == *" $host "* ]] || lost+=("$host"); done
  # loom's own reason: the first error line of a rank that names it (not one saying "another rank").
  error_line=$(awk '{ sub(/^[^ ]* /, "") } /^loom: error/ && !first { first = $0 }
                    /^loom: error/ && !/another rank/ { print; found = 1; exit } END { if (!found) print first }' "$log")
  # Where every rank failed alike, loom prints the job's line without a rank ("loom: error: ...") and
  # each rank exits 1 or 2 after MPI_Finalize; srun --kill-on-bad-exit then ends the ranks still
  # finalising, and reports 128 + SIGTERM for them. The first rank's own exit status is loom's.
  own_status=$(awk '/ Exited with exit code [0-9]+$/ { print $NF; exit }' "$log")
  if ((status >= 128)) && [[ "$error_line" == "loom: error: "* && "$own_status" =~ ^[12]$ ]]; then
    status=$own_status
  fi
  if ((${#lost[@]})); then
    reason="lost host(s) ${lost[*]} (no one-task step within ${probe_timeout} s)"
  elif ((status == 3 || status >= 128)) || [ -z "$error_line" ] || [[ "$error_line" == *"MPI error"* ]]; then
    # loom's watchdog (3: a peer stopped answering), a rank ended by a signal, a failure with no
    # `loom: error` line (the launcher's, or MPI_Init's inside Open MPI), or an MPI call that failed
    # (a peer's connection lost), on hosts that all still work. loom's other errors (bad input, a
    # damaged checkpoint) exit 1, bad flags 2, each with its line: a restart would fail the same way.
    reason="a rank or the launch failed (status $status${error_line:+, $error_line}) but every host answers:"
    reason+=" restarting on the same hosts"
  else
    say "stopped: the step exited with status $status and every host still answers:" \
        "an error a restart cannot fix${error_line:+: $error_line}"
    exit 1
  fi
  say "attempt $attempt failed after step $steps_done (status $status): $reason"
  if ((restarts >= max_restarts)); then
    say "gave up: $restarts restart(s) made, --max-restarts $max_restarts"
    exit 4
  fi
  ((${#alive[@]})) || { say "gave up: no host is left"; exit 4; }
  hosts=("${alive[@]}")
  restarts=$((restarts + 1))
done
