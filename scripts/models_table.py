#!/usr/bin/env python3
"""The paper-size presets as a Markdown table from `loom describe --json` (a meta build: no weights):
parameters, saved activations and forward FLOPs per sample, and the DAPPLE paper's comparison of the
bytes that cross the cheapest stage cut (per micro-batch of the profile's size) with the gradient
bytes that data parallelism allreduces. Usage: scripts/models_table.py [path/to/loom]"""
import json
import subprocess
import sys

loom = sys.argv[1] if len(sys.argv) > 1 else "build/apps/loom"
# preset, micro-batch of the published profile it is compared with (DAPPLE: pbs in the file name)
presets = [("vgg16", 32), ("vgg19", 32), ("resnet50", 32), ("gnmt8", 64), ("gnmt16", 64), ("bert24", 6),
           ("bert48", 2), ("xlnet24", 1), ("xlnet36", 1), ("amoebanet18", 8), ("amoebanet36", 1)]
print("| preset | blocks | parameters | activations / sample | GFLOP fwd / sample | cheapest cut: after block "
      "| boundary bytes / micro-batch (pbs) | gradient bytes | ratio |")
print("|---|---|---|---|---|---|---|---|---|")
for name, pbs in presets:
    run = subprocess.run([loom, "describe", "--model", name, "--json"], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"| {name} | (not available: {run.stderr.strip()[:60]}) |||||||")
        continue
    d = json.loads(run.stdout)
    blocks = d["blocks"]
    # interior cuts only: after block i for i in [1, n-2) (not right after the input embedding)
    cuts = [(b["output_bytes"], b["index"], b["name"]) for b in blocks[1:-2]]
    cut_bytes, cut_index, cut_name = min(cuts)
    grad = d["parameter_bytes"]
    print(f"| {name} | {len(blocks)} | {d['parameters'] / 1e6:.2f} M | {d['activation_bytes'] / 1e6:.1f} MB "
          f"| {d['flops'] / 1e9:.1f} | {cut_index} ({cut_name}) | {cut_bytes * pbs / 1e6:.1f} MB ({pbs}) "
          f"| {grad / 1e9:.2f} GB | {grad / (cut_bytes * pbs):.0f}x |")
