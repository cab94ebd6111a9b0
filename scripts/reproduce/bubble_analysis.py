"""bubble_vs_microbatches.sh's analysis: measured, simulated and DAPPLE-formula step times.

bubble_analysis.py LOOM WORK CSV BATCH WARMUP REPEATS "S..." "M..."  reads WORK/sS_mM_rR.{jsonl,trace.json}
(R = 1..REPEATS); every median pools the repeats.
"""
import json
import statistics
import subprocess
import sys

import tables


def timed_events(trace_path, warmup):
    """Per rank: the trace's slices after that rank's WARMUP-th optimizer step."""
    events = [e for e in json.load(open(trace_path))["traceEvents"] if e.get("ph") == "X"]
    by_rank = {}
    for e in sorted(events, key=lambda e: e["ts"]):
        by_rank.setdefault(e["tid"], []).append(e)
    kept = {}
    for rank, rank_events in by_rank.items():
        steps = [e["ts"] + e["dur"] for e in rank_events if e["cat"] == "step"]
        start = steps[warmup - 1] if warmup > 0 else float("-inf")
        kept[rank] = [e for e in rank_events if e["ts"] >= start]
    return kept


def median_ms(events, test):
    durations = [e["dur"] / 1e3 for e in events if test(e)]
    return statistics.median(durations) if durations else 0.0


def stage_costs(trace_paths, warmup, stages):
    """Per stage (rank s runs stage s): median F, B, STEP (+ AR), activation and gradient sends."""
    kept = [timed_events(path, warmup) for path in trace_paths]
    costs = []
    for s in range(stages):
        e = [event for run in kept for event in run[s]]
        costs.append({"forward": median_ms(e, lambda x: x["cat"] == "forward"),
                      "backward": median_ms(e, lambda x: x["cat"] == "backward"),
                      "step": median_ms(e, lambda x: x["cat"] == "step") + median_ms(e, lambda x: x["cat"] == "allreduce"),
                      "send_activation": median_ms(e, lambda x: x["name"].startswith("SA")),
                      "send_gradient": median_ms(e, lambda x: x["name"].startswith("SG"))})
    return costs


def simulate(loom, stages, m, costs):
    forward = [c["forward"] + c["send_activation"] for c in costs]
    backward = [c["backward"] + c["send_gradient"] for c in costs]
    command = [loom, "simulate", "--json", "--schedule", "dapple", "--stages", str(stages), "--microbatches", str(m)]
    for flag, values in (("--forward-ms", forward), ("--backward-ms", backward), ("--step-ms", [c["step"] for c in costs])):
        command += [flag, ",".join(f"{v:.6f}" for v in values)]
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)["step_ms"]


def measured_step_ms(metrics_paths, batch, warmup):
    times = []
    for path in metrics_paths:
        rows = [json.loads(line) for line in open(path) if '"step"' in line]
        times += [batch / r["samples_per_s"] * 1e3 for r in rows[warmup:]]
    return statistics.median(times)


def row(loom, work, batch, warmup, repeats, stages, m):
    names = [f"{work}/s{stages}_m{m}_r{r}" for r in range(1, repeats + 1)]
    costs = stage_costs([name + ".trace.json" for name in names], warmup, stages)
    w = max(c["forward"] + c["backward"] for c in costs)
    step = max(c["step"] for c in costs)
    boundary_comm = sum(c["send_activation"] + c["send_gradient"] for c in costs) / max(stages - 1, 1)
    alpha = boundary_comm / w if stages > 1 else 0.0
    overhead = (1 + alpha) * (stages - 1) / m
    measured = measured_step_ms([name + ".jsonl" for name in names], batch, warmup)
    return {"stages": stages, "microbatches": m, "microbatch_size": batch // m,
            "measured_ms": round(measured, 2), "simulated_ms": round(simulate(loom, stages, m, costs), 2),
            "formula_ms": round(m * w * (1 + overhead) + step, 2), "ideal_ms": round(m * w + step, 2),
            "alpha": round(alpha, 4), "overhead_P": round(overhead, 4),
            "bubble_measured": round(1 - (m * w + step) / measured, 4),
            "stage_fb_ms": round(w, 3), "step_ms": round(step, 3)}


def main():
    loom, work, out, batch, warmup, repeats, stage_counts, microbatches = sys.argv[1:]
    batch, warmup, repeats = int(batch), int(warmup), int(repeats)
    rows = [row(loom, work, batch, warmup, repeats, s, m)
            for s in map(int, stage_counts.split()) for m in map(int, microbatches.split())]
    tables.write_csv(out, rows)
    print("| S | M | micro-batch | measured ms | simulated ms | formula ms | ideal M·w ms | alpha | P = (1+alpha)(S-1)/M | measured bubble |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['stages']} | {r['microbatches']} | {r['microbatch_size']} | {r['measured_ms']:.1f} | {r['simulated_ms']:.1f} "
              f"| {r['formula_ms']:.1f} | {r['ideal_ms']:.1f} | {r['alpha']:.3f} | {r['overhead_P']:.3f} | {r['bubble_measured']:.3f} |")


if __name__ == "__main__":
    main()
