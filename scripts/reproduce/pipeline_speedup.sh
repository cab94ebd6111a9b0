#!/usr/bin/env bash
# Pipeline speedup on 2 ranks x 1 thread (issue 5, "Measured"). For M in {2, 4, 8, 16} micro-batches
# of one global batch B, it prints the measured step time of `loom train` with 2 stages next to the
# simulator's prediction from measured per-stage costs (`loom profile` at the same micro-batch size
# B/M, each stage's blocks summed, and the optimizer step of a one-rank run split between the
# stages by parameter bytes, fed to `loom simulate`), and the speedup over one rank (the same
# model, batch and M, run as one stage) next to the ideal 2/(1 + 1/M). A second prediction uses
# the two-rank runs' own median F, B and STEP times (from their traces): what is left between it
# and the measurement is the schedule's communication and the per-step bookkeeping, not the costs.
#
# Every configuration runs REPEATS times, a profile, a one-rank and a two-rank run interleaved so
# that a change of machine load hits all three; per block, the median over the profiles is used.
# A run's step time is the median of its steps after the first WARMUP; the table shows the median
# over runs and the spread (min-max). The load average is printed
# (stderr) before every M, and the table's load column is the one after that M's runs: the numbers
# mean little on a machine that is busy with other work.
#
# Usage: scripts/reproduce/pipeline_speedup.sh [path/to/loom]        (default: build/apps/loom)
# Environment: MODEL (mlp), SET (model overrides), BATCH (256), STEPS (12), WARMUP (2),
#   REPEATS (3), SCHEDULE (dapple), MICROBATCHES ("2 4 8 16"), MPIEXEC (mpiexec),
#   KEEP (a directory that keeps profiles, metrics and traces; default: a temporary one)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
loom=${1:-${LOOM:-$root/build/apps/loom}}
[ -x "$loom" ] || { echo "no loom executable at $loom (build it: scripts/build.sh loom)" >&2; exit 1; }
model=${MODEL:-mlp}
set_=${SET:-input=32,hidden=1024,layers=8,classes=10}
batch=${BATCH:-256}
steps=${STEPS:-12}
warmup=${WARMUP:-2}
repeats=${REPEATS:-3}
schedule=${SCHEDULE:-dapple}
microbatches=${MICROBATCHES:-2 4 8 16}
mpiexec=${MPIEXEC:-mpiexec}
mpi_flags=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpi_flags+=(--allow-run-as-root)
python=/usr/bin/python3
if [ -n "${KEEP:-}" ]; then
  work=$KEEP
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
export LOOM_NUM_THREADS=1
: >"$work/loads.txt"

train() {  # train RANKS M RUN-NAME: one `loom train` run, metrics into $work/RUN-NAME.jsonl
  local ranks=$1 m=$2 name=$3
  "$mpiexec" "${mpi_flags[@]}" -n "$ranks" "$loom" train --model "$model" --set "$set_" --data synthetic \
    --stages "$ranks" --schedule "$schedule" --microbatches "$m" --global-batch "$batch" --steps "$steps" \
    --threads 1 --quiet --metrics "$work/$name.jsonl" --trace "$work/$name.trace.json"
}

echo "loom train --model $model --set $set_ --global-batch $batch --schedule $schedule, 1 thread per rank;" \
  "$repeats runs of $steps steps each, the first $warmup steps of a run not timed"
echo "host: $(nproc) cores, $(uname -n)"
for m in $microbatches; do
  b=$((batch / m))
  echo "M=$m (micro-batch $b): load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  for r in $(seq "$repeats"); do
    "$loom" profile --model "$model" --set "$set_" --microbatch "$b" --threads 1 --repeats 21 --warmup 3 \
      --out "$work/profile_${m}_$r.json" >/dev/null
    train 1 "$m" "one_${m}_$r"
    train 2 "$m" "two_${m}_$r"
  done
  echo "$m $(cut -d' ' -f1 /proc/loadavg)" >>"$work/loads.txt"
done

# Per-stage costs, the simulator's step times, and the tables.
"$python" - "$loom" "$work" "$batch" "$warmup" "$repeats" "$schedule" "$microbatches" <<'EOF'
import json, statistics, subprocess, sys

loom, work, batch, warmup, repeats, schedule, microbatches = sys.argv[1:]
batch, warmup, repeats = int(batch), int(warmup), int(repeats)
loads = dict(line.split() for line in open(f"{work}/loads.txt"))
runs = range(1, repeats + 1)

