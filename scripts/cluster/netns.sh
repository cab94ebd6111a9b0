#!/usr/bin/env bash
# An emulated cluster on one machine: N network namespaces as hosts, each joined by a veth pair to
# a bridge inside a switch namespace, each host's link shaped with tc (tbf for bandwidth, netem for
# latency) in both directions. Nothing is created in the root namespace; there is no default route,
# so traffic never leaves the machine. `down` ends the processes left in the namespaces, deletes
# the namespaces, and with them every veth, bridge and qdisc that `up` made, and removes the
# shared-memory segments and session directories Open MPI left under the hosts' names (idempotent).
set -euo pipefail
source "$(dirname "$0")/common.sh"

usage() {
  cat <<'HELP'
usage: netns.sh up N [--inter-gbit X] [--latency-ms L] [--name NAME] [--subnet K]
       netns.sh down [--name NAME]
       netns.sh status [--name NAME]

  up N            make hosts NAMEh1..NAMEhN (1 <= N <= 64) with addresses 198.18.K.1..N/24,
                  veth ports into a bridge in namespace NAMEsw
  --inter-gbit X  each host link's rate in Gbit/s, each direction (default 0: unshaped)
  --latency-ms L  one-way host-to-host latency in ms (L/2 on each side of the switch; default 0;
                  needs the kernel's netem qdisc)
  --name NAME     cluster name, [a-z0-9]{1,8} (default loom); lets several clusters coexist
  --subnet K      third octet of the addresses, 0..255 (default 0)
  down            delete everything `up` made for NAME, end processes left in its hosts and
                  remove Open MPI's leftovers named after them (no error when nothing is there)
  status          list NAME's namespaces, addresses and qdisc byte counters

Run commands on a host with: ip netns exec NAMEh1 COMMAND; MPI jobs with scripts/cluster/mpirun.sh.
HELP
}

# tbf (and netem below it when there is latency) on the egress of one interface in one namespace.
shape_link() {
  local ns=$1 dev=$2 gbit=$3 delay_ms=$4
  if [ "$gbit" != 0 ]; then
    # burst: 1 ms at the rate, at least 128 KiB so one GSO packet always fits.
    local burst
    burst=$(awk -v g="$gbit" 'BEGIN { b = g * 1e9 / 8 / 1000; if (b < 131072) b = 131072; printf "%d", b }')
    ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: tbf rate "${gbit}gbit" burst "$burst" latency 100ms
    if [ "$delay_ms" != 0 ]; then
      ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:1 handle 10: netem delay "${delay_ms}ms" limit 100000
    fi
  elif [ "$delay_ms" != 0 ]; then
    ip netns exec "$ns" tc qdisc add dev "$dev" root handle 10: netem delay "${delay_ms}ms" limit 100000
  fi
}

cluster_up() {
  local n=$1 gbit=$2 latency=$3 name=$4 subnet=$5
  local switch="${name}sw"
  ip netns list | awk '{print $1}' | grep -qx "$switch" && cluster_die "cluster '$name' is already up (netns.sh down --name $name first)"
  local half_delay
  half_delay=$(awk -v l="$latency" 'BEGIN { print l / 2 }')
  trap 'cluster_down "$name"' ERR  # a half-made cluster is removed again
  ip netns add "$switch"
  ip -n "$switch" link set lo up
  if [ "$half_delay" != 0 ] && ! ip netns exec "$switch" tc qdisc add dev lo root netem delay 1ms 2>/dev/null; then
    cluster_down "$name"
    cluster_die "--latency-ms needs the netem qdisc, which this kernel lacks (CONFIG_NET_SCH_NETEM); use --latency-ms 0"
  fi
  [ "$half_delay" = 0 ] || ip netns exec "$switch" tc qdisc del dev lo root  # the probe's
  ip -n "$switch" link add br0 type bridge
  ip -n "$switch" link set br0 up
  local i host
  for ((i = 1; i <= n; i++)); do
    host="${name}h$i"
    ip netns add "$host"
    ip -n "$host" link set lo up
    # Unacknowledged TCP data to a host behind a cut link fails after ~13 s, not ~15 min (the
    # default 15 retries): mpirun then gives up on that host's daemon (docs/comm.md, "Losing a host").
    ip netns exec "$host" sysctl -qw net.ipv4.tcp_retries2=5
    ip link add eth0 netns "$host" type veth peer name "port$i" netns "$switch"
    ip -n "$switch" link set "port$i" master br0 up
    ip -n "$host" addr add "198.18.$subnet.$i/24" dev eth0
    ip -n "$host" link set eth0 up
    shape_link "$host" eth0 "$gbit" "$half_delay"
    shape_link "$switch" "port$i" "$gbit" "$half_delay"
  done
  echo "netns.sh: cluster '$name' up: $n hosts ${name}h1..${name}h$n at 198.18.$subnet.1..$n/24," \
       "links $( [ "$gbit" = 0 ] && echo unshaped || echo "$gbit Gbit/s" ), one-way latency ${latency} ms"
  trap - ERR
}

cluster_down() {
  local name=$1 ns
  for ns in $(ip netns list | awk '{print $1}'); do
    if [[ "$ns" == "${name}sw" || "$ns" =~ ^${name}h[0-9]+$ ]]; then
      # Processes still inside would keep the namespace alive: end them first.
      local pids
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
      ip netns delete "$ns"
    fi
  done
  # What killed jobs leave behind, named after the cluster's hosts: Open MPI's shared-memory
  # segments and session directories.
  rm -rf /dev/shm/vader_segment."${name}"h[0-9]*.* /tmp/ompi."${name}"h[0-9]*.*
}

cluster_status() {
  local name=$1 ns
  for ns in $(ip netns list | awk '{print $1}'); do
    [[ "$ns" == "${name}sw" || "$ns" =~ ^${name}h[0-9]+$ ]] || continue
    echo "== $ns: $(ip -n "$ns" -o -4 addr show | awk '$2 != "lo" {print $4}' | tr '\n' ' ')"
    ip netns exec "$ns" tc -s qdisc show | awk '/^qdisc (tbf|netem)/ {q = $0} /Sent/ && q {print "   " q " | " $0; q = ""}'
  done
}

main() {
  (($#)) || cluster_die "missing command: up N, down or status (see --help)"
  local command=$1; shift
  case "$command" in -h|--help) usage; exit 0 ;; up|down|status) ;; *) cluster_die "unknown command '$command' (up, down, status)";; esac
  local n="" gbit=0 latency=0 name=loom subnet=0
  if [ "$command" = up ]; then
    (($#)) || cluster_die "up needs the number of hosts N"
    n=$1; shift
    cluster_check_hosts "$n"
  fi
  while (($#)); do
    case "$1" in
      -h|--help) usage; exit 0 ;;
      --inter-gbit) gbit=${2:-}; shift ;;
      --latency-ms) latency=${2:-}; shift ;;
      --name) name=${2:-}; shift ;;
      --subnet) subnet=${2:-}; shift ;;
      *) cluster_die "unknown argument '$1' (see --help)" ;;
    esac
    shift
  done
  cluster_check_gbit "$gbit"
  [[ "$latency" =~ ^[0-9]+(\.[0-9]+)?$ ]] || cluster_die "--latency-ms needs a latency in ms, got '$latency'"
  cluster_check_name "$name"
  cluster_check_subnet "$subnet"
  cluster_require_root
  case "$command" in
    up) cluster_up "$n" "$gbit" "$latency" "$name" "$subnet" ;;
    down) cluster_down "$name" ;;
    status) cluster_status "$name" ;;
  esac
}

main "$@"
