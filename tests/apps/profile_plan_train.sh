#!/usr/bin/env bash
# Round trip of issue 6: `loom profile` measures a small mlp on this machine, `loom plan` plans it
# for a cluster of two devices, and `mpiexec loom train --plan` trains with the best plan and with
# the even GPipe split (a two-stage pipeline), and with the joint planner's plan (issue 29: a
# version-2 plan file of whatever kind it chose, zb-v with uneven chunks on this machine).
# Usage: profile_plan_train.sh LOOM WORKDIR MPIEXEC [MPIEXEC FLAGS...]
set -euo pipefail
loom=$1
work=$2
shift 2
mkdir -p "$work"
cd "$work"
rm -f profile.json best.json gpipe.json joint.json train.log
model=(--model mlp --set input=32,hidden=48,layers=6,classes=10)

"$loom" profile "${model[@]}" --microbatch 8 --also-at 2,4 --threads 1 --repeats 3 --out profile.json
# --also-at: every layer also measured at 2 and 4 samples; an mlp keeps bytes per sample (and the
# loss a few fixed ones), so bytes(8) - bytes(4) = 2 (bytes(4) - bytes(2)) exactly.
/usr/bin/python3 - profile.json <<'EOF'
import json, sys
for layer in json.load(open(sys.argv[1]))["layers"]:
    at = {m["microbatch"]: m for m in layer["measurements"]}
    assert sorted(at) == [2, 4], layer
    kept = {2: at[2]["activation_bytes"], 4: at[4]["activation_bytes"], 8: layer["activation_bytes"]}
    assert kept[8] - kept[4] == 2 * (kept[4] - kept[2]) and kept[2] < kept[4] < kept[8], layer
    assert all(at[size]["forward_ms"] > 0 and at[size]["backward_ms"] > 0 for size in (2, 4)), layer
EOF
cluster='1x2:intra=5GB/s,inter=5GB/s,mem=1GB'
"$loom" plan --profile profile.json --cluster "$cluster" --global-batch 32 --out best.json
# The best plan (whichever planner made it, on as many devices as it uses), and the even GPipe
# split, which is always a two-stage pipeline here.
"$loom" plan --profile profile.json --cluster "$cluster" --global-batch 32 --planner gpipe --out gpipe.json
"$loom" plan --profile profile.json --cluster "$cluster" --global-batch 32 --planner joint --out joint.json
for plan in best.json joint.json gpipe.json; do
  ranks=$(/usr/bin/python3 -c 'import json, sys; print(sum(len(s["ranks"]) for s in json.load(open(sys.argv[1]))["stages"]))' "$plan")
  "$@" -n "$ranks" "$loom" train "${model[@]}" --plan "$plan" --data synthetic --steps 3 --threads 1 | tee train.log
  grep -q "^done: 3 steps" train.log
  if grep -qi "nan" train.log; then
    echo "training with $plan diverged"
    exit 1
  fi
done
grep -q "^loom train: .* 2 stages" train.log || { echo "the GPipe plan is not a two-stage pipeline"; exit 1; }
