"""A distributed run equals the sequential one (the determinism contract of docs/DESIGN.md): per-step
losses of the two metrics files within a relative 1e-5, both with the expected number of steps,
and the final weights (each run's final checkpoint, exported by `loom checkpoint export` to one
safetensors file) the same tensors by name, each within a norm-wise relative 1e-5.
Usage: compare_runs.py LOOM SEQUENTIAL RUN STEPS, where NAME.jsonl is a run's metrics file and
NAME.ckpt its checkpoint directory (--metrics NAME.jsonl --checkpoint NAME.ckpt)."""
import json
import os
import subprocess
import sys
import tempfile

# The layer tests' safetensors reader (plain Python + torch): one parser for the test suite.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "layers", "reference"))
import common  # noqa: E402
import torch  # noqa: E402


def losses(path):
    return [json.loads(line)["loss"] for line in open(path) if '"loss"' in line]


def final_weights(loom, checkpoint, scratch):
    out = os.path.join(scratch, os.path.basename(checkpoint) + ".safetensors")
    subprocess.run([loom, "checkpoint", "export", checkpoint, "--out", out], check=True, stdout=subprocess.DEVNULL)
    return {name: t.to(torch.float64).reshape(-1) for name, t in common.read_safetensors(out).items()}


loom, reference_name, run_name, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
reference, run = losses(reference_name + ".jsonl"), losses(run_name + ".jsonl")
assert len(reference) == steps, f"{reference_name}.jsonl: {len(reference)} steps, expected {steps}"
assert len(run) == steps, f"{run_name}.jsonl: {len(run)} steps, expected {steps}"
for step, (r, g) in enumerate(zip(reference, run), 1):
    error = abs(g - r) / max(abs(r), 1e-30)
    print(f"{run_name} step {step}: loss {g:.9g} vs sequential {r:.9g} (relative error {error:.2e})")
    assert error <= 1e-5, f"{run_name}: training across hosts differs from the sequential run"
with tempfile.TemporaryDirectory() as scratch:
    expected = final_weights(loom, reference_name + ".ckpt", scratch)
    got = final_weights(loom, run_name + ".ckpt", scratch)
assert expected, f"{reference_name}.ckpt: no tensors"
assert sorted(got) == sorted(expected), f"{run_name}: tensors {sorted(got)} against the sequential run's {sorted(expected)}"
worst = 0.0
for name, values in expected.items():
    error = (torch.linalg.norm(got[name] - values) / max(torch.linalg.norm(values).item(), 1e-30)).item()
    worst = max(worst, error)
    assert error <= 1e-5, f"{run_name}: final weight {name} differs from the sequential run's (relative {error:.2e})"
print(f"{run_name}: {len(expected)} final weights equal the sequential run's (largest relative error {worst:.2e})")
