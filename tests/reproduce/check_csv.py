#!/usr/bin/python3
"""check_csv.py SCRIPT CSV: the CSV of scripts/reproduce/SCRIPT.sh has its columns and values that
must hold on any machine (invariants of the cost model, the link model, the determinism contract),
never a timing. Prints each failed check and exits 1 if any."""
import csv
import math
import os
import re
import sys

failures = []
csv_path = ""  # the CSV checked; a script's other files lie beside it


def check(condition, what):
    if not condition:
        failures.append(what)


def number(row, key):
    return float(row[key])


def planner_table(rows):
    plans = {}  # (source, model): the layer counts of its feasible DAPPLE plans
    check({r["overlap"] for r in rows} == {"0", "1"}, "both allreduce assumptions present")
    check({r["source"] for r in rows} == {"published", "preset"}, "published profiles and loom's presets present")
    for r in rows:
        case = f"{r['model']} ({r['source']}) on {r['cluster']}, overlap {r['overlap']}"
        for key in ("dp_speedup", "pipedream_speedup", "dapple_speedup"):
            if r[key]:
                check(0 < number(r, key) <= 16.001, f"{case}: {key} {r[key]} in (0, 16]")
        # The DAPPLE search covers data parallelism and PipeDream's strategies under the same cost model
        # (when it ran to the end; the script does not limit its time).
        check(r["dapple_search"] == "exact", f"{case}: the DAPPLE search ran to the end ({r['dapple_search']})")
        for key in ("dapple_over_pipedream", "dapple_over_dp"):
            if r[key]:
                check(number(r, key) >= 0.999, f"{case}: {key} {r[key]} >= 1 (the DAPPLE planner's optimum)")
        # DAPPLE's search covers both: where either found a plan, DAPPLE found one and its ratio over it.
        if r["dp_speedup"] or r["pipedream_speedup"]:
            check(r["dapple_speedup"] != "", f"{case}: DAPPLE found a plan (DP or PipeDream did)")
        for key, other in (("dapple_over_dp", "dp_speedup"), ("dapple_over_pipedream", "pipedream_speedup")):
            if r[other] and r["dapple_speedup"]:
                check(r[key] != "", f"{case}: {key} present")
        if r["dapple_speedup"]:
            layers = strategy_layers(r["dapple_strategy"])
            check(layers is not None, f"{case}: DAPPLE's strategy '{r['dapple_strategy']}' is stages [a-b,...]xR over "
                  f"layers 0..L-1, each once, on at most 16 devices")
            if layers is not None:
                plans.setdefault((r["source"], r["model"]), set()).add(layers)
    for source, model in {(r["source"], r["model"]) for r in rows}:
        found = plans.get((source, model), set())
        check(len(found) == 1, f"{model} ({source}): a feasible DAPPLE plan, all of one layer count (counts {sorted(found)})")


def strategy_layers(strategy):
    """The layer count L of a Plan::strategy() such as `[0-21]x15 | [22-25]x1` (stages split by ` | `, a
    stage's chunks by `,`, its replicas after `x`), or None unless its ranges cover 0..L-1 once each
    and it uses 1..16 devices (the paper's clusters A, B and C all have 16)."""
    ranges, devices = [], 0
    for stage in strategy.split(" | "):
        match = re.fullmatch(r"\[(\d+-\d+(?:,\d+-\d+)*)\]x([1-9]\d*)", stage)
        if not match:
            return None
        ranges += [tuple(map(int, chunk.split("-"))) for chunk in match[1].split(",")]
        devices += int(match[2])
    ranges.sort()
    ends = [-1] + [last for _, last in ranges]
    if devices > 16 or any(first != end + 1 or last < first for (first, last), end in zip(ranges, ends)):
        return None
    return ranges[-1][1] + 1


