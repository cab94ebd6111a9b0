#!/usr/bin/env bash
# Issues 29 and 45's calibration: the one model's predictions of every planner's plans against real
# runs on this machine.
#
# For gpt, bert48, gnmt16 and vgg19 at --size cpu: `loom profile` measures the model here (one
# thread, micro-batch 8 and --also-at every other power of two up to the batch; on both cores at
# once, as the runs use them, and once more after the runs: the CSV's profile_drift is how far the
# machine's speed moved meanwhile), `loom plan
# --planner joint` plans it for a 1x2 cluster of this machine (one rank per core, the measured
# shared-memory link) under two memory caps, and `loom train --plan`
# runs each chosen plan (--threads 1), all with Adam. The caps: a loose one (4 GB, nothing binds), a
# tight one, 0.6 x the loose plan's largest predicted per-stage peak (so the search must choose
# another schedule, layout or M, or recompute; 0.8 x when nothing fits under 0.6 x), and
# "recompute": 0.7 x the tight plan's largest peak with the tight plan's M fixed (--microbatches),
# where more micro-batches cannot help (0.8 x when nothing fits; skipped when nothing fits then
# either). At the loose cap the DAPPLE, PipeDream, DP and GPipe planners' plans run too (the quick
# run: for gpt only). Compared per plan: the
# predicted step time (the one model) against the median of the measured steps after the first 3, and per stage
# the plan's predicted_peak_bytes against the run's peak_bytes_by_stage total. Plans with more ranks
# than cores would be calibrated for memory only; on 1x2 there are none.
#
# Usage: scripts/reproduce/planner_calibration.sh [LOOM_BINARY] [--quick] [--out DIR]
#   --quick: gpt and vgg19 only, 6 steps per run
# Environment: LINK (the cluster's link, default 3GB/s: `loom bench p2p` between two ranks here
# moves 64 MiB at 3.3-3.6 GB/s), KEEP (keep the profiles, plans and metrics there).
set -euo pipefail
source "$(dirname "$0")/common.sh"
repro_init planner_calibration "$@"
link=${LINK:-3GB/s}
models=("gpt 64" "vgg19 64")
[ "$quick" = 1 ] || models+=("bert48 32" "gnmt16 64")
steps=$([ "$quick" = 1 ] && echo 6 || echo 12)

