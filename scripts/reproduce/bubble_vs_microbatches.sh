#!/usr/bin/env bash
# DAPPLE claim 3: the pipeline bubble shrinks with the number of micro-batches M. For S in {2, 4}
# stages and a fixed global batch, the step time of `loom train --schedule dapple` is measured and
# set against
#   simulated  `loom simulate` of the same schedule from the run's own per-stage costs (median F,
#              B, STEP from its trace; a stage's sends, which the executor runs inline, are added
#              to the F or B they follow)
#   formula    DAPPLE's T = M w (1 + P) + STEP with P = (1 + alpha)(S - 1)/M, w the slowest
#              stage's F + B per micro-batch and alpha the run's communication-to-computation
#              ratio: the sends of one boundary per micro-batch (activation + gradient) over w
#   ideal      M w + STEP (no bubble)
# from the same runs. The stages run on S ranks of 1 thread each; with S = 4 on a 2-core machine,
# ranks share cores, which the run's own F and B (and so the simulation) include.
# Afterwards it prints the simulator-only table of docs/schedules.md ("Bubble against micro-batches":
# balanced F = 1 ms, B = 2 ms, free links, next to the closed forms).
#
# Usage: scripts/reproduce/bubble_vs_microbatches.sh [LOOM_BINARY] [--quick] [--out DIR]
#   --quick: M in {1, 2, 4, 8}, fewer steps, no docs table
# Every configuration runs REPEATS times, the configurations taking turns so that a change of the
# machine's load hits them alike; medians pool the timed steps and actions of all repeats.
# Environment: SET (mlp settings, input=32,hidden=512,layers=8,classes=10), BATCH (256),
#   STEPS (8), WARMUP (2), REPEATS (3; 1 with --quick), KEEP
set -euo pipefail
source "$(dirname "$0")/common.sh"
repro_init bubble_vs_microbatches "$@"
set_=${SET:-input=32,hidden=512,layers=8,classes=10}
batch=${BATCH:-256}
steps=${STEPS:-8}
warmup=${WARMUP:-2}
repeats=${REPEATS:-3}
stage_counts="2 4"
microbatches="1 2 4 8 16"
if [ "$quick" = 1 ]; then
  microbatches="1 2 4 8"
  steps=${STEPS:-5}
  warmup=${WARMUP:-1}
  repeats=${REPEATS:-1}
fi
echo "# mlp $set_, global batch $batch, dapple, $steps steps per run (the first $warmup not timed), 1 thread per rank"

for r in $(seq "$repeats"); do
  echo "# repeat $r of $repeats: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for s in $stage_counts; do
    for m in $microbatches; do
      "${mpi[@]}" -n "$s" "$loom" train --model mlp --set "$set_" --data synthetic --stages "$s" --schedule dapple \
        --microbatches "$m" --global-batch "$batch" --steps "$steps" --threads 1 --quiet \
        --metrics "$work/s${s}_m${m}_r$r.jsonl" --trace "$work/s${s}_m${m}_r$r.trace.json"
    done
  done
done

"$python" "$root/scripts/reproduce/bubble_analysis.py" "$loom" "$work" "$csv" "$batch" "$warmup" "$repeats" \
  "$stage_counts" "$microbatches"
repro_plot bubble_vs_microbatches
[ "$quick" = 1 ] || "$root/scripts/reproduce/bubble_table.sh" "$loom"
repro_finish
