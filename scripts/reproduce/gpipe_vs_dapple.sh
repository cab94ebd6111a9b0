#!/usr/bin/env bash
# DAPPLE claim 2: DAPPLE's early-backward schedule (synchronous 1F1B) against GPipe's
# all-forwards-then-all-backwards on the same model, stages and micro-batches, each with and
# without activation recomputation: throughput, and peak memory per stage, against the number of
# micro-batches M. Paper (V100s): DAPPLE 1.6x GPipe's throughput with 12 % less memory — there
# GPipe needed recomputation to fit its M in-flight micro-batches, which DAPPLE's
# K_s = min(S - s, M) do not.
# Here: BERT-48's preset at CPU size (`--model bert48 --size cpu`, fewer layers) on S = 4 stages of
# one rank and one thread each, synthetic masked-LM data, a fixed micro-batch of ROWS samples and
# M micro-batches per step (global batch M x ROWS), so GPipe's activations grow with M and
# DAPPLE's stop growing at M = S. For each (M, schedule, recomputation): the median samples/s of
# the timed steps over the repeats, and each stage's peak bytes (total and activations; loom
# train's `peak_bytes_by_stage`, the maximum over the stage's replicas, exact since every
# allocation is counted), next to `loom simulate`'s peak in-flight micro-batches of each stage.
# CSV: one row per (M, schedule, recomputation, stage).
#
# Usage: scripts/reproduce/gpipe_vs_dapple.sh [LOOM_BINARY] [--quick] [--out DIR]
#   --quick: 4 layers, M in {4, 8}, 2 rows per micro-batch, fewer steps, one repeat
# The configurations take turns (M by M, all four at each M, repeat by repeat) so that a change of
# the machine's load hits them alike.
# Environment: MODEL (bert48), SIZE (cpu), SET (layers=8), ROWS (4), STAGES (4),
#   MICROBATCHES ("4 8 16"), STEPS (6), WARMUP (2), REPEATS (2), KEEP
set -euo pipefail
source "$(dirname "$0")/common.sh"
repro_init gpipe_vs_dapple "$@"
model=${MODEL:-bert48}
size=${SIZE:-cpu}
set_=${SET:-layers=8}
rows=${ROWS:-4}
stages=${STAGES:-4}
microbatches=${MICROBATCHES:-4 8 16}
steps=${STEPS:-6}
warmup=${WARMUP:-2}
repeats=${REPEATS:-2}
if [ "$quick" = 1 ]; then
  set_=${SET:-layers=4}
  rows=${ROWS:-2}
  microbatches=${MICROBATCHES:-4 8}
  steps=${STEPS:-3}
  warmup=${WARMUP:-1}
  repeats=${REPEATS:-1}
fi
[[ $("$loom" train --help) == *--size* ]] ||
  { echo "gpipe_vs_dapple.sh: $loom has no --size (loom train needs the paper-model presets)" >&2; exit 1; }
echo "# $model --size $size --set $set_, $stages stages x 1 rank x 1 thread, M in {$microbatches} micro-batches of" \
  "$rows samples, $steps steps per run (first $warmup not timed), $repeats repeats"

for r in $(seq "$repeats"); do
  for m in $microbatches; do
    echo "# repeat $r of $repeats, M = $m: load average $(cut -d' ' -f1-3 /proc/loadavg)"
    for schedule in gpipe dapple; do
      for recompute in 0 1; do
        flags=()
        [ "$recompute" = 1 ] && flags+=(--recompute)
        "${mpi[@]}" -n "$stages" "$loom" train --model "$model" --size "$size" --set "$set_" --data synthetic \
          --stages "$stages" --schedule "$schedule" --microbatches "$m" --global-batch $((m * rows)) \
          --steps "$steps" --threads 1 --quiet --metrics "$work/$schedule-$recompute-m$m-r$r.jsonl" "${flags[@]}"
      done
      if [ "$r" = 1 ]; then
        "$loom" simulate --json --schedule "$schedule" --stages "$stages" --microbatches "$m" >"$work/$schedule-m$m.sim.json"
      fi
    done
  done
done
grep -q peak_bytes_by_stage "$work/gpipe-0-m${microbatches%% *}-r1.jsonl" ||
  { echo "gpipe_vs_dapple.sh: $loom's metrics have no peak_bytes_by_stage (a loom from before per-stage peaks)" >&2; exit 1; }

"$python" - "$work" "$csv" "$rows" "$warmup" "$repeats" "$stages" "$microbatches" "$model --size $size --set $set_" <<'EOF'
import json, statistics, sys
import tables

work, out, rows_per_mb, warmup, repeats, stages, microbatches, model = sys.argv[1:]
rows_per_mb, warmup, repeats, stages = int(rows_per_mb), int(warmup), int(repeats), int(stages)
microbatches = [int(m) for m in microbatches.split()]
configs = [("gpipe", 0), ("gpipe", 1), ("dapple", 0), ("dapple", 1)]
rows = []
for m in microbatches:
    for schedule, recompute in configs:
        simulated = json.load(open(f"{work}/{schedule}-m{m}.sim.json"))["per_stage"]
        rates, by_stage = [], None
        for r in range(1, repeats + 1):
            steps = [json.loads(line) for line in open(f"{work}/{schedule}-{recompute}-m{m}-r{r}.jsonl") if '"step"' in line]
            rates += [s["samples_per_s"] for s in steps[warmup:]]
            by_stage = steps[-1]["peak_bytes_by_stage"]  # peaks since the run started; every repeat alike
        rate = statistics.median(rates)
        for stage, peak in enumerate(by_stage):
            rows.append({"model": model, "schedule": schedule, "recompute": recompute, "microbatches": m,
                         "microbatch_rows": rows_per_mb, "global_batch": m * rows_per_mb, "stage": stage,
                         "samples_per_s": round(rate, 2), "step_ms": round(m * rows_per_mb / rate * 1e3, 1),
                         "peak_total_bytes": peak["total"], "peak_activation_bytes": peak["activations"],
                         "simulated_inflight_microbatches": round(simulated[stage]["peak_activation_microbatches"])})
tables.write_csv(out, rows)

def run(m, schedule, recompute):
    return [r for r in rows if (r["microbatches"], r["schedule"], r["recompute"]) == (m, schedule, recompute)]

print("| M | schedule | recompute | samples/s | vs GPipe | peak total MB per stage | peak activations MB per stage "
      "| fullest stage vs GPipe's | in flight per stage (simulated) |")
print("|---:|---|---|---:|---:|---|---|---:|---|")
for m in microbatches:
    base = run(m, "gpipe", 0)
    for schedule, recompute in configs:
        part = run(m, schedule, recompute)
        mb = lambda key: " / ".join(f"{r[key] / 1e6:.1f}" for r in part)
        fullest = max(r["peak_total_bytes"] for r in part) / max(r["peak_total_bytes"] for r in base)
        print(f"| {m} | {schedule} | {'yes' if recompute else 'no'} | {part[0]['samples_per_s']:.1f} "
              f"| {part[0]['samples_per_s'] / base[0]['samples_per_s']:.2f}x | {mb('peak_total_bytes')} "
              f"| {mb('peak_activation_bytes')} | {fullest:.2f}x "
              f"| {' / '.join(str(r['simulated_inflight_microbatches']) for r in part)} |")
EOF
repro_plot gpipe_vs_dapple
repro_finish
