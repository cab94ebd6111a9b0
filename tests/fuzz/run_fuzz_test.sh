#!/usr/bin/env bash
# ctest entry of one fuzz target: replay its corpus (seeds + minimised findings), then fuzz for
# SECONDS from it into a scratch corpus. Usage: run_fuzz_test.sh TARGET CORPUS_DIR SECONDS
set -euo pipefail
target=$1; corpus=$2; seconds=$3
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
flags=(-rss_limit_mb=2048 -timeout=10 -max_len=65536 -print_final_stats=1)
"$target" "${flags[@]}" -runs=0 "$corpus"
"$target" "${flags[@]}" -max_total_time="$seconds" -artifact_prefix="$scratch/" "$scratch" "$corpus"
