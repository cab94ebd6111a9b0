#!/usr/bin/env bash
# Configures and builds loom. Usage: scripts/build.sh [--sanitize|--tsan] [--cuda ON|OFF|AUTO] [--dir DIR] [targets...]
# Default: build/, Release, -march=native (LOOM_NATIVE=ON), CUDA backend when the toolkit is found (AUTO).
# --sanitize: build-asan/, clang, ASan + UBSan (UB is fatal) for the whole suite, plus the libFuzzer
#   targets from the same objects (LOOM_FUZZ=ON adds only libFuzzer's coverage counters: one build
#   serves scripts/test.sh --sanitize and scripts/fuzz.sh; docs/reliability.md "Sanitizers").
# --tsan: build-tsan/, clang, ThreadSanitizer; oneDNN off (its OpenMP runtime is not instrumented).
# Sanitizer builds are RelWithDebInfo without CUDA. CMAKE_CXX_COMPILER_LAUNCHER=ccache in the
# environment makes CMake use ccache.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=""; cuda=AUTO; kind=release; targets=()
while (($#)); do
  case "$1" in
    --sanitize) kind=asan; cuda=OFF ;;
    --tsan) kind=tsan; cuda=OFF ;;
    --cuda) cuda="$2"; shift ;;
    --dir) dir="$2"; shift ;;
    *) targets+=(--target "$1") ;;
  esac
  shift
done
options=(-DCMAKE_BUILD_TYPE=Release -DLOOM_SANITIZE=OFF -DLOOM_FUZZ=OFF -DLOOM_TSAN=OFF)
case "$kind" in
  release) dir=${dir:-$root/build} ;;
  asan) dir=${dir:-$root/build-asan}; options=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOM_SANITIZE=ON -DLOOM_FUZZ=ON -DLOOM_TSAN=OFF) ;;
  tsan) dir=${dir:-$root/build-tsan}; options=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOM_SANITIZE=OFF -DLOOM_FUZZ=OFF -DLOOM_TSAN=ON -DLOOM_ONEDNN=OFF) ;;
esac
[ "$kind" = release ] || export CC=clang CXX=clang++  # read only when DIR is configured the first time
cmake -S "$root" -B "$dir" "${options[@]}" -DLOOM_CUDA=$cuda -DLOOM_NATIVE=ON >/dev/null
cmake --build "$dir" -j"$(nproc)" "${targets[@]}"
