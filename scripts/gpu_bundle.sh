#!/usr/bin/env bash
# Packs loom's CUDA binaries, built here, with every shared library they need that the GPU machine's
# image lacks, into one archive that scripts/gpu_check.sh unpacks there (issue 33). Why binaries and
# not sources: scripts/gpu_check.sh's header.
#
# Usage: scripts/gpu_bundle.sh BUILD_DIR OUT_DIR [TARGET...]
#   BUILD_DIR: a CUDA build for an unknown x86-64 (LOOM_CUDA=ON LOOM_NATIVE=OFF LOOM_ONEDNN=OFF);
#     `scripts/gpu_bundle.sh --configure BUILD_DIR` configures one. TARGETs default to `loom` and every
#     test labelled gpu; they are built first.
#   OUT_DIR/loom-gpu-bundle.tar.xz: bin/ (the executables), tests.json (each gpu test's command with
#     bundle-relative paths), usr/ (Open MPI and every library `ldd` resolves outside the image, at
#     their paths under /usr so that OPAL_PREFIX and PMIX_INSTALL_PREFIX relocate them), env.sh.
# The image is taken to have glibc, libstdc++, libgcc_s, the CUDA 13 toolkit's libraries, the
# driver and NVIDIA's pip wheels (cuDNN, NCCL): scripts/gpu_image_libs.txt lists those sonames. The
# script fails if a library resolves to neither the bundle nor that list, or if the archive plus the
# working tree exceed GPU_BUNDLE_LIMIT_MB (default 60: the device tool carries 64 MiB in all).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
image_libs="$root/scripts/gpu_image_libs.txt"

if [ "${1:-}" = --configure ]; then
  cmake -S "$root" -B "${2:?usage: scripts/gpu_bundle.sh --configure BUILD_DIR}" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLOOM_CUDA=ON -DLOOM_NATIVE=OFF -DLOOM_ONEDNN=OFF
  exit
fi
build=${1:?usage: scripts/gpu_bundle.sh BUILD_DIR OUT_DIR [TARGET...]}
out=${2:?usage: scripts/gpu_bundle.sh BUILD_DIR OUT_DIR [TARGET...]}
shift 2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# The gpu tests as JSON (name, command, environment), read from ctest.
gpu_tests_json() {
  ctest --test-dir "$build" -L gpu --show-only=json-v1
}

# The executables of the gpu tests, one path a line.
gpu_test_binaries() {
  gpu_tests_json | python3 -c '
import json, os, sys
seen = set()
for t in json.load(sys.stdin)["tests"]:
    for word in t.get("command", []):
        if os.path.isfile(word) and os.access(word, os.X_OK) and "mpiexec" not in word and word not in seen:
            seen.add(word); print(word)'
}

