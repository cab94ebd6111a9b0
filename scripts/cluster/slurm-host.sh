#!/usr/bin/env bash
# Turns the current process into one emulated host of scripts/cluster/slurm.sh and starts its Slurm
# daemons. slurm.sh runs it as `ip netns exec HOST unshare --uts --mount slurm-host.sh ...`, so
# everything below happens in the host's own UTS and mount namespaces and vanishes with them:
#   - the hostname is the host's name (Slurm, Open MPI and loom tell hosts apart by it);
#   - DIR/host-tmp is the host's own directory (bind mount), and slurm.conf's TmpFS and mpi.conf's
#     PMIxCliTmpDirBase point there: Slurm's PMIx plugin makes a directory per job step in it, and
#     a second host's slurmstepd fails when it finds the first one's there (with the machine's
#     /tmp shared: "Cannot create directory .../spmix_appdir_0_1.0: File exists"). /tmp itself
#     stays the machine's, so a build under /tmp (a CI clone) is seen by every host;
#   - /etc/hosts names every host of the cluster, as a site's DNS would.
# No cgroup is mounted: `ip netns exec` gave the host a fresh sysfs without the machine's cgroup
# mounts, and slurm.sh's cgroup.conf names cgroup/v1 instead of letting slurmd detect the version
# (which fails there with "No filesystem mounted on /sys/fs/cgroup"); proctrack/linuxproc and
# task/none never use cgroups.
# Usage: slurm-host.sh DIR HOST [controller]   (DIR: the cluster's state directory)
set -euo pipefail
source "$(dirname "$0")/common.sh"
(($# == 2 || $# == 3)) || cluster_die "usage: slurm-host.sh DIR HOST [controller] (run by slurm.sh)"
dir=$1 host=$2 role=${3:-}
[ -r "$dir/slurm.conf" ] || cluster_die "no slurm.conf in '$dir' (run by slurm.sh up)"
[ -z "$role" ] || [ "$role" = controller ] || cluster_die "unknown role '$role' (controller or nothing)"

hostname "$host"
mount --bind "$dir/tmp/$host" "$dir/host-tmp"
mount --bind "$dir/hosts" /etc/hosts

export SLURM_CONF=$dir/slurm.conf
cd /
# Both daemons fork into the background and stay in this host's namespaces.
[ "$role" != controller ] || slurmctld
exec slurmd -N "$host"
