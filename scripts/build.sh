#!/usr/bin/env bash
# Configures and builds loom. Usage: scripts/build.sh [--sanitize] [--cuda ON|OFF|AUTO] [--dir DIR] [targets...]
# Default: build/, Release, -march=native (LOOM_NATIVE=ON), CUDA backend when the toolkit is found (AUTO).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/build"; cuda=AUTO; sanitize=OFF; targets=()
while (($#)); do
  case "$1" in
    --sanitize) sanitize=ON; cuda=OFF; dir="$root/build-asan" ;;
    --cuda) cuda="$2"; shift ;;
    --dir) dir="$2"; shift ;;
    *) targets+=(--target "$1") ;;
  esac
  shift
done
build_type=Release
[ "$sanitize" = ON ] && build_type=RelWithDebInfo
cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=$build_type -DLOOM_CUDA=$cuda -DLOOM_SANITIZE=$sanitize -DLOOM_NATIVE=ON >/dev/null
cmake --build "$dir" -j"$(nproc)" "${targets[@]}"
