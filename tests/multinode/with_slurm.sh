#!/usr/bin/env bash
# Runs one Slurm test inside its own Slurm cluster (scripts/cluster/slurm.sh) and removes the
# cluster again, then checks that nothing of it is left: no process that ran in its hosts (daemons,
# job steps, ranks) nor munged, no namespace, no state directory, no shared-memory file named after
# its hosts. Leftovers fail the test even when COMMAND passed.
# Usage: with_slurm.sh NAME SUBNET HOSTS COMMAND...
# COMMAND runs with CLUSTER_NAME, CLUSTER_SUBNET and CLUSTER_BIN (scripts/cluster) set. Exits 77
# (ctest: skipped) with the reason only where this is not root or the packages are missing; a
# Slurm that does not start is a failure.
set -euo pipefail
name=$1 subnet=$2 hosts=$3
shift 3
cluster_bin=$(cd "$(dirname "$0")/../../scripts/cluster" && pwd)
state=/run/loom-slurm/$name

skip() {
  echo "SKIPPED: Slurm test needs $* — not available here"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "root (namespaces, Slurm daemons)"
for tool in ip tc unshare nsenter mpirun; do command -v "$tool" >/dev/null || skip "'$tool'"; done
for tool in slurmctld slurmd srun sbatch munged mungekey; do
  command -v "$tool" >/dev/null || skip "'$tool' (packages slurm-wlm and munge: scripts/setup.sh)"
done

# Every process in the cluster's hosts, and munged: what `down` must end.
cluster_pids() {
  local ns
  for ns in $(ip netns list | awk '{print $1}'); do
    [[ "$ns" =~ ^${name}(h[0-9]+|sw)$ ]] && ip netns pids "$ns"
  done
  cat "$state/munged.pid" 2>/dev/null || true
}

down_and_check() {
  local status=$? pids leftovers="" pid
  if ((status != 0)) && compgen -G "$state/log/*.log" >/dev/null; then
    echo "== the Slurm daemons' errors and warnings (from $state/log):"
    grep -HiE "error|warning|fatal" "$state"/log/*.log | grep -v "Could not open .* state file\|Trying backup state" | tail -n 30 || true
  fi
  pids=$(cluster_pids | sort -u | tr '\n' ' ')
  "$cluster_bin/slurm.sh" down --name "$name"
  for pid in $pids; do [ ! -e "/proc/$pid" ] || leftovers+=" process $pid ($(cat "/proc/$pid/comm" 2>/dev/null))"; done
  ip netns list | awk '{print $1}' | grep -Eq "^${name}(h[0-9]+|sw)$" && leftovers+=" namespaces"
  [ ! -e "$state" ] || leftovers+=" $state"
  # The hosts' bind mounts live in their mount namespaces: no process may still see one.
  grep -qs "loom-slurm/$name/" /proc/[0-9]*/mountinfo && leftovers+=" mounts"
  compgen -G "/dev/shm/*${name}h[0-9]*" >/dev/null && leftovers+=" $(echo /dev/shm/*"${name}"h[0-9]*)"
  if [ -n "$leftovers" ]; then
    echo "FAIL: slurm.sh down left behind:$leftovers"
    for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
    exit 1
  fi
  echo "slurm.sh down left nothing behind ($(wc -w <<< "$pids") processes ended)"
  exit "$status"
}

"$cluster_bin/slurm.sh" down --name "$name"  # leftovers of an interrupted earlier run
trap down_and_check EXIT
"$cluster_bin/slurm.sh" up "$hosts" --name "$name" --subnet "$subnet"
export CLUSTER_NAME=$name CLUSTER_SUBNET=$subnet CLUSTER_BIN=$cluster_bin
"$@"
