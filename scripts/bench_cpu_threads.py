#!/usr/bin/env python3
"""loom's CPU speed by variant, side by side: threads (1 vs 2), precision (fp32, bf16 on oneDNN's
bf16 kernels, bf16 emulated with LOOM_CPU_BF16=emulate) and how steady the timed steps are.

Runs alternate over the variants (A B C A B C ...), one process each (`mpirun -np 1 --bind-to none`),
synthetic data, one micro-batch; a run's figure is global_batch / median step time of the steps after
the warm-up, its spread the slowest timed step over the fastest; a variant's figure is the median
over its repeats. The machine's load (/proc/loadavg) is printed before every run, and the CPU model
once (the bf16 kernels need AVX-512 BF16). Ratios are only meaningful on an idle machine: no test
asserts on them.

    scripts/bench_cpu_threads.py build/apps/loom --model gpt --set dim=768,heads=12,layers=2,seq=256,vocab=256 \\
        --variants 1:fp32,2:fp32,2:bf16,2:bf16-emulate --repeats 3
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("loom", help="path of the loom executable")
    p.add_argument("--model", default="gpt")
    p.add_argument("--set", default="", help="model overrides, as `loom train --set`")
    p.add_argument("--optimizer", default="sgd")
    p.add_argument("--variants", default="1:fp32,2:fp32", help="comma-separated THREADS:PRECISION, "
                   "PRECISION one of fp32, bf16, bf16-emulate")
    p.add_argument("--global-batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2, help="untimed first steps")
    p.add_argument("--repeats", type=int, default=3)
    return p.parse_args()


def cpu_model():
    with open("/proc/cpuinfo") as f:
        lines = f.read().splitlines()
    name = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown CPU")
    flags = next((line for line in lines if line.startswith("flags")), "")
    return f"{name}, {os.cpu_count()} CPUs, avx512_bf16 {'yes' if ' avx512_bf16' in flags else 'no'}"


def run(a, threads, precision):
    """(samples/s, slowest/fastest timed step) of one `loom train` run."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if precision == "bf16-emulate":
        env["LOOM_CPU_BF16"] = "emulate"
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "metrics.jsonl")
        cmd = ["mpirun", "-np", "1", "--bind-to", "none", a.loom, "train", "--model", a.model, "--data", "synthetic",
               "--threads", str(threads), "--steps", str(a.steps), "--global-batch", str(a.global_batch),
               "--microbatches", "1", "--optimizer", a.optimizer, "--precision", precision.split("-")[0],
               "--quiet", "--metrics", metrics] + (["--set", a.set] if a.set else [])
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        with open(metrics) as f:
            steps = [json.loads(line) for line in f if line.strip()]
    times = [s["step_seconds"] for s in steps if "step_seconds" in s and s["step"] > a.warmup]
    return a.global_batch / statistics.median(times), max(times) / min(times)


def main():
    a = parse_args()
    variants = [(int(v.split(":")[0]), v.split(":")[1]) for v in a.variants.split(",")]
    print(f"# {cpu_model()}; loom train --model {a.model} --set '{a.set}', batch {a.global_batch}, "
          f"{a.steps} steps ({a.warmup} untimed), {a.repeats} repeats, alternating")
    results = {v: [] for v in variants}
    for repeat in range(a.repeats):
        for threads, precision in variants:
            with open("/proc/loadavg") as f:
                load = " ".join(f.read().split()[:3])
            rate, spread = run(a, threads, precision)
            results[(threads, precision)].append((rate, spread))
            print(f"repeat {repeat + 1} threads {threads} {precision:13s} load {load}: {rate:8.3f} samples/s, "
                  f"slowest/fastest step {spread:.3f}", flush=True)
    base = statistics.median(r for r, _ in results[variants[0]])
    print("\n| threads | precision | samples/s (median) | runs | vs first row | slowest/fastest step (worst run) |")
    print("|---:|---|---:|---|---:|---:|")
    for (threads, precision), runs in results.items():
        median = statistics.median(r for r, _ in runs)
        listed = ", ".join(f"{r:.2f}" for r, _ in runs)
        print(f"| {threads} | {precision} | {median:.3f} | {listed} | {median / base:.2f}x | {max(s for _, s in runs):.2f} |")


if __name__ == "__main__":
    main()
