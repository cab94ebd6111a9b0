#!/usr/bin/env python3
"""Parameter counts of loom's vgg16/vgg19/resnet50 presets at paper size (`loom describe --json`,
a meta build) against torchvision's models built here. Exit 77 (skipped) without torchvision."""
import json
import subprocess
import sys

try:
    import torchvision.models as tv
except ImportError:
    print("torchvision is not installed: skipped")
    sys.exit(77)

loom = sys.argv[1]
failed = False
for name, build in [("vgg16", tv.vgg16), ("vgg19", tv.vgg19), ("resnet50", tv.resnet50)]:
    reference = sum(p.numel() for p in build().parameters())
    out = subprocess.run([loom, "describe", "--model", name, "--json"], check=True, capture_output=True, text=True)
    ours = json.loads(out.stdout)["parameters"]
    print(f"{name}: loom {ours}, torchvision {reference}")
    failed |= ours != reference
sys.exit(1 if failed else 0)
