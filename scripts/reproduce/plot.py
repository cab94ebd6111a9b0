#!/usr/bin/python3
"""The figures of scripts/reproduce/*.sh: plot.py FIGURE CSV PNG.

One function per figure reads the CSV its script wrote and draws a PNG with a title, labelled axes
(with units) and a legend. Needs Debian's python3-matplotlib (run with /usr/bin/python3).
"""
import csv
import json
import os
import subprocess
import sys
import textwrap
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(value):
    return float(value) if value not in ("", None) else float("nan")


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def planner_table(rows, png):
    """Grouped bars: speedup over one V100 of best DP, PipeDream's and DAPPLE's plans, per case; one
    column of panels per profile source (published V100 profiles, loom's presets), one row per
    allreduce assumption."""
    sources = [s for s in ("published", "preset") if any(r.get("source", "published") == s for r in rows)]
    fig, axes = plt.subplots(2, len(sources), figsize=(13 * len(sources), 8), sharey=True, squeeze=False)
    bars = [("dp_speedup", "best data parallelism", "#999999"),
            ("pipedream_speedup", "PipeDream planner (run synchronously)", "#e6883c"),
            ("dapple_speedup", "DAPPLE planner", "#3c78d8")]
    top = max(number(r[key]) for r in rows for key, _, _ in bars if r[key] != "")
    for column, source in enumerate(sources):
        for ax, overlap in zip(axes[:, column], ("0", "1")):
            part = [r for r in rows if r["overlap"] == overlap and r.get("source", "published") == source]
            planner_bars(ax, part, bars)
            ax.set_ylim(0, top * 1.3)
            where = ("published V100 profiles (DAPPLE repository)" if source == "published"
                     else "loom's paper-size presets, analytic V100 profiles")
            ax.set_title(f"{where}; allreduce " + ("overlapped with the last backward (--overlap), every planner"
                                                   if overlap == "1" else "after the last backward (DAPPLE's model), every planner"),
                         fontsize=10)
    axes[0, 0].legend(fontsize=8, loc="upper left", ncol=3)
    fig.suptitle("DAPPLE vs PipeDream planner vs DP, clusters A/B/C: bars the one model's speedups (\"does not fit\": over a V100's memory there)\n"
                 "number over the DAPPLE bar: DAPPLE / PipeDream step-time ratio under the papers' closed form (paper: up to 3.23x; up to 2.32x over DP)",
                 fontsize=11)
    save(fig, png)


