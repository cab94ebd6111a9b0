# Shared by the scripts in scripts/cluster/: naming of the emulated hosts and small helpers.
# A cluster is identified by a name (default "loom"): its hosts are the network namespaces
# <name>h1..<name>hN, its switch is the namespace <name>sw (holding the bridge), and host i has the
# address 198.18.<subnet>.i/24 (198.18.0.0/15 is the benchmarking range: never routed anywhere).

cluster_die() {
  echo "$(basename "$0"): error: $*" >&2
  exit 2
}

# The arguments every cluster script takes, checked alike: host count, cluster name, link rate,
# subnet octet.
cluster_check_hosts() {
  [[ "$1" =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= 64)) || cluster_die "N must be a number of hosts in 1..64, got '$1'"
}
cluster_check_name() {
  [[ "$1" =~ ^[a-z0-9]{1,8}$ ]] || cluster_die "--name must be 1-8 of [a-z0-9], got '$1'"
}
cluster_check_gbit() {
  [[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]] || cluster_die "--inter-gbit needs a rate in Gbit/s, got '$1'"
}
cluster_check_subnet() {
  [[ "$1" =~ ^[0-9]+$ ]] && (($1 <= 255)) || cluster_die "--subnet must be 0..255, got '$1'"
}

cluster_require_root() {
  [ "$(id -u)" -eq 0 ] || cluster_die "must run as root (ip netns, veth and tc need CAP_NET_ADMIN)"
  command -v ip >/dev/null || cluster_die "'ip' (iproute2) is not installed"
}

# The namespace that holds `address` on one of its interfaces, or nothing. Where CLUSTER_NAME is
# set, only that cluster's hosts count (two clusters may use the same subnet).
cluster_namespace_of() {
  local address=$1 ns
  for ns in $(ip netns list | awk '{print $1}'); do
    [ -z "${CLUSTER_NAME:-}" ] || [[ "$ns" =~ ^${CLUSTER_NAME}h[0-9]+$ ]] || continue
    if ip -n "$ns" -o -4 addr show 2>/dev/null | awk '{print $4}' | grep -qx "$address/[0-9]*"; then
      echo "$ns"
      return 0
    fi
  done
  return 1
}
