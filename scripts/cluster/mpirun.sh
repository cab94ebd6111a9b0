#!/usr/bin/env bash
# mpirun across the emulated hosts of scripts/cluster/netns.sh, as on a cluster: mpirun starts
# inside the first host's namespace, reaches the other hosts through netns-rsh.sh (in place of
# ssh), ranks on one host share memory (vader) and ranks on different hosts talk TCP over the
# shaped veth links. Every host gets its own hostname (UTS namespace), as real hosts have.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"

usage() {
  cat <<'HELP'
usage: mpirun.sh -H ADDR:SLOTS[,ADDR:SLOTS...] [mpirun options...] PROGRAM [ARGS...]
       mpirun.sh --hostfile FILE [mpirun options...] PROGRAM [ARGS...]

Runs Open MPI's mpirun in the namespace of the first host listed (an address from
`netns.sh up`, e.g. 198.18.0.1, or a namespace name such as loomh1), adding:
  --mca plm_rsh_agent scripts/cluster/netns-rsh.sh     remote hosts through `ip netns exec`
  --mca btl tcp,self,vader                             TCP between hosts, shared memory within
  --mca btl_tcp_if_include / oob_tcp_if_include NET   only the cluster's subnet
  --mca oob_tcp_keepalive_time 2 (intvl 1, probes 3)   daemons notice a silent host in ~5 s
  --mca mpi_yield_when_idle 1                          all hosts share this machine's cores: waiting
                                                       ranks yield (unless OMPI_MCA_mpi_yield_when_idle says)
  --oversubscribe, and --allow-run-as-root when run as root
With CLUSTER_NAME set, addresses are looked up among that cluster's hosts only (clusters made with
`netns.sh up --name` may share a subnet). Every other option goes to mpirun unchanged (-np, --map-by, --rankfile, -x, ...). The environment
reaches remote ranks too (the launcher is a local process), unlike ssh on a real cluster.
Example: scripts/cluster/mpirun.sh -H 198.18.0.1:2,198.18.0.2:2 -np 4 build/apps/loom bench allreduce
HELP
}

# The first host named by -H/--host/--hostfile among mpirun's arguments.
first_host() {
  while (($#)); do
    case "$1" in
      -H|--host|-host) [ -n "${2:-}" ] || cluster_die "$1 needs a host list"; echo "${2%%[:,]*}"; return ;;
      --hostfile|-hostfile|--machinefile|-machinefile)
        [ -r "${2:-}" ] || cluster_die "cannot read hostfile '${2:-}'"
        awk '!/^[ \t]*(#|$)/ {print $1; exit}' "$2"; return ;;
    esac
    shift
  done
  cluster_die "name the hosts with -H ADDR:SLOTS,... or --hostfile FILE (see --help)"
}

main() {
  (($#)) || cluster_die "no arguments (see --help)"
  case "$1" in -h|--help) usage; exit 0 ;; esac  # later, --help belongs to the program
  local host ns subnet
  host=$(first_host "$@")
  [ -n "$host" ] || cluster_die "the host list is empty"
  cluster_require_root
  if ip netns list | awk '{print $1}' | grep -qx "$host"; then ns=$host; else
    ns=$(cluster_namespace_of "$host") || cluster_die "no network namespace has address '$host' (scripts/cluster/netns.sh up N first)"
  fi
  subnet=$(ip -n "$ns" -4 route show proto kernel dev eth0 | awk '{print $1; exit}')
  [ -n "$subnet" ] || cluster_die "host '$ns' has no eth0 address (not a netns.sh host?)"
  local flags=(--oversubscribe --mca plm_rsh_agent "$here/netns-rsh.sh" --mca btl tcp,self,vader
               --mca btl_tcp_if_include "$subnet" --mca oob_tcp_if_include "$subnet"
               --mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3
               --mca mpi_yield_when_idle "${OMPI_MCA_mpi_yield_when_idle:-1}")
  [ "$(id -u)" -ne 0 ] || flags+=(--allow-run-as-root)
  exec ip netns exec "$ns" unshare --uts bash -c 'hostname "$0" && exec mpirun "$@"' "$ns" "${flags[@]}" "$@"
}

main "$@"
