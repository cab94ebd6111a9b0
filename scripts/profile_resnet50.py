#!/usr/bin/env python3
"""Where a ResNet-50 training step's time goes, loom next to PyTorch (issue 32).

    scripts/profile_resnet50.py build/apps/loom [--threads 2] [--batch 8] [--steps 4]

One process each, 224x224 synthetic images, the batch in one micro-batch, SGD lr 0.05 momentum 0.9,
fp32, the given math threads; one warm-up step, then --steps profiled steps. Both sides run under the
machine-wide benchmark lock (/tmp/loom-bench.lock), one after the other.
  * loom:    `mpirun -np 1 --bind-to none LOOM train --model resnet50 --size paper ...` with
             ONEDNN_VERBOSE=1: every oneDNN primitive's time (convolution forward, backward-data,
             backward-weights; reorders between layouts), per step; "everything else" (BatchNorm,
             ReLU, residual adds, pooling, the classifier, loss, optimizer, data) is the step time
             (median of the metrics file's profiled steps) minus oneDNN's share.
  * PyTorch: torchvision's resnet50 under torch.profiler (the same steps), self CPU time per ATen op,
             grouped the same way (its convolutions do their own reorders inside the op).
Prints a Markdown table of milliseconds per step; the PyTorch side needs torch >= 2 and torchvision
(--python, default /opt/torch2-venv/bin/python).
"""
import argparse
import collections
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile

LOCK = "/tmp/loom-bench.lock"

# (label, [ATen op names]) in the order of the table; ops not listed count as "everything else".
TORCH_GROUPS = [
    ("convolution forward", ["aten::mkldnn_convolution"]),
    ("convolution backward (data + weights)", ["aten::convolution_backward"]),
    ("BatchNorm forward + backward", ["aten::native_batch_norm", "aten::native_batch_norm_backward",
                                      "aten::_batch_norm_with_update", "aten::batch_norm_backward"]),
    ("ReLU forward + backward", ["aten::relu_", "aten::clamp_min_", "aten::threshold_backward"]),
    ("residual adds, gradient sums", ["aten::add_", "aten::add"]),
    ("max pooling forward + backward", ["aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward"]),
]
LOOM_GROUPS = [
    ("convolution forward", ("convolution", "forward_training")),
    ("convolution backward-data", ("convolution", "backward_data")),
    ("convolution backward-weights", ("convolution", "backward_weights")),
    ("reorders (layouts, weights, weight-gradient sums)", ("reorder", None)),
]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("loom")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=4, help="profiled steps after one warm-up step")
    p.add_argument("--python", default="/opt/torch2-venv/bin/python")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def loom_profile(a):
    env = dict(os.environ, ONEDNN_VERBOSE="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "metrics.jsonl")
        cmd = ["mpirun", "-np", "1", "--bind-to", "none", "-x", "ONEDNN_VERBOSE", a.loom, "train", "--model",
               "resnet50", "--size", "paper", "--data", "synthetic", "--threads", str(a.threads), "--global-batch",
               str(a.batch), "--microbatches", "1", "--steps", str(a.steps + 1), "--metrics", metrics]
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if out.returncode != 0:
            sys.exit("profile_resnet50: loom train failed:\n" + out.stdout[-2000:] + out.stderr[-2000:])
        steps = [json.loads(line) for line in open(metrics) if line.strip()]
    steps = [s for s in steps if "samples_per_s" in s]
    step_ms = statistics.median(a.batch / s["samples_per_s"] * 1e3 for s in steps[1:])
    # Every step runs the same primitives in the same order: the first (warm-up) step's share of the
    # exec lines is dropped, the rest averaged over the profiled steps.
    lines = [l.split(",") for l in out.stdout.splitlines() if l.startswith("onednn_verbose,exec")]
    if len(lines) % (a.steps + 1) != 0:
        sys.exit("profile_resnet50: %d oneDNN calls do not split into %d equal steps" % (len(lines), a.steps + 1))
    per_step = collections.Counter()
    for f in lines[len(lines) // (a.steps + 1):]:
        per_step[(f[3], f[5])] += float(f[-1]) / a.steps
    rows = []
    for label, (kind, prop) in LOOM_GROUPS:
        rows.append((label, sum(v for (k, pr), v in per_step.items() if k == kind and (prop is None or pr == prop))))
    rows.append(("everything else (BatchNorm, ReLU, adds, pooling, classifier, loss, SGD, data)",
                 step_ms - sum(v for _, v in rows)))
    return step_ms, rows


TORCH_WORKER = r'''
import json, sys, time, torch, torchvision
a = json.loads(sys.argv[1])
torch.set_num_threads(a["threads"])
torch.manual_seed(0)
model = torchvision.models.resnet50()
model.train()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x = torch.randn(a["batch"], 3, 224, 224)
y = torch.randint(0, 1000, (a["batch"],))
loss_fn = torch.nn.CrossEntropyLoss()
def step():
    opt.zero_grad(set_to_none=True)
    loss_fn(model(x), y).backward()
    opt.step()
step()
times = []
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    for _ in range(a["steps"]):
        t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
ops = {e.key: e.self_cpu_time_total / 1e3 / a["steps"] for e in prof.key_averages()}
times.sort()
print(json.dumps({"step_ms": times[len(times) // 2] * 1e3, "ops": ops}))
'''


def torch_profile(a):
    job = json.dumps({"threads": a.threads, "batch": a.batch, "steps": a.steps})
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    out = subprocess.run([a.python, "-c", TORCH_WORKER, job], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit("profile_resnet50: the PyTorch side failed:\n" + out.stderr[-2000:])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    ops, rows = result["ops"], []
    for label, names in TORCH_GROUPS:
        rows.append((label, sum(ops.get(n, 0.0) for n in names)))
    rows.append(("everything else", result["step_ms"] - sum(v for _, v in rows)))
    return result["step_ms"], rows


def main(argv):
    a = parse_args(argv)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        load = os.getloadavg()[0]
        loom_step, loom_rows = loom_profile(a)
        torch_step, torch_rows = torch_profile(a)
    print("ResNet-50, batch %d, %d threads, %d profiled steps (load before %.2f)\n" % (a.batch, a.threads, a.steps, load))
    print("| loom | ms/step | PyTorch | ms/step |\n|---|---:|---|---:|")
    for i in range(max(len(loom_rows), len(torch_rows))):
        l = loom_rows[i] if i < len(loom_rows) else ("", None)
        t = torch_rows[i] if i < len(torch_rows) else ("", None)
        fmt = lambda v: "" if v is None else "%.0f" % v
        print("| %s | %s | %s | %s |" % (l[0], fmt(l[1]), t[0], fmt(t[1])))
    print("| **step** | **%.0f** | **step** | **%.0f** |" % (loom_step, torch_step))


if __name__ == "__main__":
    main(sys.argv[1:])
