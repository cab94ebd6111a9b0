#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, in build-asan/: the build of scripts/test.sh
# --sanitize, scripts/build.sh --sanitize) and fuzzes each for SECONDS
# (default 60) from its seed corpus tests/fuzz/corpus/<target>/ (docs/reliability.md "Fuzzing").
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]      e.g. scripts/fuzz.sh 600 plan_json safetensors
# Environment: LOOM_FUZZ_RUNS=N stops each target after N executions instead (SECONDS still caps it);
# LOOM_FUZZ_CPU=K pins every run to CPU K. New inputs collect in build-asan/fuzz-corpus/<target>/,
# findings in build-asan/fuzz-findings/<target>/; the script fails if any target found something.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}; shift || true
dir="$root/build-asan"
"$root/scripts/setup.sh"
targets=("$@")
if ((${#targets[@]} == 0)); then
  for corpus in "$root"/tests/fuzz/corpus/*/; do targets+=("$(basename "$corpus")"); done
fi
"$root/scripts/build.sh" --sanitize $(printf -- 'fuzz_%s ' "${targets[@]}")
export ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LOOM_NUM_THREADS=1
pin=(); [ -n "${LOOM_FUZZ_CPU:-}" ] && pin=(taskset -c "$LOOM_FUZZ_CPU")
# One target per core at a time (one in all when pinned): each run is single-threaded.
jobs=$(nproc); [ -n "${LOOM_FUZZ_CPU:-}" ] && jobs=1
fuzz_one() {  # prints the target's result lines when it is done; its exit status is the verdict
  local t=$1 work="$dir/fuzz-corpus/$1" findings="$dir/fuzz-findings/$1"
  mkdir -p "$work" "$findings"
  if "${pin[@]}" nice -n 19 "$dir/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -runs="${LOOM_FUZZ_RUNS:--1}" \
       -rss_limit_mb=2048 -timeout=10 -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/" \
       "$work" "$root/tests/fuzz/corpus/$t" >"$dir/fuzz-findings/$t.log" 2>&1; then
    echo "== fuzz_$t: ${seconds} s${LOOM_FUZZ_RUNS:+, at most $LOOM_FUZZ_RUNS executions}: $(grep -E '^stat::number_of_executed_units|^Done' "$dir/fuzz-findings/$t.log" | tr '\n' ' ')"
  else
    echo "== fuzz_$t: FINDING"; tail -40 "$dir/fuzz-findings/$t.log"; return 1
  fi
}
failed=()
declare -A running=()  # pid -> target
wait_one() {
  local pid
  wait -n -p pid "${!running[@]}" || failed+=("${running[$pid]}")
  unset "running[$pid]"
}
for t in "${targets[@]}"; do
  ((${#running[@]} < jobs)) || wait_one
  fuzz_one "$t" & running[$!]=$t
done
while ((${#running[@]})); do wait_one; done
if ((${#failed[@]})); then
  echo "fuzz: findings in ${failed[*]} (inputs in $dir/fuzz-findings/)"; exit 1
fi
echo "fuzz: no findings in ${#targets[@]} targets"
