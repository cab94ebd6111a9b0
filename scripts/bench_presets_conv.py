#!/usr/bin/env python3
"""Training speed of loom's image presets next to the same networks in PyTorch (issue 16).

    scripts/bench_presets_conv.py LOOM_BINARY [--quick] [--presets vgg16 resnet50 ...]
    scripts/bench_presets_conv.py LOOM_BINARY --size paper --global-batch 8 --microbatches 1 \
        --threads 2 --presets resnet50 vgg16 --repeats 3        # issue 32: 224x224, batch 8

For each preset (vgg16, vgg19, resnet50, amoebanet18, amoebanet36) at `--size` (default cpu; paper:
the 224x224 ImageNet networks, resnet50 with torchvision's ResNet-50 parameter count) and, with
--global-batch, that batch in --microbatches micro-batches instead of loom train's defaults:
  * loom:    mpirun -np 1 --bind-to none LOOM train --model P --size cpu --data synthetic
             --threads 2 --steps N --metrics FILE   (its defaults otherwise: global batch 64 in
             4 micro-batches, SGD lr 0.05 momentum 0.9, cosine schedule); samples/s is the median
             of the metrics file's per-step `samples_per_s` after the warm-up steps;
  * PyTorch: the same network written out here in torch.nn from the preset's settings (read from
             `loom describe --model P --size cpu --json`), trained the way `loom train` trains it:
             the global batch in the same micro-batches (gradients accumulated, loss = global-batch
             mean, so BatchNorm normalises the same rows), torch.optim.SGD with the same lr and
             momentum, a cosine LambdaLR, synthetic inputs of the preset's shape, train mode,
             torch.set_num_threads(2); samples/s is the median over the timed steps.
"Same model" is checked before any timing: the PyTorch network's trainable parameters, block by
block, must equal describe's (the script stops otherwise) and both totals are printed.
The two sides run interleaved (loom, torch, loom, torch, ...) `--repeats` times, all of them while
this script holds /tmp/loom-bench.lock (flock, the machine-wide benchmark lock); the table gives
the medians of the runs and loom / PyTorch, with the load average (`uptime`'s) before each run.
Writes OUT.csv and OUT.md (default bench_presets_conv.*). The PyTorch side runs in a child process of `--python` (default /opt/torch2-venv/bin/python);
this script itself needs only the standard library.
"""
import argparse
import csv
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PRESETS = ["vgg16", "vgg19", "resnet50", "amoebanet18", "amoebanet36"]
LOCK = "/tmp/loom-bench.lock"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("loom", help="path of the loom executable")
    p.add_argument("--quick", action="store_true", help="few steps, one repeat, vgg16 and resnet50 only (< 1 min)")
    p.add_argument("--presets", nargs="+", choices=PRESETS, help="presets to run (default: all five)")
    p.add_argument("--steps", type=int, default=6, help="timed steps per run (after --warmup)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps at the start of every run")
    p.add_argument("--repeats", type=int, default=2, help="interleaved loom/PyTorch pairs per preset")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--size", default="cpu", help="the presets' size (cpu, or paper: 224x224 ImageNet shapes)")
    p.add_argument("--global-batch", type=int, help="samples per step (default: loom train's)")
    p.add_argument("--microbatches", type=int, help="micro-batches per step (default: loom train's)")
    p.add_argument("--python", default="/opt/torch2-venv/bin/python", help="python of the PyTorch side")
    p.add_argument("--out", default="bench_presets_conv", help="prefix of the CSV and Markdown files")
    p.add_argument("--worker", help=argparse.SUPPRESS)  # internal: JSON job of one PyTorch run
    a = p.parse_args(argv)
    if a.quick:
        a.steps, a.warmup, a.repeats = 3, 1, 1
        a.presets = a.presets or ["vgg16", "resnet50"]
    a.presets = a.presets or PRESETS
    return a


# ---------------------------------------------------------------------------------------------
# The PyTorch side: the presets' networks as lists of blocks (one per loom block).