# True when `soname` is one the image has (scripts/gpu_image_libs.txt: one pattern a line).
image_has() {
  local soname=$1 pattern
  while read -r pattern; do
    [[ -z "$pattern" || "$pattern" == \#* ]] && continue
    # shellcheck disable=SC2053  # a glob pattern on purpose
    [[ "$soname" == $pattern ]] && return 0
  done <"$image_libs"
  return 1
}

# Copies FILE (resolving links) to the bundle at its path under /usr, keeping the name it was asked by.
copy_under_usr() {
  local file=$1 relative
  relative=${file#/usr/}
  [ "$relative" = "$file" ] && relative=lib/x86_64-linux-gnu/$(basename "$file")
  mkdir -p "$stage/usr/$(dirname "$relative")"
  cp -L "$file" "$stage/usr/$relative"
}

# Every library ELF needs that the image lacks, copied; fails on one that resolves nowhere.
copy_dependencies() {
  local elf=$1 soname path
  while read -r soname path; do
    image_has "$soname" && continue
    [ -e "$path" ] || { echo "gpu_bundle: $elf needs $soname, which resolves nowhere" >&2; return 1; }
    [ -e "$stage/usr/${path#/usr/}" ] || copy_under_usr "$path"
  done < <(ldd "$elf" | awk '$2 == "=>" { print $1, $3 }')
}

# Open MPI's launcher, its daemon, components, help texts and PMIx's components (loaded at run time: ldd cannot
# see them), without the fabric transports this single machine does not use (UCX, OFI, PSM, verbs).
copy_open_mpi() {
  local launcher file
  launcher=$(readlink -f "$(command -v mpiexec)")
  copy_under_usr "$launcher"
  ln -sf "$(basename "$launcher")" "$stage/usr/bin/mpiexec"
  copy_under_usr "$(readlink -f "$(command -v orted)")"  # a process started without mpiexec (a singleton) forks it
  for file in /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so; do
    [[ "$(basename "$file")" =~ ucx|ofi|psm|verbs|openib|portals|hcoll|fca|java ]] && continue
    copy_under_usr "$file"
  done
  mkdir -p "$stage/usr/share"
  cp -r /usr/share/openmpi "$stage/usr/share/"
  mkdir -p "$stage/usr/lib/x86_64-linux-gnu/pmix2/share"
  cp -r /usr/lib/x86_64-linux-gnu/pmix2/share/pmix "$stage/usr/lib/x86_64-linux-gnu/pmix2/share/"
  printf '%s\n' 'btl = self,vader,tcp' 'pml = ob1' 'plm = isolated' 'mca_base_component_show_load_errors = 0' \
    >"$stage/usr/share/openmpi/loom-mca-params.conf"
}

# Every ELF in the bundle (executables, libraries, components), one path a line.
bundle_elves() {
  find "$stage" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c 'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \;
}

# The gpu tests' commands with the bundle's paths, for scripts/gpu_check.sh to run without ctest.
# $1 "complete": every gpu test must be in the bundle (the default targets); "partial": some may not.
write_tests_json() {
  gpu_tests_json | python3 -c '
import json, os, sys
tests, left_out = [], 0
for t in json.load(sys.stdin)["tests"]:
    if not t.get("command"):
        print("gpu_bundle: %s left out: ctest knows no command (not built)" % t["name"], file=sys.stderr)
        left_out += 1
        continue
    command = ["bin/" + os.path.basename(w) if w.startswith(sys.argv[3] + "/")
               else ("mpiexec" if "mpiexec" in w else w) for w in t.get("command", [])]
    if not all(os.path.exists(os.path.join(os.path.dirname(sys.argv[2]), w)) for w in command if w.startswith("bin/")):
        print("gpu_bundle: %s left out: its executable is not in the bundle (not built, or not a TARGET given)" % t["name"], file=sys.stderr)
        left_out += 1
        continue
    env = [p["value"] for p in t.get("properties", []) if p["name"] == "ENVIRONMENT"]
    tests.append({"name": t["name"], "command": command, "environment": env[0] if env else []})
json.dump({"source_dir": sys.argv[1], "tests": tests}, open(sys.argv[2], "w"), indent=1)
sys.exit(1 if left_out and sys.argv[4] == "complete" else 0)' "$root" "$stage/tests.json" "$(cd "$build" && pwd)" "$1"
}

# The newest glibc and libstdc++ symbol versions any ELF of the bundle needs (the image must have
# them: the bundle carries neither), for scripts/gpu_check.sh to check before anything runs.
write_requirements() {
  local versions
  versions=$(bundle_elves | xargs objdump -T 2>/dev/null | grep -oE 'GLIBC(XX)?_[0-9.]+' | sort -u -V)
  {
    echo "glibc $(grep '^GLIBC_' <<<"$versions" | tail -1 | cut -d_ -f2)"
    echo "glibcxx $(grep '^GLIBCXX_' <<<"$versions" | tail -1 | cut -d_ -f2)"
  } >"$stage/requires.txt"
  cat "$stage/requires.txt"
}

write_env() {
  cat >"$stage/env.sh" <<'EOF'
# Sourced by scripts/gpu_check.sh from the unpacked bundle: its Open MPI and libraries first.
bundle=$(cd "${BASH_SOURCE[0]%/*}" && pwd)
export PATH="$bundle/usr/bin:$bundle/bin:$PATH"
export LD_LIBRARY_PATH="$bundle/usr/lib/x86_64-linux-gnu:$bundle/usr/lib/x86_64-linux-gnu/openmpi/lib:$bundle/usr/lib/x86_64-linux-gnu/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPAL_PREFIX="$bundle/usr" PMIX_INSTALL_PREFIX="$bundle/usr"
export OMPI_MCA_mca_base_param_files="$bundle/usr/share/openmpi/loom-mca-params.conf"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
EOF
}

main() {
  local targets=("$@") binaries elf names=(-name loom) target coverage=partial
  ((${#targets[@]})) || coverage=complete
  ((${#targets[@]})) || mapfile -t targets < <(echo loom; gpu_test_binaries | xargs -n1 basename)
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
  mkdir -p "$stage/bin" "$out"
  for target in "${targets[@]}"; do names+=(-o -name "$target"); done
  mapfile -t binaries < <(find "$build" -type f -executable \( "${names[@]}" \) -not -path '*/CMakeFiles/*')
  cp "${binaries[@]}" "$stage/bin/"
  strip --strip-unneeded "$stage"/bin/* 2>/dev/null || true
  copy_open_mpi
  for elf in $(bundle_elves); do copy_dependencies "$elf"; done
  for elf in $(bundle_elves); do copy_dependencies "$elf"; done  # the copied libraries' own needs
  write_tests_json "$coverage"
  write_requirements
  write_env
  tar -C "$stage" -cJf "$out/loom-gpu-bundle.tar.xz" .
  "$root/scripts/gpu_carry_size.sh" "$out/loom-gpu-bundle.tar.xz"
}

main "$@"
