#!/usr/bin/env bash
# scripts/gpu_check.sh as the GPU machine will meet it, checked here without a GPU (issue 33):
# --dry-run exits 0 with a bare environment (no nvidia-smi, nvcc or build on PATH's way) and prints
# one "would run:" line per step; GPU_CHECK_STEPS picks steps and refuses an unknown one; the step
# limits of a bundle run add up to no more than the default budget.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "gpu_check_test: $*" >&2; exit 1; }

lines=$(env -i PATH=/usr/bin:/bin HOME="$out" bash "$root/scripts/gpu_check.sh" --dry-run "$out/all")
[ "$(grep -c '^would run: ' <<<"$lines")" = 9 ] || fail "expected 9 'would run:' lines, got: $lines"
[ "$(wc -l <"$out/all/summary.txt")" = 9 ] || fail "expected 9 summary lines"

lines=$(GPU_CHECK_STEPS=gemm,gpt-torch bash "$root/scripts/gpu_check.sh" --dry-run "$out/some")
ran=$(sed -n 's/^would run: \([a-z-]*\) .*/\1/p' <<<"$lines" | tr '\n' ' ')
[ "$ran" = "machine setup gemm gpt-torch " ] || fail "GPU_CHECK_STEPS=gemm,gpt-torch ran: $ran"

if GPU_CHECK_STEPS=gemm,nope bash "$root/scripts/gpu_check.sh" --dry-run "$out/bad" 2>"$out/err"; then
  fail "an unknown step was accepted"
fi
grep -q "unknown step 'nope'" "$out/err" || fail "no clear error for an unknown step: $(cat "$out/err")"

# The step limits (setup at its bundle limit) against the default budget.
budget=$(sed -n 's/^budget=\${GPU_CHECK_BUDGET_S:-\([0-9]*\)}/\1/p' "$root/scripts/gpu_check.sh")
setup=$(sed -n 's/.*else setup_limit=\([0-9]*\); fi/\1/p' "$root/scripts/gpu_check.sh")
others=$(awk '$1 == "step" && $3 ~ /^[0-9]+$/ { s += $3 } END { print s }' "$root/scripts/gpu_check.sh")
((budget > 0 && setup > 0 && others > 0)) || fail "could not read the budget ($budget) or the limits ($setup, $others)"
((setup + others <= budget)) || fail "step limits $setup + $others s exceed the budget of $budget s"
echo "gpu_check --dry-run: 9 steps; limits $((setup + others)) s within the budget of $budget s"
