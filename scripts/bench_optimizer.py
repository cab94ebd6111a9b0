#!/usr/bin/env python3
"""torch.optim next to `loom bench optimizer` on the same parameters and threads.

Times one optimizer step over the parameters of an MLP (default 784-2048x7-10, 26.8 M parameters):
torch.optim SGD, SGD with momentum 0.9, Adam and AdamW (weight decay 0.01) with the single-tensor
loop ("default" on CPU), foreach=True and fused=True (PyTorch >= 2.4 on CPU; skipped where this
torch has no fused CPU kernel), and loom's step from `loom bench optimizer --json`. The two sides
alternate in rounds so that both meet the same machine load; each figure is the best over all
rounds. Run it with the python whose torch you want to compare, e.g.
    /usr/bin/python3 scripts/bench_optimizer.py --loom build/apps/loom --threads 2
"""
import argparse
import json
import os
import subprocess
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--loom", required=True, help="path of the loom executable")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3, help="alternations of torch and loom")
    p.add_argument("--repeats", type=int, default=5, help="timed steps per variant and round")
    p.add_argument("--inputs", type=int, default=784)
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--depth", type=int, default=7)
    p.add_argument("--outputs", type=int, default=10)
    return p.parse_args()


def mlp_parameters(torch, a):
    params = []
    for layer in range(a.depth + 1):
        fan_in = a.inputs if layer == 0 else a.width
        fan_out = a.outputs if layer == a.depth else a.width
        for shape in ((fan_out, fan_in), (fan_out,)):
            p = torch.nn.Parameter(torch.rand(shape) * 0.02 - 0.01)
            p.grad = torch.rand(shape) * 2 - 1
            params.append(p)
    return params


def make(torch, kind, impl, params):
    flags = {} if impl == "default" else {impl: True}
    if kind == "sgd":
        return torch.optim.SGD(params, lr=1e-6, **flags)
    if kind == "momentum":
        return torch.optim.SGD(params, lr=1e-6, momentum=0.9, **flags)
    if kind == "adam":
        return torch.optim.Adam(params, lr=1e-6, **flags)
    return torch.optim.AdamW(params, lr=1e-6, weight_decay=0.01, **flags)


def time_torch(torch, optimizer, warmup, repeats):
    times = []
    for i in range(warmup + repeats):
        start = time.perf_counter()
        optimizer.step()
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1000.0)
    return min(times)


def main():
    a = parse_args()
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    import torch  # after OMP_NUM_THREADS, so its pool starts with that size

    torch.set_num_threads(a.threads)
    params = mlp_parameters(torch, a)
    count = sum(p.numel() for p in params)
    optimizers = {}
    for kind in ("sgd", "momentum", "adam", "adamw"):
        for impl in ("default", "foreach", "fused"):
            try:
                optimizers[(kind, impl)] = make(torch, kind, impl, params)
                optimizers[(kind, impl)].step()  # fused CPU kernels are checked at the first step
            except (RuntimeError, TypeError, ValueError) as error:
                print(f"# torch {torch.__version__}: {kind} {impl} unavailable ({str(error).splitlines()[0]})")
                optimizers.pop((kind, impl), None)
    loom_cmd = [a.loom, "bench", "optimizer", "--json", "--threads", str(a.threads), "--repeats", str(a.repeats),
                "--inputs", str(a.inputs), "--width", str(a.width), "--depth", str(a.depth),
                "--outputs", str(a.outputs)]
    best = {}
    for _ in range(a.rounds):
        for key, optimizer in optimizers.items():
            ms = time_torch(torch, optimizer, 1, a.repeats)
            best[key] = min(best.get(key, ms), ms)
        for row in json.loads(subprocess.run(loom_cmd, check=True, capture_output=True, text=True).stdout):
            key = (row["optimizer"], "loom")
            best[key] = min(best.get(key, row["step_ms"]), row["step_ms"])
    print(f"# {count} parameters, {a.threads} threads, torch {torch.__version__}, best of {a.rounds} rounds x "
          f"{a.repeats} steps")
    impls = ("default", "foreach", "fused", "loom")
    print(f"{'optimizer':<10}" + "".join(f"{('torch ' + i) if i != 'loom' else 'loom':>16}" for i in impls) + " (ms/step)")
    for kind in ("sgd", "momentum", "adam", "adamw"):
        cells = [f"{best[(kind, i)]:16.2f}" if (kind, i) in best else f"{'-':>16}" for i in impls]
        print(f"{kind:<10}" + "".join(cells))


if __name__ == "__main__":
    sys.exit(main())
