#!/usr/bin/env python3
"""loom's analytic V100 profiles (`loom profile --device-model v100`, a roofline from the meta build)
against the published V100 profiles of the DAPPLE repository, and the plans `loom plan` picks from
each (DAPPLE planner, cluster A, the same global batch). Prints Markdown tables.
Usage: scripts/compare_profiles.py [path/to/loom] [profiles dir, default data/profiles/dapple]"""
import json
import os
import re
import subprocess
import sys
import tempfile

loom = sys.argv[1] if len(sys.argv) > 1 else "build/apps/loom"
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
profiles = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "data", "profiles", "dapple")
# preset, published profile, its micro-batch, global batch for the plans, block-name pattern of the
# repeated layer (loom's, the profile's) compared one to one
cases = [("vgg19", "vgg-19-pbs-32.txt", 32, 1024, None, None),
         ("bert48", "bert-48-pbs-2.txt", 2, 128, r"^layer\d+$", r"^layer_\d+$"),
         ("xlnet36", "xlnet-36-pbs-1.txt", 1, 128, r"^layer\d+$", r"^layer_?\d+$"),
         ("gnmt16", "gnmt-16-pbs-64.txt", 64, 1024, None, None),
         ("amoebanet36", "amoeba-36-pbs-1.txt", 1, 128, None, None)]


def published_nodes(path):
    nodes = []
    for line in open(path):
        m = re.match(r"\s*node\d+ -- (.*?) -- forward_compute_time=([0-9.eE+-]+), backward_compute_time=([0-9.eE+-]+)",
                     line)
        if m:
            nodes.append((m.group(1), float(m.group(2)), float(m.group(3))))
    return nodes


def run(*args):
    return subprocess.run([loom, *args], check=True, capture_output=True, text=True).stdout


def dapple_plan(profile):
    d = json.loads(run("plan", "--profile", profile, "--cluster", "A", "--global-batch", str(batch), "--json"))
    p = next(p for p in d["planners"] if p["planner"] == "dapple")
    return f"`{p['strategy']}`, M={p['microbatches']}, {p['speedup']:.1f}x"


print("| preset | pbs | fwd ms: analytic / published | bwd ms: analytic / published | repeated layer fwd, bwd ratio "
      "| DAPPLE plan (cluster A) from the analytic profile | from the published profile |")
print("|---|---|---|---|---|---|---|")
with tempfile.TemporaryDirectory() as tmp:
    for preset, name, pbs, batch, ours_re, theirs_re in cases:
        path = os.path.join(profiles, name)
        if not os.path.exists(path):
            print(f"| {preset} | (no {path}) |||||")
            continue
        out = os.path.join(tmp, preset + ".json")
        run("profile", "--model", preset, "--device-model", "v100", "--microbatch", str(pbs), "--out", out)
        ours = json.load(open(out))["layers"]
        theirs = published_nodes(path)
        f_ours, b_ours = sum(l["forward_ms"] for l in ours), sum(l["backward_ms"] for l in ours)
        f_pub, b_pub = sum(n[1] for n in theirs), sum(n[2] for n in theirs)
        layer = "—"
        if ours_re:
            lo = [l for l in ours if re.match(ours_re, l["name"])]
            lp = [n for n in theirs if re.match(theirs_re, n[0])]
            if lo and lp:
                layer = f"{lo[0]['forward_ms'] / lp[0][1]:.2f}, {lo[0]['backward_ms'] / lp[0][2]:.2f}"
        print(f"| {preset} | {pbs} | {f_ours:.1f} / {f_pub:.1f} ({f_ours / f_pub:.2f}) | {b_ours:.1f} / {b_pub:.1f} "
              f"({b_ours / b_pub:.2f}) | {layer} | {dapple_plan(out)} | {dapple_plan(path)} |")
