#!/usr/bin/env bash
# The whole test suite from a fresh Debian 12 machine: install dependencies, build, run ctest.
# Usage: scripts/test.sh [--sanitize] [ctest arguments...]   (--sanitize: ASan+UBSan build in build-asan/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
dir="$root/build"; build_args=()
if [ "${1:-}" = "--sanitize" ]; then
  shift; dir="$root/build-asan"; build_args=(--sanitize)
  export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
  export LOOM_CPU_CACHE_MB=0  # no block reuse, so ASan sees every use after free
fi
"$root/scripts/build.sh" "${build_args[@]}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" "$@"