def even_split(total, parts, part):  # comm::even_split: the block ranges of `loom train --stages`
    base, extra = divmod(total, parts)
    begin = part * base + min(part, extra)
    return begin, begin + base + (1 if part < extra else 0)

def simulate(stages, m, forward, backward, step):
    command = [loom, "simulate", "--json", "--schedule", schedule, "--stages", str(stages), "--microbatches", str(m)]
    for flag, values in (("--forward-ms", forward), ("--backward-ms", backward), ("--step-ms", step)):
        command += [flag, ",".join(f"{v:.6f}" for v in values)]
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)["step_ms"]

def step_ms(name):  # median over the timed steps of one run
    rows = [json.loads(line) for line in open(f"{work}/{name}.jsonl") if '"step"' in line]
    return statistics.median(batch / r["samples_per_s"] * 1e3 for r in rows[warmup:])

def action_ms(names, category, rank):  # median duration of one kind of action on one rank, over runs
    durations = []
    for name in names:
        events = json.load(open(f"{work}/{name}.trace.json"))["traceEvents"]
        durations += [e["dur"] / 1e3 for e in events
                      if e.get("ph") == "X" and e.get("cat") == category and e.get("tid") == rank]
    return statistics.median(durations)

def spread(values):
    return f"{min(values):.1f}–{max(values):.1f}"

rows, stage_rows = [], []
for m in map(int, microbatches.split()):
    # Per block, the median over the profiles taken before each repeat (one profile is noisy).
    profiles = [json.load(open(f"{work}/profile_{m}_{r}.json"))["layers"] for r in runs]
    layers = [{key: statistics.median(p[i][key] for p in profiles) for key in ("forward_ms", "backward_ms")}
              | {"parameter_bytes": profiles[0][i]["parameter_bytes"]} for i in range(len(profiles[0]))]
    total_parameters = sum(l["parameter_bytes"] for l in layers)
    one_names, two_names = [f"one_{m}_{r}" for r in runs], [f"two_{m}_{r}" for r in runs]
    one_step = action_ms(one_names, "step", 0)  # the whole model's optimizer step on one rank
    # Predicted: F and B from `loom profile`, the one-rank optimizer step split by parameter bytes.
    forward, backward, step = [], [], []
    for s in range(2):
        first, last = even_split(len(layers), 2, s)
        forward.append(sum(l["forward_ms"] for l in layers[first:last]))
        backward.append(sum(l["backward_ms"] for l in layers[first:last]))
        step.append(one_step * sum(l["parameter_bytes"] for l in layers[first:last]) / total_parameters)
    simulated_two = simulate(2, m, forward, backward, step)
    simulated_one = simulate(1, m, [sum(forward)], [sum(backward)], [one_step])
    # The same schedule from the two-rank runs' own action times (median F, B, STEP per stage).
    own = [[action_ms(two_names, category, s) for s in range(2)] for category in ("forward", "backward", "step")]
    simulated_own = simulate(2, m, *own)
    two = [step_ms(name) for name in two_names]
    one = [step_ms(name) for name in one_names]
    two_ms, one_ms = statistics.median(two), statistics.median(one)
    rows.append(f"| {m} | {batch // m} | {simulated_two:.1f} | {two_ms:.1f} ({spread(two)}) "
                f"| {two_ms / simulated_two:.3f} | {simulated_own:.1f} | {one_ms:.1f} ({spread(one)}) "
                f"| {one_ms / two_ms:.2f} | {simulated_one / simulated_two:.2f} | {2 / (1 + 1 / m):.2f} "
                f"| {loads[str(m)]} |")
    for s in range(2):
        stage_rows.append(f"| {m} | {s} | {forward[s]:.2f} | {backward[s]:.2f} | {step[s]:.2f} "
                          f"| {own[0][s]:.2f} | {own[1][s]:.2f} | {own[2][s]:.2f} |")

print()
print("| M | micro-batch | 2 ranks: simulated ms | 2 ranks: measured ms (spread) | measured / simulated "
      "| simulated from the run's own F, B, STEP | 1 rank: measured ms (spread) | speedup measured "
      "| speedup simulated | ideal 2/(1+1/M) | load |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
print()
print("| M | stage | F ms (profile) | B ms (profile) | STEP ms (1 rank, by parameters) "
      "| F ms (run) | B ms (run) | STEP ms (run) |")
print("|---|---|---|---|---|---|---|---|")
print("\n".join(stage_rows))
EOF
