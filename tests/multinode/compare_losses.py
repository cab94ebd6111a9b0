"""Per-step losses of a distributed run's metrics file equal the sequential run's within a relative
1e-5 (the determinism contract of docs/DESIGN.md), and both have the expected number of steps.
Usage: compare_losses.py SEQUENTIAL.jsonl RUN.jsonl STEPS"""
import json
import sys


def losses(path):
    return [json.loads(line)["loss"] for line in open(path) if '"loss"' in line]


reference_path, run_path, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
reference, run = losses(reference_path), losses(run_path)
assert len(reference) == steps, f"{reference_path}: {len(reference)} steps, expected {steps}"
assert len(run) == steps, f"{run_path}: {len(run)} steps, expected {steps}"
for step, (r, g) in enumerate(zip(reference, run), 1):
    error = abs(g - r) / max(abs(r), 1e-30)
    print(f"{run_path} step {step}: loss {g:.9g} vs sequential {r:.9g} (relative error {error:.2e})")
    assert error <= 1e-5, f"{run_path}: training across hosts differs from the sequential run"
