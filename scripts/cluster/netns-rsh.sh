#!/usr/bin/env bash
# Open MPI's remote launcher for the emulated cluster (mpirun --mca plm_rsh_agent): called as
# `netns-rsh.sh HOST COMMAND...` like ssh, it runs COMMAND with bash inside the network namespace
# that owns address HOST (or the namespace named HOST).
set -euo pipefail
source "$(dirname "$0")/common.sh"
(($# >= 2)) || cluster_die "usage: netns-rsh.sh HOST COMMAND... (Open MPI's plm_rsh_agent for scripts/cluster/)"
host=$1; shift
# Resolve HOST within the caller's cluster: the namespace this runs in is one of its hosts.
own=$(ip netns identify $$)
[ -n "${CLUSTER_NAME:-}" ] || [ -z "$own" ] || export CLUSTER_NAME=${own%h[0-9]*}
if ip netns list | awk '{print $1}' | grep -qx "$host"; then
  ns=$host
else
  ns=$(cluster_namespace_of "$host") || cluster_die "no network namespace has address '$host' (is the cluster up? scripts/cluster/netns.sh status)"
fi
# Own hostname per host (UTS namespace): Open MPI names its shared-memory segments and session
# directories after the hostname, so hosts that share one collide (docs/comm.md, "Emulated cluster").
exec ip netns exec "$ns" unshare --uts bash -c 'hostname "$0" && exec bash -c "$1"' "$ns" "$*"
