#!/usr/bin/env bash
# DAPPLE claim 2: DAPPLE's early-backward schedule against GPipe's all-forwards-then-all-backwards,
# with and without activation recomputation: throughput and peak memory. Paper (V100s): DAPPLE
# 1.6x GPipe's throughput with 12 % less memory — there GPipe needed recomputation to fit the
# micro-batches, which DAPPLE's K_s = min(S - s, M) in-flight micro-batches do not.
# Here: BERT-48's preset at CPU size (`--model bert48 --size cpu`, with more layers) on S = 4
# stages of one rank each, M = 8 micro-batches, synthetic masked-LM data; for each schedule and
# recomputation setting, the median samples/s of the timed steps and the peak bytes of the rank
# that holds the most (loom train's metrics: the maximum over ranks), total and activations, next
# to the simulator's peak in-flight micro-batches of stage 0 (`loom simulate`).
#
# Usage: scripts/reproduce/gpipe_vs_dapple.sh [LOOM_BINARY] [--quick] [--out DIR]
#   --quick: fewer steps and layers
# Environment: MODEL (bert48), SIZE (cpu), SET (layers=8; layers=4 with --quick), BATCH (32),
#   STAGES (4), MICROBATCHES (8), STEPS (6; 4 with --quick), WARMUP (2; 1 with --quick), KEEP
set -euo pipefail
source "$(dirname "$0")/common.sh"
repro_init gpipe_vs_dapple "$@"
model=${MODEL:-bert48}
size=${SIZE:-cpu}
set_=${SET:-layers=8}
batch=${BATCH:-32}
stages=${STAGES:-4}
m=${MICROBATCHES:-8}
steps=${STEPS:-6}
warmup=${WARMUP:-2}
if [ "$quick" = 1 ]; then
  set_=${SET:-layers=4}
  steps=${STEPS:-4}
  warmup=${WARMUP:-1}
fi
[[ $("$loom" train --help) == *--size* ]] ||
  { echo "gpipe_vs_dapple.sh: $loom has no --size (loom train needs the paper-model presets)" >&2; exit 1; }
echo "# $model --size $size --set $set_, $stages stages x 1 rank x 1 thread, M=$m, global batch $batch, $steps steps (first $warmup not timed)"

for schedule in gpipe dapple; do
  for recompute in 0 1; do
    flags=()
    [ "$recompute" = 1 ] && flags+=(--recompute)
    echo "# $schedule, recompute $recompute: load average $(cut -d' ' -f1-3 /proc/loadavg)"
    "${mpi[@]}" -n "$stages" "$loom" train --model "$model" --size "$size" --set "$set_" --data synthetic \
      --stages "$stages" --schedule "$schedule" --microbatches "$m" --global-batch "$batch" --steps "$steps" \
      --threads 1 --quiet --metrics "$work/$schedule-$recompute.jsonl" "${flags[@]}"
  done
  "$loom" simulate --json --schedule "$schedule" --stages "$stages" --microbatches "$m" >"$work/$schedule.sim.json"
done

"$python" - "$work" "$csv" "$batch" "$warmup" "$model --size $size --set $set_" <<'EOF'
import json, statistics, sys
import tables

work, out, batch, warmup, model = sys.argv[1:]
batch, warmup = int(batch), int(warmup)
rows = []
for schedule in ("gpipe", "dapple"):
    simulated = json.load(open(f"{work}/{schedule}.sim.json"))
    for recompute in (0, 1):
        steps = [json.loads(line) for line in open(f"{work}/{schedule}-{recompute}.jsonl") if '"step"' in line]
        rate = statistics.median(s["samples_per_s"] for s in steps[warmup:])
        rows.append({"model": model, "schedule": schedule, "recompute": recompute,
                     "samples_per_s": round(rate, 2), "step_ms": round(batch / rate * 1e3, 1),
                     "peak_total_bytes": max(s["peak_bytes"]["total"] for s in steps),
                     "peak_activation_bytes": max(s["peak_bytes"]["activations"] for s in steps),
                     "simulated_stage0_inflight_microbatches": simulated["per_stage"][0]["peak_activation_microbatches"]})
tables.write_csv(out, rows)
base = next(r for r in rows if r["schedule"] == "gpipe" and r["recompute"] == 0)
print("| schedule | recompute | samples/s | step ms | peak total MB | peak activations MB | in flight on stage 0 (simulated) | throughput vs GPipe | memory vs GPipe |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['schedule']} | {'yes' if r['recompute'] else 'no'} | {r['samples_per_s']:.1f} | {r['step_ms']:.0f} "
          f"| {r['peak_total_bytes'] / 1e6:.1f} | {r['peak_activation_bytes'] / 1e6:.1f} "
          f"| {r['simulated_stage0_inflight_microbatches']} | {r['samples_per_s'] / base['samples_per_s']:.2f}x "
          f"| {r['peak_total_bytes'] / base['peak_total_bytes']:.2f}x |")
EOF
repro_plot gpipe_vs_dapple
repro_finish