def vgg_blocks(nn, s, convs_per_stage):
    blocks, channels = [], s["in_channels"]
    for stage, convs in enumerate(convs_per_stage):
        out = s["width"] * min(1 << stage, 8)
        for i in range(convs):
            layers = [nn.Conv2d(channels, out, 3, padding=1)]
            if s["batch_norm"]:
                layers.append(nn.BatchNorm2d(out))
            layers.append(nn.ReLU())
            if i + 1 == convs:
                layers.append(nn.MaxPool2d(2, 2))
            blocks.append(nn.Sequential(*layers))
            channels = out
    side, fc, p = s["image"] // 32, s["fc"], s["dropout"] / 100.0
    blocks.append(nn.Sequential(nn.Flatten(), nn.Linear(channels * side * side, fc), nn.ReLU(), nn.Dropout(p)))
    blocks.append(nn.Sequential(nn.Linear(fc, fc), nn.ReLU(), nn.Dropout(p)))
    blocks.append(nn.Linear(fc, s["classes"]))
    return blocks


def resnet_blocks(torch, nn, s):
    class Bottleneck(nn.Module):
        def __init__(self, cin, planes, stride):
            super().__init__()
            out = planes * 4
            self.conv1, self.bn1 = nn.Conv2d(cin, planes, 1, bias=False), nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3, self.bn3 = nn.Conv2d(planes, out, 1, bias=False), nn.BatchNorm2d(out)
            self.downsample = None
            if stride != 1 or cin != out:
                self.downsample = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))

        def forward(self, x):
            h = torch.relu(self.bn1(self.conv1(x)))
            h = torch.relu(self.bn2(self.conv2(h)))
            h = self.bn3(self.conv3(h))
            return torch.relu(h + (self.downsample(x) if self.downsample is not None else x))

    w = s["width"]
    blocks = [nn.Sequential(nn.Conv2d(s["in_channels"], w, 7, 2, 3, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
                            nn.MaxPool2d(3, 2, 1))]
    channels = w
    for stage in range(4):
        for i in range(s["stage%d" % (stage + 1)]):
            blocks.append(Bottleneck(channels, w << stage, 2 if i == 0 and stage > 0 else 1))
            channels = (w << stage) * 4
    blocks.append(nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, s["classes"])))
    return blocks