def bubble_vs_microbatches(rows):
    check({r["stages"] for r in rows} >= {"2"}, "S = 2 present")
    for r in rows:
        s, m, alpha = int(r["stages"]), int(r["microbatches"]), number(r, "alpha")
        case = f"S={s} M={m}"
        check(alpha >= 0, f"{case}: alpha {alpha} >= 0")
        check(math.isclose(number(r, "overhead_P"), (1 + alpha) * (s - 1) / m, rel_tol=1e-2, abs_tol=1e-3),
              f"{case}: P = (1 + alpha)(S - 1)/M")
        check(number(r, "formula_ms") >= number(r, "ideal_ms") - 1e-6, f"{case}: formula >= ideal")
        for key in ("measured_ms", "simulated_ms", "ideal_ms"):
            check(number(r, key) > 0, f"{case}: {key} > 0")
        # The simulator replays the run's own costs: never below the busiest stage's compute.
        check(number(r, "simulated_ms") >= 0.99 * m * number(r, "stage_fb_ms"), f"{case}: simulated >= M w")


def allreduce_hierarchy(rows):
    check({r["algorithm"] for r in rows} == {"ring", "hierarchical"}, "ring and hierarchical present")
    intra, inter = 0.1e9, 0.01e9  # the script's default shaping, bytes/s
    for r in rows:
        nodes, per_node, size = int(r["nodes"]), int(r["ranks_per_node"]), float(r["bytes"])
        n = nodes * per_node
        if r["algorithm"] == "ring":
            model = 2 * size * (n - 1) / (n * inter)
        else:
            model = 2 * size * (per_node - 1) / (per_node * intra) + 2 * size * (nodes - 1) / (nodes * per_node * inter)
        case = f"{r['algorithm']} {nodes}x{per_node} {size:g} B"
        check(math.isclose(number(r, "model_ms"), model * 1e3, rel_tol=1e-3), f"{case}: model_ms is the link model")
        check(number(r, "measured_ms") > 0, f"{case}: measured > 0")


def accuracy_rows(rows, key, names):
    check({r[key] for r in rows} >= set(names), f"{key}s {names} present")
    for r in rows:
        if r.get("diverged_at_step"):
            check(r["test_accuracy"] == "" and int(r["diverged_at_step"]) > 0,
                  f"{r[key]} epoch {r['epoch']}: a diverged run has a step and no accuracy")
            continue
        check(0 <= number(r, "test_accuracy") <= 1, f"{r[key]} epoch {r['epoch']}: accuracy in [0, 1]")
        check(number(r, "elapsed_s") > 0, f"{r[key]} epoch {r['epoch']}: elapsed > 0")


def time_to_accuracy(rows):
    accuracy_rows(rows, "method", ["bsp", "dapple", "pipedream"])
    final = {r["method"]: r for r in rows}
    # DAPPLE makes the same updates as data parallelism (loom's determinism contract), its sums in
    # another order: each step's loss (time_to_accuracy_steps.csv, beside the CSV) within 1e-5 of
    # bsp's, relative (the quick run on an AVX2 EPYC: <= 1.3e-7 up to step 206). Later a ReLU input
    # within rounding of 0 can fall on the other side in one run, a finite change of its gradient,
    # and the runs drift apart (from step 207 there; at most 3.3e-4 over the quick run's 468 steps).
    # When that happens depends on the machine's rounding, so the contract is checked on the first
    # 20 steps, every step within 1e-2 (30x the drift measured), and the final accuracies within
    # 0.005 (50 of the 10,000 test images; they differed by 1 image, 0.0001).
    steps_path = os.path.join(os.path.dirname(csv_path), "time_to_accuracy_steps.csv")
    check(os.path.exists(steps_path), f"{steps_path} present")
    if failures:
        return
    with open(steps_path, newline="") as f:
        steps = list(csv.DictReader(f))
    check(steps and all(r.get("bsp") and r.get("dapple") for r in steps), f"{steps_path}: every step's bsp and dapple loss")
    if failures:
        return
    error = [abs(float(r["dapple"]) - float(r["bsp"])) / abs(float(r["bsp"])) for r in steps]
    worst = lambda part: f"{max(part):.2g} at step {steps[error.index(max(part))]['step']}"
    check(max(error[:20]) <= 1e-5, f"dapple's loss within 1e-5 of bsp's in steps 1-20 ({worst(error[:20])})")
    check(max(error) <= 1e-2, f"dapple's loss within 1e-2 of bsp's at every step ({worst(error)})")
    check(abs(number(final["bsp"], "test_accuracy") - number(final["dapple"], "test_accuracy")) <= 0.005,
          f"bsp and dapple reach the same accuracy within 0.005 ({final['bsp']['test_accuracy']}, "
          f"{final['dapple']['test_accuracy']})")
    for method in ("bsp", "pipedream"):
        check(number(final[method], "test_accuracy") >= 0.6, f"{method} learns (test accuracy >= 60 %)")


