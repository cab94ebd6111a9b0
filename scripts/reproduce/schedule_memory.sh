#!/usr/bin/env bash
# Every schedule kind's per-stage activation peak, measured by `loom train`, next to what its paper
# says relative to 1F1B (ZB-H1 ≈ 1F1B, ZB-H2 (2S−1)/S, ZB-V ≈ 1F1B, V-Half 1/2, V-Min 1/3,
# interleaved 1F1B 1 + (S−1)/(S·v), GPipe and looped BFS all M, DualPipeV (2S+1)/2S), `loom simulate`'s peak in-flight
# (micro-batch, chunk) pairs, and a tensor-level model of loom's accounting
# (scripts/reproduce/schedule_memory.py); and `loom simulate`'s bubble against the closed forms of
# docs/schedules.md.
# Here: the mlp preset with every block the same width (input = hidden = classes = 512, LAYERS = 8
# blocks: 2 per stage, 1 per chunk with 2 chunks), synthetic data, S = 4 stages x 1 rank x 1
# thread, M micro-batches of ROWS samples; each block keeps one [ROWS, 512] f32 tensor per
# micro-batch (the classifier's is the loss's log-probabilities), so every chunk holds the same.
# The peaks are loom train's `peak_bytes_by_stage[s].activations` (every allocation counted); for
# the split-backward kinds they depend on when sends complete, so each run is repeated REPEATS
# times and the table gives the range.
# CSV: one row per (M, kind, stage).
#
# Usage: scripts/reproduce/schedule_memory.sh [LOOM_BINARY] [--quick] [--out DIR]
#   --quick: M = 8 only, one run of one step per kind
# Environment: KINDS, ROWS (8), LAYERS (8), MICROBATCHES ("8 16"), STEPS (2), REPEATS (3), KEEP
set -euo pipefail
source "$(dirname "$0")/common.sh"
repro_init schedule_memory "$@"
# loom's table of schedule kinds: every synchronous kind unless KINDS names some; the ones whose
# chunks --chunks sets run 2.
"$loom" schedule list --json >"$work/schedule_kinds.json"
kinds_where() { "$python" -c 'import json, sys; print(" ".join(k["name"] for k in json.load(open(sys.argv[1]))
if eval(sys.argv[2], {}, k)))' "$work/schedule_kinds.json" "$1"; }
kinds=${KINDS:-$(kinds_where 'not asynchronous')}
chunked_kinds=" $(kinds_where 'chunks == 0') "
rows=${ROWS:-8}
layers=${LAYERS:-8}
width=512
stages=4
microbatches=${MICROBATCHES:-8 16}
steps=${STEPS:-2}
repeats=${REPEATS:-3}
if [ "$quick" = 1 ]; then
  microbatches=${MICROBATCHES:-8}
  steps=${STEPS:-1}
  repeats=${REPEATS:-1}
fi
set_=input=$width,hidden=$width,layers=$layers,classes=$width
chunked() { case $chunked_kinds in *" $1 "*) echo --chunks 2 ;; esac; }

# Uniform blocks: the same output on every block (the tensor each one keeps per micro-batch).
"$loom" describe --model mlp --set "$set_" >"$work/describe.txt"
outputs=$(awk '$1 ~ /^[0-9]+$/ {print $6}' "$work/describe.txt" | sort -u)
[ "$(echo "$outputs" | wc -l)" = 1 ] ||
  { cat "$work/describe.txt"; echo "schedule_memory.sh: the blocks' outputs differ ($outputs B per sample)" >&2; exit 1; }
echo "# mlp --set $set_ ($layers blocks of $outputs B output per sample), $stages stages x 1 rank x 1 thread," \
  "M in {$microbatches} micro-batches of $rows samples, $steps steps per run, $repeats runs per kind"

for m in $microbatches; do
  for kind in $kinds; do
    "$loom" simulate --json --schedule "$kind" --stages "$stages" --microbatches "$m" $(chunked "$kind") >"$work/$kind-m$m.sim.json"
    "$loom" simulate --full --schedule "$kind" --stages "$stages" --microbatches "$m" $(chunked "$kind") >"$work/$kind-m$m.full.txt"
  done
  for r in $(seq "$repeats"); do
    echo "# M = $m, run $r of $repeats: load average $(cut -d' ' -f1-3 /proc/loadavg)"
    for kind in $kinds; do
      "${mpi[@]}" -n "$stages" "$loom" train --model mlp --set "$set_" --data synthetic --stages "$stages" \
        --schedule "$kind" $(chunked "$kind") --microbatches "$m" --global-batch $((m * rows)) --steps "$steps" \
        --threads 1 --quiet --metrics "$work/$kind-m$m-r$r.jsonl"
    done
  done
done
grep -q peak_bytes_by_stage "$work/dapple-m${microbatches%% *}-r1.jsonl" ||
  { echo "schedule_memory.sh: $loom's metrics have no peak_bytes_by_stage" >&2; exit 1; }

"$python" "$root/scripts/reproduce/schedule_memory.py" "$work" "$csv" "$rows" "$width" "$width" "$layers" "$stages" \
  "$microbatches" "$kinds" "$repeats"
repro_plot schedule_memory
repro_finish