def planner_bars(ax, part, bars):
    labels = [f"{r['model']}\n{r['cluster']}" for r in part]
    width = 0.27
    for k, (key, label, color) in enumerate(bars):
        xs = [i + (k - 1) * width for i in range(len(part))]
        ax.bar(xs, [number(r[key]) for r in part], width, label=label, color=color)
        for x, r in zip(xs, part):  # an infeasible plan (over device memory) has no speedup
            if r[key] == "":
                ax.annotate("does not fit", (x, 0.2), ha="center", va="bottom", rotation=90, fontsize=6, color=color)
    for i, r in enumerate(part):
        if r["dapple_over_pipedream"] != "":
            ax.annotate(f"{number(r['dapple_over_pipedream']):.2f}x", (i + width, number(r["dapple_speedup"])),
                        ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(part)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("speedup over 1 device (x)")
    ax.grid(axis="y", alpha=0.3)


def allreduce_hierarchy(rows, png):
    """Bars per (layout, size): ring and hierarchical, measured next to the link model."""
    cases = []
    for r in rows:
        case = (int(r["nodes"]), int(r["ranks_per_node"]), int(r["bytes"]))
        if case not in cases:
            cases.append(case)
    value = {(int(r["nodes"]), int(r["ranks_per_node"]), int(r["bytes"]), r["algorithm"], kind): number(r[kind])
             for r in rows for kind in ("measured_ms", "model_ms")}
    bars = [("ring", "measured_ms", "flat ring, measured", "#e6883c", None),
            ("ring", "model_ms", "flat ring, model", "#f6c89f", "//"),
            ("hierarchical", "measured_ms", "hierarchical, measured", "#3c78d8", None),
            ("hierarchical", "model_ms", "hierarchical, model", "#a9c4f0", "//")]
    fig, ax = plt.subplots(figsize=(max(7, 1.6 * len(cases)), 5))
    width = 0.2
    for k, (algorithm, kind, label, color, hatch) in enumerate(bars):
        xs = [i + (k - 1.5) * width for i in range(len(cases))]
        ys = [value.get((*case, algorithm, kind), float("nan")) for case in cases]
        ax.bar(xs, ys, width, label=label, color=color, hatch=hatch, edgecolor="black", linewidth=0.4)
    for i, case in enumerate(cases):
        ring, hier = value.get((*case, "ring", "measured_ms")), value.get((*case, "hierarchical", "measured_ms"))
        if ring and hier:
            ax.annotate(f"{ring / hier:.2f}x faster", (i - width, ring * 1.05), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([f"{n} nodes x {g} ranks\n{b / 2**20:g} MiB" for n, g, b in cases], fontsize=8)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_ylabel("time per allreduce (ms, log scale)")
    ax.set_ylim(top=ax.get_ylim()[1] * 1.6)
    ax.set_title("Hierarchical vs flat-ring allreduce, inter-node link 10x slower than intra-node\n"
                 "(in-process link shaping on one machine; label: how much faster hierarchical measured)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3, which="both")
    save(fig, png)


def comm_bytes(rows, png):
    """Bars per (model, cluster): DP's bytes per sample next to PipeDream's (activations + sync)."""
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(rows)), 5.5))
    width = 0.38
    xs = range(len(rows))
    dp = [number(r["dp_bytes_per_sample"]) / 1e6 for r in rows]
    act = [number(r["pipedream_activation_bytes_per_sample"]) / 1e6 for r in rows]
    sync = [number(r["pipedream_weight_sync_bytes_per_sample"]) / 1e6 for r in rows]
    ax.bar([x - width / 2 for x in xs], dp, width, label="data parallelism (weight allreduce)", color="#999999")
    ax.bar([x + width / 2 for x in xs], act, width, label="PipeDream plan: activations + gradients at cuts",
           color="#e6883c")
    ax.bar([x + width / 2 for x in xs], sync, width, bottom=act, label="PipeDream plan: weight sync of replicated stages",
           color="#f6c89f", hatch="//", edgecolor="black", linewidth=0.4)
    for x, r in zip(xs, rows):
        top = max(dp[x], act[x] + sync[x])
        reduction = number(r["reduction_percent"])
        label = "DP" if r["pipedream_strategy"].count("|") == 0 else (
            f"-{reduction:.0f}%" if reduction >= 0 else f"+{-reduction:.0f}%")
        ax.annotate(label, (x, top * 1.03), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{r['model']}\n{r['cluster']}\n({r['devices']} GPUs)" for r in rows], fontsize=7)
    ax.set_ylabel("bytes communicated per training sample (MB)")
    ax.set_ylim(0, max(dp + [a + s for a, s in zip(act, sync)]) * 1.2)
    ax.set_title("Bytes per sample: PipeDream planner's strategy vs data parallelism (published V100 profiles)\n"
                 "label: PipeDream's bytes vs DP's (paper: up to -95 % for VGG-16); 'DP': the planner chose data parallelism", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    save(fig, png)


def boundary_bytes(rows, png):
    """Log bars per (model, cluster): largest cut activation per micro-batch vs all gradients."""
    fig, ax = plt.subplots(figsize=(max(8, 0.8 * len(rows)), 5.5))
    width = 0.27
    series = [("cut_bytes_per_microbatch", "largest activation at a DAPPLE cut, per micro-batch", "#3c78d8"),
              ("cut_bytes_per_step", "all cuts, activations + gradients, per step", "#a9c4f0"),
              ("gradient_bytes", "all gradients (one DP allreduce)", "#999999")]
    for k, (key, label, color) in enumerate(series):
        ax.bar([i + (k - 1) * width for i in range(len(rows))], [number(r[key]) / 1e6 for r in rows], width,
               label=label, color=color)
    for i, r in enumerate(rows):
        if r["gradient_over_cut"] != "":
            ax.annotate(f"{number(r['gradient_over_cut']):.0f}x", (i + width, number(r["gradient_bytes"]) / 1e6 * 1.1),
                        ha="center", va="bottom", fontsize=7)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([f"{r['model']}\n{r['cluster']}, M={r['microbatches']}\n{int(r['cuts']) + 1} stages"
                        for r in rows], fontsize=7)
    ax.set_ylabel("bytes (MB, log scale)")
    ax.set_ylim(top=max(number(r[key]) for r in rows for key, _, _ in series) / 1e6 * 40)
    ax.set_title("Activations crossing the DAPPLE planner's cuts vs gradient bytes: published V100 profiles "
                 "(bert-48, ...)\nand loom's paper-size presets planned from analytic V100 profiles (bert48, ...); "
                 "label: gradients / largest cut activation per micro-batch", fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    save(fig, png)


def bubble_vs_microbatches(rows, png):
    """Per S: step time against M, measured next to the simulator, DAPPLE's formula and the ideal."""
    stage_counts = sorted({int(r["stages"]) for r in rows})
    fig, axes = plt.subplots(1, len(stage_counts), figsize=(6 * len(stage_counts), 4.8), squeeze=False)
    lines = [("measured_ms", "measured (loom train)", "o", "-"),
             ("simulated_ms", "simulated (loom simulate, run's own F/B/STEP)", "s", "--"),
             ("formula_ms", "formula M·w·(1 + (1+α)(S−1)/M) + STEP", "^", ":"),
             ("ideal_ms", "no bubble: M·w + STEP", None, "-.")]
    for ax, stages in zip(axes[0], stage_counts):
        part = sorted((r for r in rows if int(r["stages"]) == stages), key=lambda r: int(r["microbatches"]))
        ms = [int(r["microbatches"]) for r in part]
        for key, label, marker, style in lines:
            ax.plot(ms, [number(r[key]) for r in part], marker=marker, linestyle=style, label=label)
        alphas = ", ".join(f"{number(r['alpha']):.3f}" for r in part)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ticker.ScalarFormatter())
        ax.set_xticks(ms)
        ax.set_xlabel("micro-batches M per global batch (log scale)")
        ax.set_ylabel("step time (ms)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"S = {stages} stages (measured α per M: {alphas})", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("DAPPLE 1F1B: step time vs micro-batches, fixed global batch (mlp, 1 CPU thread per stage)", fontsize=10)
    save(fig, png)


GPIPE_DAPPLE_STYLES = {("gpipe", "0"): ("GPipe", "#e6883c", None, "-", "o"),
                       ("gpipe", "1"): ("GPipe + recomputation", "#e6883c", "///", "--", "s"),
                       ("dapple", "0"): ("DAPPLE (1F1B)", "#3c78d8", None, "-", "o"),
                       ("dapple", "1"): ("DAPPLE + recomputation", "#3c78d8", "///", "--", "s")}


def gpipe_vs_dapple(rows, png):
    """(a) peak memory per stage at the largest M, (b) the fullest stage's peak against M and
    (c) throughput against M, for GPipe and DAPPLE with and without recomputation."""
    ms = sorted({int(r["microbatches"]) for r in rows})
    stages = sorted({int(r["stage"]) for r in rows})
    fig, axes = plt.subplots(1, 3, figsize=(17, 5))
    width = 0.8 / len(GPIPE_DAPPLE_STYLES)
    largest = [r for r in rows if int(r["microbatches"]) == ms[-1]]
    for k, ((schedule, recompute), (label, color, hatch, style, marker)) in enumerate(GPIPE_DAPPLE_STYLES.items()):
        part = sorted((r for r in largest if (r["schedule"], r["recompute"]) == (schedule, recompute)),
                      key=lambda r: int(r["stage"]))
        xs = [int(r["stage"]) + (k - 1.5) * width for r in part]
        axes[0].bar(xs, [number(r["peak_total_bytes"]) / 1e6 for r in part], width, color=color, alpha=0.3,
                    hatch=hatch, edgecolor="black", linewidth=0.4)
        axes[0].bar(xs, [number(r["peak_activation_bytes"]) / 1e6 for r in part], width, color=color, label=label,
                    hatch=hatch, edgecolor="black", linewidth=0.4)
        runs = {m: [r for r in rows if (r["schedule"], r["recompute"], int(r["microbatches"])) == (schedule, recompute, m)]
                for m in ms}
        fullest = [max(number(r["peak_total_bytes"]) for r in runs[m]) / 1e6 for m in ms]
        rate = [number(runs[m][0]["samples_per_s"]) for m in ms]
        axes[1].plot(ms, fullest, color=color, linestyle=style, marker=marker, label=label)
        axes[2].plot(ms, rate, color=color, linestyle=style, marker=marker, label=label)
    axes[0].set_xticks(stages)
    axes[0].set_xticklabels([f"stage {s}" for s in stages])
    axes[0].set_ylabel("peak memory of the stage's rank (MB)")
    axes[0].set_title(f"(a) peak memory per stage at M = {ms[-1]}\n(pale: total; solid: of which activations)", fontsize=9)
    axes[1].set_ylabel("peak memory of the fullest stage (MB, total)")
    axes[1].set_title("(b) peak memory of the fullest stage vs M", fontsize=9)
    axes[2].set_ylabel("throughput (samples/s)")
    axes[2].set_title("(c) throughput vs M (median of the timed steps)", fontsize=9)
    for ax in axes[1:]:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ticker.ScalarFormatter())
        ax.set_xticks(ms)
        ax.set_xlabel("micro-batches M per step (fixed micro-batch size, log scale)")
        ax.set_ylim(bottom=0)
    for ax in axes:
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"GPipe vs DAPPLE, with and without recomputation: {rows[0]['model']}, {len(stages)} stages x 1 rank, "
                 f"{rows[0]['microbatch_rows']} samples per micro-batch, 1 CPU thread per stage", fontsize=10)
    save(fig, png)


def accuracy_curves(rows, png, key, title):
    """Test accuracy per epoch against training wall-clock and against epochs, one line per `key`,
    and the wall-clock time each reached the target accuracy (when the CSV has one)."""
    runs = defaultdict(list)
    for r in rows:
        runs[key(r) if callable(key) else r[key]].append(r)
    target = number(rows[0]["target_accuracy"]) if "target_accuracy" in rows[0] else None
    fig, axes = plt.subplots(1, 3 if target else 2, figsize=(16 if target else 12, 4.8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, points) in enumerate(runs.items()):
        diverged = [p for p in points if p.get("diverged_at_step")]
        points = [p for p in points if not p.get("diverged_at_step")]
        accuracy = [100 * number(p["test_accuracy"]) for p in points]
        # "no-stashing" runs dashed, in the colour of the stashing run they pair with
        style = {"linestyle": "--", "color": colors[(i - 1) % len(colors)]} if name.startswith("no-") else \
            {"color": colors[i % len(colors)]}
        axes[0].plot([number(p["elapsed_s"]) for p in points], accuracy, marker="o", label=name, **style)
        axes[1].plot([int(p["epoch"]) for p in points], accuracy, marker="o", label=name, **style)
        for p in diverged:  # no accuracy: mark where loom train stopped it, at the bottom of the axes
            for ax, x in ((axes[0], number(p["elapsed_s"])), (axes[1], int(p["epoch"]) - 0.5)):
                ax.annotate(f"{name}:\ndiverged at step {p['diverged_at_step']}", (x, 0.02), xycoords=("data", "axes fraction"),
                            ha="center", fontsize=7, color=style["color"])
                ax.plot([x], [0], marker="x", color=style["color"], transform=ax.get_xaxis_transform(), clip_on=False)
    values = [100 * number(r["test_accuracy"]) for r in rows if r["test_accuracy"] != ""] + ([100 * target] if target else [])
    for ax, xlabel in zip(axes, ("training wall-clock time (s)", "epoch")):
        if target:
            ax.axhline(100 * target, color="black", linestyle="--", linewidth=0.8, label=f"target {100 * target:.0f} %")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("test accuracy (%)")
        ax.set_ylim(min(values) - 2, max(values) + 2)
        ax.set_xlim(left=0)
        ax.grid(alpha=0.3)
    axes[1].xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    axes[0].legend(fontsize=8, loc="best")
    if target:
        time_to_target_bars(axes[2], runs, target)
    fig.suptitle(title, fontsize=10)
    save(fig, png)


def time_to_target_bars(ax, runs, target):
    names = list(runs)
    seconds = []
    for name in names:
        reached = [number(p["elapsed_s"]) for p in runs[name] if number(p["test_accuracy"]) >= target]
        seconds.append(reached[0] if reached else float("nan"))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    ax.bar(names, seconds, color=colors[:len(names)])
    for i, value in enumerate(seconds):
        ax.annotate("not reached" if value != value else f"{value:.0f} s", (i, 0 if value != value else value),
                    ha="center", va="bottom", fontsize=8)
    ax.set_ylabel(f"wall-clock time to {100 * target:.0f} % test accuracy (s)")
    ax.set_title("time to target (first epoch at or above it)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)


def time_to_accuracy(rows, png):
    accuracy_curves(rows, png, "method",
                    f"Fashion-MNIST, {rows[0]['model']} on 2 ranks with a slow shaped link between them:\n"
                    + " vs ".join(dict.fromkeys(r["method"] for r in rows))
                    + " (bsp: data parallelism; pipedream: asynchronous 1F1B with weight stashing)")


def weight_stashing(rows, png):
    accuracy_curves(rows, png, lambda r: f"{r['mode']}, lr {number(r['lr']):g}, momentum {number(r['momentum']):g}",
                    f"PipeDream (asynchronous 1F1B) on 4 stages, Fashion-MNIST, {rows[0]['model']}:\n"
                    "with weight stashing vs without (--no-weight-stashing-experiment)")


def schedule_labels():
    """Each kind's title from loom's table (`loom schedule list --json`, $LOOM as repro_plot sets it),
    wrapped for a tick label."""
    listing = subprocess.run([os.environ["LOOM"], "schedule", "list", "--json"], check=True, capture_output=True,
                             text=True).stdout
    return {k["name"]: textwrap.fill(k["title"], 11) for k in json.loads(listing)}


def schedule_memory(rows, png):
    """(a) each kind's measured activation peak per stage at the smallest M, with the simulator's
    in-flight count and the paper's figure; (b) the fullest stage against 1F1B's stage 0 for each M,
    measured, simulated and the paper's; (c) the simulator's bubble against the closed form."""
    kinds = list(dict.fromkeys(r["schedule"] for r in rows))
    labels = schedule_labels()
    ms = sorted({int(r["microbatches"]) for r in rows})
    stages = sorted({int(r["stage"]) for r in rows})
    unit = number(rows[0]["stage_microbatch_bytes"])
    run = {(r["schedule"], int(r["microbatches"]), int(r["stage"])): r for r in rows}
    fig, axes = plt.subplots(3, 1, figsize=(15, 15))
    colors = ["#3c78d8", "#6aa84f", "#e6883c", "#a64d79"]
    width = 0.8 / len(stages)
    m0 = ms[0]
    base = number(run[("dapple", m0, 0)]["measured_min_bytes"]) / unit
    for k, stage in enumerate(stages):
        xs = [i + (k - (len(stages) - 1) / 2) * width for i in range(len(kinds))]
        low = [number(run[(kind, m0, stage)]["measured_min_bytes"]) / unit for kind in kinds]
        high = [number(run[(kind, m0, stage)]["measured_max_bytes"]) / unit for kind in kinds]
        axes[0].bar(xs, low, width, color=colors[k % len(colors)], label=f"stage {stage}: measured (lowest of the runs)")
        axes[0].bar(xs, [h - lo for h, lo in zip(high, low)], width, bottom=low, color=colors[k % len(colors)], alpha=0.35,
                    hatch="///", edgecolor="black", linewidth=0.3, label="highest of the runs" if k == 0 else None)
        axes[0].plot(xs, [number(run[(kind, m0, stage)]["simulated_bytes"]) / unit for kind in kinds], "o", color="black",
                     markersize=4, label="simulator: peak in flight x chunk + the forward's pre-activation" if k == 0 else None)
        lower = [number(run[(kind, m0, stage)]["model_lower_bytes"]) / unit for kind in kinds]
        upper = [number(run[(kind, m0, stage)]["model_upper_bytes"]) / unit for kind in kinds]
        axes[0].errorbar([x + width / 4 for x in xs], lower, yerr=[[0] * len(lower), [u - lo for u, lo in zip(upper, lower)]],
                         fmt="_", color="dimgray", capsize=2, linewidth=1, markersize=5,
                         label="tensor model: sends done at once .. as late as possible" if k == 0 else None)
    for i, kind in enumerate(kinds):
        paper = number(run[(kind, m0, 0)]["paper_ratio"]) * base
        axes[0].plot([i - 0.45, i + 0.45], [paper, paper], color="red", linewidth=1.5,
                     label="paper's figure x 1F1B's measured stage 0" if i == 0 else None)
    axes[0].set_ylabel("peak activations (micro-batches of a stage)")
    axes[0].set_title(f"(a) activation peak per stage at M = {m0} (a micro-batch of a stage = {unit / 1024:g} KiB; "
                      "a chunk of a 2-chunk kind is half of it)", fontsize=10)
    width = 0.8 / (2 * len(ms))
    for j, m in enumerate(ms):
        fullest = {kind: max((run[(kind, m, s)] for s in stages), key=lambda r: number(r["measured_min_bytes"])) for kind in kinds}
        for q, (key, label, alpha) in enumerate((("measured_ratio_min", "measured", 1.0), ("simulated_ratio", "simulator", 0.45))):
            xs = [i + (2 * j + q - (2 * len(ms) - 1) / 2) * width for i in range(len(kinds))]
            values = [max(number(run[(kind, m, s)][key]) for s in stages) for kind in kinds]
            axes[1].bar(xs, values, width, color=colors[j % len(colors)], alpha=alpha, label=f"M = {m}: {label}",
                        edgecolor="black", linewidth=0.3)
        xs = [i + (2 * j + 0.5 - (2 * len(ms) - 1) / 2) * width for i in range(len(kinds))]
        axes[1].plot(xs, [number(fullest[kind]["paper_ratio"]) for kind in kinds], "_", color="red", markersize=18,
                     markeredgewidth=2, label="paper's figure" if j == len(ms) - 1 else None)
    axes[1].axhline(1, color="black", linewidth=0.6)
    axes[1].set_ylabel("fullest stage / 1F1B's stage 0")
    axes[1].set_title("(b) the fullest stage's activation peak relative to 1F1B's stage 0 (measured: lowest of the runs)",
                      fontsize=10)
    for j, m in enumerate(ms):
        xs = [i + (j - (len(ms) - 1) / 2) * 0.35 for i in range(len(kinds))]
        axes[2].bar(xs, [number(run[(kind, m, 0)]["simulated_bubble"]) for kind in kinds], 0.35, color=colors[j % len(colors)],
                    label=f"M = {m}: loom simulate", alpha=0.8)
        axes[2].plot(xs, [number(run[(kind, m, 0)]["formula_bubble"]) for kind in kinds], "_", color="red", markersize=16,
                     markeredgewidth=2, label="closed form (docs/schedules.md)" if j == 0 else None)
    axes[2].set_ylabel("bubble fraction")
    axes[2].set_title("(c) bubble: loom simulate (F = 1 ms, B = 2 ms, BI = BW = 1 ms, free links) and the closed form",
                      fontsize=10)
    for ax in axes:
        ax.set_xticks(range(len(kinds)))
        ax.set_xticklabels([labels.get(kind, kind) for kind in kinds], fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.35)  # room for the legend
        ax.legend(fontsize=8, ncol=3, loc="upper left")
    fig.suptitle(f"Activation memory and bubble of loom's schedules: an mlp of uniform blocks ({unit / 1024:g} KiB of "
                 f"activations per stage and micro-batch), {len(stages)} stages x 1 rank, {rows[0]['microbatch_rows']} "
                 f"samples per micro-batch, {rows[0]['repeats']} runs per kind", fontsize=11)
    save(fig, png)


FIGURES = {f.__name__: f for f in (planner_table, bubble_vs_microbatches, allreduce_hierarchy, time_to_accuracy,
                                   weight_stashing, comm_bytes, boundary_bytes, gpipe_vs_dapple,
                                   schedule_memory)}


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in FIGURES:
        sys.exit(f"usage: plot.py {{{','.join(FIGURES)}}} CSV PNG")
    figure, source, png = sys.argv[1:]
    rows = read_rows(source)
    if not rows:
        sys.exit(f"plot.py: {source} has no rows")
    FIGURES[figure](rows, png)


if __name__ == "__main__":
    main()