def weight_stashing(rows):
    accuracy_rows(rows, "mode", ["stashing", "no-stashing"])
    for r in rows:
        if r["mode"] == "stashing":
            check(not r["diverged_at_step"] and number(r, "test_accuracy") >= 0.6, f"with stashing it learns (lr {r['lr']}: {r['test_accuracy']})")


def comm_bytes(rows):
    for r in rows:
        case = f"{r['model']} on {r['cluster']}"
        total = number(r, "pipedream_activation_bytes_per_sample") + number(r, "pipedream_weight_sync_bytes_per_sample")
        check(abs(number(r, "pipedream_bytes_per_sample") - total) <= 2, f"{case}: activations + sync = total")
        check(number(r, "dp_bytes_per_sample") > 0, f"{case}: DP bytes > 0")
        if "|" not in r["pipedream_strategy"]:
            check(abs(number(r, "reduction_percent")) < 1e-6, f"{case}: a DP strategy communicates what DP does")
        check(number(r, "reduction_percent") <= 100, f"{case}: reduction <= 100 %")


def boundary_bytes(rows):
    for r in rows:
        case = f"{r['model']} on {r['cluster']}"
        check(int(r["cuts"]) == r["strategy"].count("|"), f"{case}: one cut per stage boundary")
        check(number(r, "gradient_bytes") > 0, f"{case}: gradient bytes > 0")
        check(number(r, "allreduce_bytes_per_step") <= number(r, "gradient_bytes") + 1, f"{case}: allreduce <= all gradients")
        check(number(r, "cut_bytes_per_microbatch") >= 0, f"{case}: cut bytes >= 0")


def gpipe_vs_dapple(rows):
    configs = {(s, c) for s in ("gpipe", "dapple") for c in ("0", "1")}
    ms = sorted({int(r["microbatches"]) for r in rows})
    stages = sorted({int(r["stage"]) for r in rows})
    s_count = len(stages)
    check(len(ms) >= 2 and s_count >= 2 and stages == list(range(s_count)), "two M or more, stages 0..S-1")
    check(len(rows) == len(configs) * len(ms) * s_count, "one row per (M, schedule, recomputation, stage)")
    run = {(r["schedule"], r["recompute"], int(r["microbatches"]), int(r["stage"])): r for r in rows}
    check(set(run) == {(s, c, m, st) for s, c in configs for m in ms for st in stages}, "every configuration present")
    if failures:
        return
    act = {key: number(r, "peak_activation_bytes") for key, r in run.items()}
    for (schedule, recompute, m, stage), r in run.items():
        case = f"{schedule} recompute {recompute} M={m} stage {stage}"
        inflight = m if schedule == "gpipe" else min(s_count - stage, m)
        check(number(r, "simulated_inflight_microbatches") == inflight, f"{case}: simulated in flight {inflight}")
        check(0 < number(r, "peak_activation_bytes") < number(r, "peak_total_bytes"), f"{case}: 0 < activations < total")
        check(number(r, "samples_per_s") > 0, f"{case}: samples/s > 0")
        check(r["samples_per_s"] == run[(schedule, recompute, m, 0)]["samples_per_s"], f"{case}: one rate per run")
        # Memory is measured exactly (every allocation is counted), so these hold on any machine.
        if recompute == "0":  # with one micro-batch in flight, recomputing it holds what keeping it does
            lower = act[(schedule, "1", m, stage)] < act[(schedule, "0", m, stage)]
            check(lower or inflight == 1 and act[(schedule, "1", m, stage)] <= 1.001 * act[(schedule, "0", m, stage)],
                  f"{case}: recomputation lowers the activation peak where more than one micro-batch is in flight")
    for m in ms:
        # DAPPLE keeps min(S - s, M) micro-batches on stage s, GPipe all M.
        if m > s_count:
            check(act[("dapple", "0", m, 0)] < act[("gpipe", "0", m, 0)], f"M={m}: DAPPLE's stage 0 below GPipe's")
        if m >= s_count:
            check(act[("dapple", "0", m, 0)] > act[("dapple", "0", m, s_count - 1)],
                  f"M={m}: DAPPLE's stage 0 holds more activations than its last stage")
    for small, large in zip(ms, ms[1:]):  # a fixed micro-batch size: GPipe's activations grow with M
        check(act[("gpipe", "0", large, 0)] > act[("gpipe", "0", small, 0)], f"GPipe's stage 0 grows from M={small} to {large}")


