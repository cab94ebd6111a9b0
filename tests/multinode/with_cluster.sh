#!/usr/bin/env bash
# Runs one multinode test inside its own emulated cluster and always removes the cluster again.
# Usage: with_cluster.sh NAME SUBNET HOSTS GBIT COMMAND...
# Brings up hosts NAMEh1..NAMEhHOSTS at 198.18.SUBNET.0/24 (links at GBIT Gbit/s, 0 = unshaped),
# runs COMMAND with CLUSTER_NAME, CLUSTER_SUBNET and CLUSTER_BIN (scripts/cluster) set, then tears
# down. Exits 77 (ctest: skipped) with the reason where this machine cannot make namespaces.
set -euo pipefail
name=$1 subnet=$2 hosts=$3 gbit=$4
shift 4
cluster_bin=$(cd "$(dirname "$0")/../../scripts/cluster" && pwd)

skip() {
  echo "SKIPPED: multinode test needs $* — not available here"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "root (ip netns, veth, tc)"
command -v ip >/dev/null && command -v tc >/dev/null || skip "iproute2 (ip, tc)"
command -v unshare >/dev/null || skip "unshare (util-linux)"
command -v mpirun >/dev/null || skip "Open MPI's mpirun"
if ! ip netns add "${name}probe" 2>/dev/null; then skip "network namespaces (ip netns add failed)"; fi
ip netns delete "${name}probe"

"$cluster_bin/netns.sh" down --name "$name"  # leftovers of an interrupted earlier run
trap '"$cluster_bin/netns.sh" down --name "$name"' EXIT
"$cluster_bin/netns.sh" up "$hosts" --name "$name" --subnet "$subnet" --inter-gbit "$gbit"
export CLUSTER_NAME=$name CLUSTER_SUBNET=$subnet CLUSTER_BIN=$cluster_bin
"$@"