plan() {  # [PLANNER=...] plan NAME CAP OUT [FLAGS]: PLANNER's plan (joint) for a 1x2 cluster with CAP bytes per device
  "$loom" plan --profile "$work/$1.profile" --cluster "1x2:intra=$link,inter=$link,mem=$2" \
    --global-batch "$batch" --optimizer adam --planner "${PLANNER:-joint}" --time-limit 60 --out "$3" "${@:4}" >"$3.log" 2>&1
}
microbatches() { "$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["microbatches"])' "$1"; }
largest_peak() { "$python" -c 'import json,sys; print(int(max(s["predicted_peak_bytes"] for s in json.load(open(sys.argv[1]))["stages"])))' "$1"; }
ranks() { "$python" -c 'import json,sys; print(sum(len(s["ranks"]) for s in json.load(open(sys.argv[1]))["stages"]))' "$1"; }

for entry in "${models[@]}"; do
  read -r name batch <<<"$entry"
  # Measured at every micro-batch size a plan for this batch can pick (the powers of two up to it),
  # so the search interpolates between measurements instead of scaling micro-batch 8 linearly.
  also=$(for ((s = 1; s <= batch; s *= 2)); do [ $s = 8 ] || printf '%s,' $s; done)
  # On both cores at once, as the runs use them: on this shared machine a core's speed can drop by a
  # fifth while the other is busy too, which one profile alone on an idle neighbour would not see.
  profile() {
    local twin pids=()
    for twin in "$1.twin" "$1"; do
      "$loom" profile --model "$name" --size cpu --microbatch 8 --also-at "${also%,}" --threads 1 --repeats 5 \
        --out "$twin" >/dev/null &
      pids+=($!)
    done
    wait "${pids[0]}" && wait "${pids[1]}"
  }
  profile "$work/$name.profile"
  plan "$name" 4GB "$work/$name-loose.json"
  tight=$(( $(largest_peak "$work/$name-loose.json") * 6 / 10 ))
  plan "$name" "$tight" "$work/$name-tight.json" || {
    tight=$(( $(largest_peak "$work/$name-loose.json") * 8 / 10 ))
    plan "$name" "$tight" "$work/$name-tight.json"
  }
  m=$(microbatches "$work/$name-tight.json")
  caps=("loose 4GB" "tight $tight")
  again=$(( $(largest_peak "$work/$name-tight.json") * 7 / 10 ))
  if plan "$name" "$again" "$work/$name-recompute.json" --microbatches "$m" ||
     { again=$(( $(largest_peak "$work/$name-tight.json") * 8 / 10 )); plan "$name" "$again" "$work/$name-recompute.json" --microbatches "$m"; }; then
    caps+=("recompute $again")
  else
    echo "$name recompute: no plan fits 0.8 x the tight plan's peak at M=$m (skipped)"
  fi
  # Every other planner's plan at the loose cap (where each has one: at the tight cap, which moves
  # with this machine's speed, some have none), scored by the same one model (issue 45); the quick
  # run does this for gpt only.
  if [ "$quick" != 1 ] || [ "$name" = gpt ]; then
    for other in dapple pipedream dp gpipe; do
      if PLANNER=$other plan "$name" 4GB "$work/$name-$other.json"; then caps+=("$other 4000000000")
      else echo "$name $other: no plan fits 4GB (skipped)"; fi
    done
  fi
  for entry in "${caps[@]}"; do
    read -r cap cap_bytes <<<"$entry"
    p=$work/$name-$cap.json
    echo "$name $cap: $(grep -m1 -E '^schedule |^(dapple|pipedream|dp|dp-overlap|gpipe) ' "$p.log")"
    "${mpi[@]}" -n "$(ranks "$p")" "$loom" train --model "$name" --size cpu --plan "$p" --data synthetic \
      --optimizer adam --steps "$steps" --threads 1 --peak-gflops 1 --quiet --metrics "$work/$name-$cap.jsonl"
    echo "$name $cap $cap_bytes $p $work/$name-$cap.jsonl" >>"$work/runs.txt"
  done
  # The same measurement after the runs: how far this machine's speed moved meanwhile (shared, so it
  # does), which bounds how close a prediction from the first profile can be.
  profile "$work/$name.after.profile"
done

"$python" - "$work/runs.txt" "$csv" "$png" <<'EOF'
import csv, json, statistics, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker

runs, out, png = sys.argv[1:]
rows = []

def profile_ms(path):  # forward + backward of every layer at every measured micro-batch size
    layers = json.load(open(path))["layers"]
    return sum(m["forward_ms"] + m["backward_ms"] for l in layers for m in [l] + l.get("measurements", []))

drift = {}
for line in open(runs):
    model, cap, cap_bytes, plan_path, metrics_path = line.split()
    plan = json.load(open(plan_path))
    if model not in drift:
        stem = plan_path.rsplit("-", 1)[0]  # $work/NAME, from $work/NAME-CAP.json
        drift[model] = profile_ms(stem + ".after.profile") / profile_ms(stem + ".profile") - 1
    records = [json.loads(l) for l in open(metrics_path) if '"step"' in l]
    measured_ms = 1000 * statistics.median(r["step_seconds"] for r in records[3:])
    peaks = [s["total"] for s in records[-1]["peak_bytes_by_stage"]]
    for s, stage in enumerate(plan["stages"]):
        rows.append({"model": model, "cap": cap, "cap_bytes": cap_bytes, "planner": plan["planner"], "schedule": plan["schedule"],
                     "microbatches": plan["microbatches"], "stages": len(plan["stages"]),
                     "layers": " ".join("%d-%d" % tuple(r) for r in stage["layers"]),
                     "replicas": stage["replicas"], "recompute": " ".join(map(str, stage["recompute"])),
                     "predicted_step_ms": plan["predicted_step_ms"], "measured_step_ms": measured_ms,
                     "step_error": plan["predicted_step_ms"] / measured_ms - 1, "stage": s,
                     "predicted_peak_bytes": stage["predicted_peak_bytes"], "measured_peak_bytes": peaks[s],
                     "peak_error": stage["predicted_peak_bytes"] / peaks[s] - 1, "profile_drift": drift[model]})
with open(out, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
for r in rows:
    print("%-7s %-5s %-11s M=%-3d stage %d [%s] x%d recompute [%s]: step %.1f predicted / %.1f measured ms (%+.1f%%), "
          "peak %.1f / %.1f MB (%+.1f%%); profile after the runs %+.1f%%" % (r["model"], r["cap"], r["schedule"],
          r["microbatches"], r["stage"], r["layers"], r["replicas"], r["recompute"], r["predicted_step_ms"],
          r["measured_step_ms"], 100 * r["step_error"], r["predicted_peak_bytes"] / 1e6, r["measured_peak_bytes"] / 1e6,
          100 * r["peak_error"], 100 * r["profile_drift"]))

keys = []
for r in rows:
    if (r["model"], r["cap"]) not in keys:
        keys.append((r["model"], r["cap"]))
colour = {k: "C%d" % (i % 10) for i, k in enumerate(keys)}
fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
for ax, (pred, meas, unit, scale, band, title) in zip(axes, [
        ("predicted_step_ms", "measured_step_ms", "ms", 1, 0.10, "step time (one point per plan)"),
        ("predicted_peak_bytes", "measured_peak_bytes", "MB", 1e6, 0.05, "peak memory (one point per stage)")]):
    seen = set()
    for r in rows:
        if pred.endswith("_ms") and (r["model"], r["cap"]) in seen:
            continue
        seen.add((r["model"], r["cap"]))
        marker = {"loose": "o", "tight": "s"}.get(r["cap"], "^")
        ax.scatter(r[meas] / scale, r[pred] / scale, marker=marker, color=colour[(r["model"], r["cap"])],
                   label="%s %s" % (r["model"], r["cap"]))
        ax.annotate(r["model"], (r[meas] / scale, r[pred] / scale), fontsize=7, xytext=(3, 3), textcoords="offset points")
    lo = min(min(r[meas], r[pred]) for r in rows) / scale * 0.8
    hi = max(max(r[meas], r[pred]) for r in rows) / scale * 1.2
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.fill_between([lo, hi], [lo * (1 - band), hi * (1 - band)], [lo * (1 + band), hi * (1 + band)], color="0.9",
                    label="±%d%%" % round(band * 100), zorder=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):  # plain numbers on the log scales
        axis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        axis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.set_xlabel("measured (%s)" % unit)
    ax.set_ylabel("predicted (%s)" % unit)
    ax.set_title(title)
handles, labels = axes[0].get_legend_handles_labels()
extra_handles, extra_labels = axes[1].get_legend_handles_labels()
handles.append(extra_handles[-1])
labels.append(extra_labels[-1] + " (memory)")
fig.legend(handles, labels, loc="lower center", ncol=6, fontsize=8)
fig.suptitle("loom plan (joint at three caps; dapple, pipedream, dp, gpipe at the loose one) on a 1x2 cluster of this machine:\npredicted (the one model) against measured", fontsize=10)
# The legend's rows below the plots (six entries a row), the axes above them.
rows = -(-len(labels) // 6)
fig.set_size_inches(11, 4.8 + 0.22 * rows)
fig.tight_layout(rect=(0, 0.035 * rows + 0.03, 1, 0.95))
fig.savefig(png, dpi=120)
EOF
repro_finish