def schedule_memory(rows):
    kinds = {"gpipe", "dapple", "zb-h1", "zb-h2", "interleaved", "looped-bfs", "interleaved-zb", "zb-v", "v-half", "v-min",
             "dualpipev"}
    split = {"zb-h1", "zb-h2", "interleaved-zb", "zb-v", "v-half", "v-min", "dualpipev"}
    check({r["schedule"] for r in rows} == kinds, "every schedule kind present")
    ms = sorted({int(r["microbatches"]) for r in rows})
    s_count = int(rows[0]["stages"])
    run = {(r["schedule"], int(r["microbatches"]), int(r["stage"])): r for r in rows}
    check(len(run) == len(rows) == len(kinds) * len(ms) * s_count, "one row per (M, kind, stage)")
    if failures:
        return
    for (kind, m, s), r in run.items():
        case = f"{kind} M={m} stage {s}"
        lo, hi = int(r["measured_min_bytes"]), int(r["measured_max_bytes"])
        sim = int(r["simulated_bytes"])
        check(r["split_backward"] == ("1" if kind in split else "0"), f"{case}: split_backward")
        # The memory accounting is exact and the tensor model of scripts/reproduce/schedule_memory.py
        # bounds it: lower = every send completes at once, upper = as late as causality allows.
        check(int(r["model_lower_bytes"]) <= lo <= hi <= int(r["model_upper_bytes"]),
              f"{case}: measured {lo}..{hi} B within the tensor model's {r['model_lower_bytes']}..{r['model_upper_bytes']} B")
        if kind not in split:
            # Without a split backward no send changes the peak: the simulator's peak in flight x one
            # chunk's activations + one block's pre-activation (the forward's transient), plus the
            # 4-byte losses held on the last virtual stage.
            check(lo == hi == int(r["model_lower_bytes"]) == int(r["model_upper_bytes"]), f"{case}: one peak, the model's")
            check(0 <= lo - sim <= 4 * m, f"{case}: measured {lo} B = in flight x chunk + block output ({sim} B) + losses")
            check(abs(number(r, "measured_ratio_min") - number(r, "simulated_ratio")) <= 0.002,
                  f"{case}: measured ratio {r['measured_ratio_min']} = the simulator's {r['simulated_ratio']}")
        if r["formula_bubble"]:
            check(abs(number(r, "simulated_bubble") - number(r, "formula_bubble")) <= 1e-4,
                  f"{case}: simulated bubble {r['simulated_bubble']} = closed form {r['formula_bubble']}")
        # docs/schedules.md's peak in-flight (micro-batch, chunk) pairs, for M >= 2S
        if m >= 2 * s_count:
            S = s_count
            expected = {"gpipe": m, "dapple": S - s, "zb-h1": S, "zb-h2": 2 * S - 1, "interleaved": 2 * (S - s - 1) + S + 1,
                        "looped-bfs": 2 * m, "interleaved-zb": 2 * S, "zb-v": 2 * S, "v-half": 2 * (S // 2) + 2,
                        "v-min": 2 * (S // 3) + 2 + (2 if S % 3 == 2 and s % 3 else 0), "dualpipev": 2 * S + 1}[kind]
            check(int(r["simulated_inflight_chunks"]) == expected, f"{case}: simulated in flight {expected}")


def planner_calibration(rows):
    check({r["cap"] for r in rows} >= {"loose", "tight"}, "a loose and a tight cap present")
    # Issue 45: the other planners' plans are calibrated too (those that fit the tight cap).
    check(len({r["planner"] for r in rows} - {"joint"}) >= 2, f"plans of two other planners than joint present "
          f"({sorted({r['planner'] for r in rows})})")
    for r in rows:
        case = f"{r['model']} {r['cap']} ({r['schedule']}, M={r['microbatches']}) stage {r['stage']}"
        check(number(r, "predicted_peak_bytes") > 0 and number(r, "measured_peak_bytes") > 0, f"{case}: peaks present")
        # Memory is counted exactly on both sides; the target is 5% (docs/REPRODUCING.md has the
        # runs, -4.9..+2.5%), checked here at 10%, which the model before recomputation's holds (-35%) and
        # next_kept_bytes (-15%) missed. Step times are the machine's and not checked.
        check(abs(number(r, "peak_error")) <= 0.10, f"{case}: predicted peak {r['predicted_peak_bytes']} B within 10% "
              f"of the run's {r['measured_peak_bytes']} B")
        if r["cap"] != "loose":
            check(number(r, "predicted_peak_bytes") <= number(r, "cap_bytes"), f"{case}: the plan fits its cap")


COLUMNS = {
    "planner_calibration": "model cap cap_bytes planner schedule microbatches stages layers replicas recompute predicted_step_ms "
                           "measured_step_ms step_error stage predicted_peak_bytes measured_peak_bytes peak_error "
                           "profile_drift",
    "schedule_memory": "schedule chunks stages microbatches microbatch_rows stage repeats split_backward block_output_bytes "
                       "chunk_activation_bytes stage_microbatch_bytes measured_min_bytes measured_max_bytes "
                       "simulated_inflight_chunks simulated_inflight_microbatches simulated_bytes model_lower_bytes "
                       "model_upper_bytes paper_ratio simulated_bubble formula_bubble measured_ratio_min measured_ratio_max "
                       "simulated_ratio",
    "gpipe_vs_dapple": "model schedule recompute microbatches microbatch_rows global_batch stage samples_per_s step_ms "
                       "peak_total_bytes peak_activation_bytes simulated_inflight_microbatches",
    "planner_table": "source model cluster global_batch overlap dp_speedup pipedream_speedup dapple_speedup "
                     "dapple_strategy dapple_over_pipedream dapple_over_dp",
    "bubble_vs_microbatches": "stages microbatches measured_ms simulated_ms formula_ms ideal_ms alpha overhead_P",
    "allreduce_hierarchy": "nodes ranks_per_node ranks bytes algorithm measured_ms model_ms",
    "time_to_accuracy": "model method epoch elapsed_s test_accuracy train_loss target_accuracy",
    "weight_stashing": "model mode lr momentum epoch elapsed_s test_accuracy train_loss diverged_at_step",
    "comm_bytes": "model cluster devices pipedream_strategy dp_bytes_per_sample pipedream_bytes_per_sample reduction_percent",
    "boundary_bytes": "model cluster strategy microbatches cuts cut_bytes_per_microbatch gradient_bytes",
}


def main():
    global csv_path
    script, path = sys.argv[1:]
    csv_path = path
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = set(COLUMNS[script].split()) - set(reader.fieldnames or [])
        rows = list(reader)
    check(not missing, f"columns {sorted(missing)} present")
    check(rows, "at least one row")
    if not failures:
        globals()[script](rows)
    for failure in failures:
        print(f"{path}: FAILED: {failure}")
    print(f"{path}: {len(rows)} rows, {'ok' if not failures else f'{len(failures)} checks failed'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
