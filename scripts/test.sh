#!/usr/bin/env bash
# The whole test suite from a fresh Debian 12 machine: install dependencies, build, run ctest.
# Usage: scripts/test.sh [--sanitize | --tsan] [ctest arguments...]
#   --sanitize: the whole suite under ASan + UBSan (clang, build-asan/, the fuzz targets' build too)
#   --tsan: the thread-heavy tests under ThreadSanitizer (clang, build-tsan/, only what they need)
# Sanitizer findings fail the test; the suppressions of third-party noise are in tests/sanitizers/
# (docs/reliability.md "Sanitizers").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
supp="$root/tests/sanitizers"
dir="$root/build"; build_args=(); ctest_args=()

case "${1:-}" in
  --sanitize)
    shift; dir="$root/build-asan"; build_args=(--sanitize)
    # Full unwinding at each malloc (about 15% slower): Open MPI's code has no frame pointers and it
    # unloads its components at MPI_Finalize, so the fast unwinder's stacks of Open MPI's own leaks
    # end in "<unknown module>" and no suppression could name them.
    export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:fast_unwind_on_malloc=0
    export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp
    export LOOM_CPU_CACHE_MB=0  # no block reuse, so ASan sees every use after free
    export CC=clang CXX=clang++  # the install and example tests build consumers against build-asan/
    ;;
  --tsan)
    shift; dir="$root/build-tsan"
    mapfile -t tests < <(grep -v '^#' "$supp/tsan_tests.txt")
    build_args=(--tsan "${tests[@]}")
    ctest_args=(-R "^($(IFS='|'; echo "${tests[*]}"))(_np[0-9]+)?\$")
    export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp
    export OPENBLAS_NUM_THREADS=1  # OpenBLAS's own threads are not instrumented (loom's pool splits GEMMs)
    # One node: shared memory only. Open MPI's TCP transport (not instrumented) takes two of its own
    # mutexes in both orders (mca_btl_tcp_add_procs / _del_procs): a lock-order report not about loom.
    export OMPI_MCA_btl=self,vader
    ;;
esac
start=$SECONDS
"$root/scripts/build.sh" "${build_args[@]}"
echo "test.sh: the build of $(basename "$dir") took $((SECONDS - start)) s"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" "${ctest_args[@]}" "$@"
