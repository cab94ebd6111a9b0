#!/usr/bin/env bash
# A real Slurm cluster (Debian's slurm-wlm and munge) on the emulated hosts of netns.sh: slurmctld
# on the first host, one slurmd per host, each host in its own network, UTS and mount namespaces
# (slurm-host.sh), one munged for the cluster. All of its files live in one state directory,
# /run/loom-slurm/NAME (configuration, munge key and socket, spool, logs, each host's own temporary directory); `down`
# ends every process of the cluster, deletes its namespaces and that directory (idempotent).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
state_root=/run/loom-slurm

usage() {
  cat <<'HELP'
usage: slurm.sh up N [--name NAME] [--subnet K] [--inter-gbit X] [--cpus C]
       slurm.sh down [--name NAME]
       slurm.sh status [--name NAME]
       slurm.sh exec [--name NAME] [--host I] COMMAND [ARGS...]

  up N          netns.sh up N (hosts NAMEh1..NAMEhN at 198.18.K.1..N), then munged, slurmctld on
                NAMEh1 and slurmd on every host; returns once all N nodes are idle in partition
                `loom`. Already up with N hosts: says so and does nothing.
  --cpus C      CPUs each node offers to jobs (default 4; all hosts share this machine's cores)
  --name, --subnet, --inter-gbit   as for netns.sh
  down          end the cluster's processes (daemons, job steps), delete its namespaces and its
                state directory /run/loom-slurm/NAME (no error when nothing is there)
  status        daemons, `sinfo` and `squeue`
  exec          run COMMAND on host I (default 1, also the controller: the login node) inside
                that host's namespaces, in the current directory, with SLURM_CONF set and Open MPI
                told to use TCP on the cluster's subnet only (OMPI_MCA_btl, *_tcp_if_include),
                to yield when idle, to allow root and to fence once in MPI_Init
                (OMPI_MCA_pmix_base_async_modex=1, _collect_data=0). E.g.:
                  slurm.sh exec srun -N2 --ntasks-per-node=2 --mpi=pmix build/apps/loom train ...
                  slurm.sh exec sbatch --wait scripts/cluster/train.sbatch build/apps/loom ...
HELP
}

state_of() { echo "$state_root/$1"; }

# slurm.conf for hosts NAMEh1..N at 198.18.K.1..N: no cgroup tracking (linuxproc, task/none),
# no accounting, per-node spool and pid files, everything in DIR.
write_config() {
  local dir=$1 name=$2 n=$3 subnet=$4 cpus=$5 i
  cat > "$dir/slurm.conf" <<CONF
ClusterName=$name
SlurmctldHost=${name}h1(198.18.$subnet.1)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
KillWait=5
TmpFS=$dir/host-tmp
CONF
  for ((i = 1; i <= n; i++)); do
    echo "NodeName=${name}h$i NodeAddr=198.18.$subnet.$i CPUs=$cpus RealMemory=1024 State=UNKNOWN" >> "$dir/slurm.conf"
  done
  echo "PartitionName=loom Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >> "$dir/slurm.conf"
  # Named, not detected: detection fails on the hosts' fresh sysfs (slurm-host.sh).
  echo "CgroupPlugin=cgroup/v1" > "$dir/cgroup.conf"
  # Each host's own temporary directory for the PMIx plugin's per-step client directories.
  echo "PMIxCliTmpDirBase=$dir/host-tmp" > "$dir/mpi.conf"
  { echo "127.0.0.1 localhost"; for ((i = 1; i <= n; i++)); do echo "198.18.$subnet.$i ${name}h$i"; done; } > "$dir/hosts"
}

start_munge() {
  local dir=$1 i
  mungekey --create --keyfile "$dir/munge.key"  # the cluster's own key, mode 0600
  munged --force --key-file "$dir/munge.key" --socket "$dir/munge.socket" --pid-file "$dir/munged.pid" \
         --log-file "$dir/log/munged.log" --seed-file "$dir/munged.seed"
  for ((i = 0; i < 50; i++)); do
    [ -S "$dir/munge.socket" ] && return 0
    sleep 0.1
  done
  cluster_die "munged did not start (log: $dir/log/munged.log)"
}

# Waits until sinfo on the controller lists N idle nodes; on timeout prints the logs' tails.
wait_for_nodes() {
  local dir=$1 name=$2 n=$3 i idle
  for ((i = 0; i < 150; i++)); do
    idle=$(SLURM_CONF=$dir/slurm.conf ip netns exec "${name}h1" sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l)
    [ "$idle" -eq "$n" ] && return 0
    sleep 0.2
  done
  tail -n 5 "$dir"/log/*.log >&2 || true
  cluster_die "Slurm did not come up: $idle of $n nodes idle after 30 s (logs above, in $dir/log)"
}

slurm_up() {
  local n=$1 name=$2 subnet=$3 gbit=$4 cpus=$5 dir i
  dir=$(state_of "$name")
  if [ -f "$dir/slurm.conf" ]; then
    local have
    have=$(grep -c '^NodeName=' "$dir/slurm.conf")
    [ "$have" -eq "$n" ] || cluster_die "Slurm cluster '$name' is already up with $have hosts (slurm.sh down --name $name first)"
    grep -qxF "SlurmctldHost=${name}h1(198.18.$subnet.1)" "$dir/slurm.conf" ||
      cluster_die "Slurm cluster '$name' is already up on another subnet (slurm.sh down --name $name first)"
    wait_for_nodes "$dir" "$name" "$n"
    echo "slurm.sh: Slurm cluster '$name' is already up on ${name}h1..${name}h$n"
    return 0
  fi
  ip netns list | awk '{print $1}' | grep -qx "${name}sw" &&
    cluster_die "emulated cluster '$name' is up without Slurm (netns.sh down --name $name first)"
  trap "slurm_down $name" EXIT  # a half-made cluster is removed again
  "$here/netns.sh" up "$n" --name "$name" --subnet "$subnet" --inter-gbit "$gbit" >/dev/null
  mkdir -p -m 0755 "$state_root" "$dir"
  mkdir -p "$dir/log" "$dir/ctld" "$dir/spool" "$dir/host-tmp"
  write_config "$dir" "$name" "$n" "$subnet" "$cpus"
  start_munge "$dir"
  local role=controller
  for ((i = 1; i <= n; i++)); do
    mkdir -p -m 1777 "$dir/tmp/${name}h$i"
    mkdir -p "$dir/spool/${name}h$i"
    ip netns exec "${name}h$i" unshare --uts --mount --propagation private \
      "$here/slurm-host.sh" "$dir" "${name}h$i" $role ||
      cluster_die "could not start Slurm's daemons on host ${name}h$i (their messages above)"
    role=""
  done
  wait_for_nodes "$dir" "$name" "$n"
  trap - EXIT
  echo "slurm.sh: Slurm cluster '$name' up: slurmctld on ${name}h1, slurmd on ${name}h1..${name}h$n" \
       "(198.18.$subnet.1..$n), $cpus CPUs each, partition loom; state in $dir"
}

slurm_down() {
  local name=$1 dir pid
  dir=$(state_of "$name")
  "$here/netns.sh" down --name "$name"  # ends every process in the hosts: daemons, steps, tasks
  if [ -f "$dir/munged.pid" ]; then
    pid=$(cat "$dir/munged.pid")
    if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = munged ]; then
      kill "$pid"
      while [ -e "/proc/$pid" ]; do sleep 0.05; done
    fi
  fi
  rm -rf "$dir"
  rmdir "$state_root" 2>/dev/null || true
}

slurm_status() {
  local name=$1 dir
  dir=$(state_of "$name")
  [ -f "$dir/slurm.conf" ] || { echo "slurm.sh: no Slurm cluster '$name'"; return 0; }
  local daemon pid
  for daemon in munged slurmctld "$dir"/slurmd.*.pid; do
    daemon=$(basename "$daemon" .pid)
    pid=$(cat "$dir/$daemon.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && [ -e "/proc/$pid" ]; then echo "$daemon: pid $pid"; else echo "$daemon: not running"; fi
  done
  slurm_exec "$name" 1 sinfo
  slurm_exec "$name" 1 squeue
}

# Runs a command inside host I's namespaces (those of its slurmd) in the caller's directory.
slurm_exec() {
  local name=$1 host=$2 dir pid subnet
  shift 2
  dir=$(state_of "$name")
  [ -f "$dir/slurm.conf" ] || cluster_die "no Slurm cluster '$name' (slurm.sh up N --name $name first)"
  pid=$(cat "$dir/slurmd.${name}h$host.pid" 2>/dev/null) && [ -e "/proc/$pid" ] ||
    cluster_die "host ${name}h$host has no running slurmd (slurm.sh status --name $name)"
  subnet=$(ip -n "${name}h$host" -4 route show proto kernel dev eth0 | awk '{print $1; exit}')
  # One PMIx fence in MPI_Init instead of two (peers' addresses fetched on demand): with the
  # default two, about 1 srun launch in 30 here crashed a rank inside MPI_Init (docs/comm.md,
  # "Slurm on the emulated cluster").
  SLURM_CONF=$dir/slurm.conf OMPI_MCA_btl=tcp,self,vader OMPI_MCA_btl_tcp_if_include=$subnet \
  OMPI_MCA_oob_tcp_if_include=$subnet OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1} \
  OMPI_MCA_pmix_base_async_modex=${OMPI_MCA_pmix_base_async_modex:-1} \
  OMPI_MCA_pmix_base_collect_data=${OMPI_MCA_pmix_base_collect_data:-0} \
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    nsenter --target "$pid" --net --uts --mount bash -c 'cd "$0" && exec "$@"' "$PWD" "$@"
}

main() {
  (($#)) || cluster_die "missing command: up N, down, status or exec (see --help)"
  local command=$1; shift
  case "$command" in -h|--help) usage; exit 0 ;; up|down|status|exec) ;; *) cluster_die "unknown command '$command' (up, down, status, exec)";; esac
  local n="" name=loom subnet=0 gbit=0 cpus=4 host=1
  if [ "$command" = up ]; then
    (($#)) || cluster_die "up needs the number of hosts N"
    n=$1; shift
    cluster_check_hosts "$n"
  fi
  while (($#)); do
    case "$1" in
      -h|--help) usage; exit 0 ;;
      --name) name=${2:-}; shift ;;
      --subnet) subnet=${2:-}; shift ;;
      --inter-gbit) gbit=${2:-}; shift ;;
      --cpus) cpus=${2:-}; shift ;;
      --host) host=${2:-}; shift ;;
      *) [ "$command" = exec ] && break; cluster_die "unknown argument '$1' (see --help)" ;;
    esac
    shift
  done
  cluster_check_name "$name"
  cluster_check_subnet "$subnet"
  cluster_check_gbit "$gbit"
  [[ "$cpus" =~ ^[0-9]+$ ]] && ((cpus >= 1 && cpus <= 1024)) || cluster_die "--cpus must be 1..1024, got '$cpus'"
  [[ "$host" =~ ^[0-9]+$ ]] && ((host >= 1)) || cluster_die "--host must be a host number from 1, got '$host'"
  cluster_require_root
  local tool
  for tool in slurmctld slurmd munged mungekey sinfo unshare nsenter; do
    command -v "$tool" >/dev/null || cluster_die "'$tool' is not installed (scripts/setup.sh installs slurm-wlm and munge)"
  done
  case "$command" in
    up) slurm_up "$n" "$name" "$subnet" "$gbit" "$cpus" ;;
    down) slurm_down "$name" ;;
    status) slurm_status "$name" ;;
    exec) (($#)) || cluster_die "exec needs a command"; slurm_exec "$name" "$host" "$@" ;;
  esac
}

main "$@"
