#!/usr/bin/env bash
# Proves, on this machine, that a bundle from scripts/gpu_bundle.sh runs where only the GPU image's
# libraries exist (issue 33): it unpacks the bundle into a chroot that holds nothing else but the
# libraries scripts/gpu_image_libs.txt lists (copied from here; the CUDA toolkit's folder mounted
# read-only), bash and its libtinfo, then inside it
#   1. lists every ELF of the bundle with the dynamic loader: any "not found" fails;
#   2. runs `mpiexec -n 2` of CPU_TEST (default comm_allreduce_test, if the bundle has it), and
#      `loom train` on the CPU alone (an MPI singleton) and over 2 stages with `mpiexec -n 2` (if
#      the bundle has loom), through the bundle's own Open MPI: each must pass;
#   3. runs `mpiexec -n 1` of comm_nccl_test (if the bundle has it): without a GPU it must skip (77).
# Needs root (chroot, mount namespaces). Usage: scripts/gpu_bundle_proof.sh BUNDLE.tar.xz [CPU_TEST]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
archive=$(readlink -f "${1:?usage: scripts/gpu_bundle_proof.sh BUNDLE.tar.xz [CPU_TEST]}")
cpu_test=${2:-comm_allreduce_test}
jail=$(mktemp -d)
trap 'rm -rf "$jail"' EXIT

# The image's libraries from this machine, in the jail's /usr/lib/x86_64-linux-gnu.
populate_image() {
  local pattern file
  mkdir -p "$jail/usr/lib/x86_64-linux-gnu" "$jail/usr/lib64" "$jail/usr/bin" "$jail/usr/local/cuda/lib" \
    "$jail/bundle" "$jail/proc" "$jail/sys" "$jail/dev" "$jail/tmp"
  ln -s usr/lib "$jail/lib"; ln -s usr/lib64 "$jail/lib64"; ln -s usr/bin "$jail/bin"
  while read -r pattern; do
    [[ -z "$pattern" || "$pattern" == \#* ]] && continue
    for file in /usr/lib/x86_64-linux-gnu/$pattern; do
      [ -e "$file" ] && cp -L "$file" "$jail/usr/lib/x86_64-linux-gnu/"
    done
  done <"$root/scripts/gpu_image_libs.txt"
  cp -L /lib64/ld-linux-x86-64.so.2 "$jail/usr/lib64/"
  cp /bin/bash "$jail/usr/bin/"
  cp -L /usr/lib/x86_64-linux-gnu/libtinfo.so.6 "$jail/usr/lib/x86_64-linux-gnu/"
  ln -s bash "$jail/usr/bin/sh"
  tar -C "$jail/bundle" -xJf "$archive"
}

# Runs inside the jail (bash only: no coreutils there).
inside() {
  cat <<'EOF'
set -u
source /bundle/env.sh
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/cuda/lib" TMPDIR=/tmp HOME=/tmp
failed=0
shopt -s globstar nullglob
for elf in /bundle/bin/* /bundle/usr/**/*.so*; do
  listing=$(/lib64/ld-linux-x86-64.so.2 --list "$elf" 2>&1)
  if [[ "$listing" == *"not found"* ]]; then echo "unresolved in $elf:"; echo "$listing" | grep "not found"; failed=1; fi
done
((failed)) || echo "every ELF of the bundle resolves its libraries"
if [ -x "/bundle/bin/$1" ]; then
  mpiexec -n 2 "/bundle/bin/$1"; rc=$?
  echo "mpiexec -n 2 $1: rc $rc"; ((rc == 0)) || failed=1
fi
if [ -x /bundle/bin/loom ]; then
  /bundle/bin/loom train --model mlp --size tiny --data synthetic --steps 2 --device cpu --quiet; rc=$?
  echo "loom train without mpiexec (an MPI singleton): rc $rc"; ((rc == 0)) || failed=1
  mpiexec -n 2 /bundle/bin/loom train --model mlp --size tiny --data synthetic --stages 2 --steps 3 --device cpu; rc=$?
  echo "mpiexec -n 2 loom train --stages 2 --device cpu: rc $rc"; ((rc == 0)) || failed=1
fi
if [ -x /bundle/bin/comm_nccl_test ]; then
  mpiexec -n 1 /bundle/bin/comm_nccl_test; rc=$?
  echo "mpiexec -n 1 comm_nccl_test: rc $rc (77: skipped, no GPU)"; ((rc == 77 || rc == 0)) || failed=1
fi
exit $failed
EOF
}

populate_image
inside >"$jail/proof.sh"
unshare -m bash -c '
  jail=$1; shift
  mount --rbind /dev "$jail/dev" && mount -t proc proc "$jail/proc" && mount --rbind /sys "$jail/sys" && mount -t tmpfs tmpfs "$jail/tmp" &&
  mount --bind -o ro /usr/local/cuda/lib "$jail/usr/local/cuda/lib" &&
  mkdir -p "$jail/dev/shm" && exec chroot "$jail" /usr/bin/bash /proof.sh "$@"' _ "$jail" "$cpu_test"