def amoebanet_blocks(torch, nn, s):
    # The cells are the PyTorch reference the layer tests check loom's AmoebaNet cell against.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "layers", "reference"))
    from amoeba import Cell, NORMAL, REDUCTION
    F = torch.nn.functional

    class Stem(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv, self.bn = nn.Conv2d(cin, cout, 3, 2, 1, bias=False), nn.BatchNorm2d(cout)

        def forward(self, x):
            return [self.bn(self.conv(x))]

    class Head(nn.Module):
        def __init__(self, features, classes, dropout):
            super().__init__()
            self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
            self.fc = nn.Linear(features, classes)

        def forward(self, inputs):
            return self.fc(self.drop(F.adaptive_avg_pool2d(F.relu(inputs[-1]), 1).flatten(1)))

    blocks = [Stem(s["in_channels"], s["stem_filters"])]
    chain = {"prev_prev": 0, "prev": s["stem_filters"], "reduced": False}

    def add(c, reduction):
        blocks.append(Cell(chain["prev_prev"], chain["prev"], c, reduction, chain["reduced"] and chain["prev_prev"] > 0))
        chain.update(prev_prev=chain["prev"], prev=c * len((REDUCTION if reduction else NORMAL)[1]),
                     reduced=reduction)

    for i in range(s["stem_cells"]):
        add(s["filters"] >> (s["stem_cells"] - i), True)
    channels = s["filters"]
    for group in range(3):
        if group > 0:
            channels *= 2
            add(channels, True)
        for _ in range(s["layers"] // 3):
            add(channels, False)
    blocks.append(Head(chain["prev"], s["classes"], s["dropout"] / 100.0))
    return blocks


def build_blocks(torch, preset, settings):
    nn = torch.nn
    if preset in ("vgg16", "vgg19"):
        return vgg_blocks(nn, settings, [2, 2, 3, 3, 3] if preset == "vgg16" else [2, 2, 4, 4, 4])
    if preset == "resnet50":
        return resnet_blocks(torch, nn, settings)
    return amoebanet_blocks(torch, nn, settings)


def trainable(module):
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def time_torch_run(job):
    """One PyTorch run (in the --python child): per-step samples/s of the timed steps."""
    import math
    import torch
    torch.set_num_threads(job["threads"])
    torch.manual_seed(job["seed"])
    blocks = build_blocks(torch, job["preset"], job["settings"])
    model = torch.nn.Sequential(*blocks).train()
    batch, micro, steps = job["global_batch"], job["microbatches"], job["warmup"] + job["steps"]
    optimizer = torch.optim.SGD(model.parameters(), lr=job["lr"], momentum=job["momentum"],
                                weight_decay=job["weight_decay"])
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 0.5 * (1 + math.cos(math.pi * k / steps)))
    loss_fn = torch.nn.CrossEntropyLoss()
    c, h, w = job["input_shape"]
    data = [(torch.randn(batch, c, h, w), torch.randint(0, job["classes"], (batch,))) for _ in range(2)]
    rows = batch // micro
    rates = []
    for step in range(steps):
        x, y = data[step % len(data)]
        start = time.perf_counter()
        optimizer.zero_grad()
        for m in range(micro):
            loss = loss_fn(model(x[m * rows:(m + 1) * rows]), y[m * rows:(m + 1) * rows]) * (1.0 / micro)
            loss.backward()
        optimizer.step()
        schedule.step()
        seconds = time.perf_counter() - start
        if step >= job["warmup"]:
            rates.append(batch / seconds)
    return {"torch": torch.__version__, "parameters": trainable(model),
            "block_parameters": [trainable(b) for b in blocks], "samples_per_s": rates,
            "loss": float(loss.item()) * micro}


# ---------------------------------------------------------------------------------------------
# The driver (standard library only).

def run(cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        sys.exit("bench_presets_conv: %s failed (%d):\n%s%s" % (" ".join(cmd), result.returncode,
                                                                result.stdout[-2000:], result.stderr[-2000:]))
    return result.stdout


def load_average():
    return os.getloadavg()[0]


def describe(a, preset):
    return json.loads(run([a.loom, "describe", "--model", preset, "--size", a.size, "--json"]))


def train_defaults(a):
    """loom train's defaults for the optimizer and batch, from the options file it writes."""
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        loom_run(a, "vgg16", 1, metrics, size="tiny")
        with open(os.path.splitext(metrics)[0] + ".options.toml") as f:
            text = f.read()
    values = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = (part.strip() for part in line.split("=", 1))
            values[key] = value.strip('"')
    return values


def loom_run(a, preset, steps, metrics, size=None):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    batch = []
    if size is None and a.global_batch:
        batch = ["--global-batch", str(a.global_batch), "--microbatches", str(a.microbatches or 1)]
    run(["mpirun", "-np", "1", "--bind-to", "none", a.loom, "train", "--model", preset, "--size",
         size or a.size, "--data", "synthetic", "--threads", str(a.threads), "--steps", str(steps), "--metrics",
         metrics, "--quiet"] + batch, env=env)
    with open(metrics) as f:
        return [json.loads(line) for line in f if '"samples_per_s"' in line]


def time_loom(a, preset):
    with tempfile.TemporaryDirectory() as tmp:
        lines = loom_run(a, preset, a.warmup + a.steps, os.path.join(tmp, "metrics.jsonl"))
    return [line["samples_per_s"] for line in lines[a.warmup:]]


def time_torch(a, job):
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    out = run([a.python, os.path.abspath(__file__), a.loom, "--worker", json.dumps(job)], env=env)
    return json.loads(out.strip().splitlines()[-1])


def torch_job(a, preset, info, defaults):
    settings = {k: int(v) if float(v).is_integer() else v for k, v in info["settings"].items()}
    return {"preset": preset, "settings": settings, "threads": a.threads, "seed": 1,
            "global_batch": a.global_batch or int(defaults["global-batch"]),
            "microbatches": (a.microbatches or 1) if a.global_batch else int(defaults["microbatches"]),
            "lr": float(defaults["lr"]), "momentum": float(defaults["momentum"]),
            "weight_decay": float(defaults["weight-decay"]), "input_shape": input_shape(info),
            "classes": settings["classes"],
            "warmup": a.warmup, "steps": a.steps}


def input_shape(info):
    s = info["settings"]
    return [int(s["in_channels"]), int(s["image"]), int(s["image"])]


def check_same_model(preset, info, torch_result):
    """The PyTorch network has loom's trainable parameters, block by block."""
    loom_blocks = [b["parameters"] for b in info["blocks"]]
    print("  %s: trainable parameters loom %d, PyTorch %d (%d blocks each)" % (
        preset, info["parameters"], torch_result["parameters"], len(loom_blocks)), flush=True)
    if torch_result["block_parameters"] != loom_blocks or torch_result["parameters"] != info["parameters"]:
        sys.exit("bench_presets_conv: %s: PyTorch's blocks have %s parameters, loom's %s" % (
            preset, torch_result["block_parameters"], loom_blocks))


def bench_preset(a, preset, defaults):
    info = describe(a, preset)
    job = torch_job(a, preset, info, defaults)
    check = time_torch(a, dict(job, warmup=0, steps=1))
    check_same_model(preset, info, check)
    runs = {"loom": [], "torch": []}
    loads = []
    for _ in range(a.repeats):
        loads.append(load_average())
        runs["loom"].append(statistics.median(time_loom(a, preset)))
        loads.append(load_average())
        runs["torch"].append(statistics.median(time_torch(a, job)["samples_per_s"]))
        print("  %s: loom %.1f, PyTorch %.1f samples/s (load %.2f)" % (
            preset, runs["loom"][-1], runs["torch"][-1], loads[-1]), flush=True)
    loom_rate, torch_rate = statistics.median(runs["loom"]), statistics.median(runs["torch"])
    return {"preset": preset, "batch": job["global_batch"], "microbatches": job["microbatches"],
            "parameters": info["parameters"], "loom_samples_per_s": round(loom_rate, 2),
            "torch_samples_per_s": round(torch_rate, 2), "ratio": round(loom_rate / torch_rate, 3),
            "loom_runs": " ".join("%.1f" % r for r in runs["loom"]),
            "torch_runs": " ".join("%.1f" % r for r in runs["torch"]),
            "load_min": round(min(loads), 2), "load_max": round(max(loads), 2), "torch": check["torch"]}


def write_tables(a, rows, header):
    with open(a.out + ".csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = [header, "",
             "| preset | batch (micro-batches) | parameters | loom samples/s | PyTorch %s samples/s | ratio | "
             "runs loom / PyTorch | load |" % rows[0]["torch"], "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %d (%d) | %s | %.1f | %.1f | %.2fx | %s / %s | %.2f-%.2f |" % (
            r["preset"], r["batch"], r["microbatches"], format(r["parameters"], ","), r["loom_samples_per_s"],
            r["torch_samples_per_s"], r["ratio"], r["loom_runs"], r["torch_runs"], r["load_min"], r["load_max"]))
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print("wrote %s.csv and %s.md" % (a.out, a.out))


def main(argv):
    a = parse_args(argv)
    if a.worker:
        print(json.dumps(time_torch_run(json.loads(a.worker))))
        return
    with open(LOCK, "a") as lock:  # one hold for the whole series: no other benchmark runs between A and B
        print("waiting for %s ..." % LOCK, flush=True)
        fcntl.flock(lock, fcntl.LOCK_EX)
        bench_all(a)


def bench_all(a):
    defaults = train_defaults(a)
    header = "%s, %s; size %s, global batch %s in %s micro-batches, %s lr %s momentum %s; " \
             "%d threads, %d warm-up + %d timed steps, %d repeats" % (
                 time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.uname().nodename, a.size,
                 a.global_batch or defaults["global-batch"],
                 (a.microbatches or 1) if a.global_batch else defaults["microbatches"], defaults["optimizer"],
                 defaults["lr"], defaults["momentum"], a.threads, a.warmup, a.steps, a.repeats)
    print(header, flush=True)
    rows = [bench_preset(a, preset, defaults) for preset in a.presets]
    write_tables(a, rows, header)


if __name__ == "__main__":
    main(sys.argv[1:])
