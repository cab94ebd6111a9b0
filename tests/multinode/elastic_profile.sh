#!/usr/bin/env bash
# The profile the elastic tests plan from: the test model (mlp, 8 blocks of width 64) as the
# roofline estimate of an H100 with every block 1000 times slower, so that `loom plan` spreads it
# over every device with stages and replicas; an estimate, not a measurement, so the plans are the
# same on every run. Usage: elastic_profile.sh LOOM OUT.json
set -euo pipefail
loom=$1 out=$2
"$loom" profile --model mlp --set input=16,hidden=64,layers=8,classes=4 --microbatch 2 --device-model h100 \
  --out "$out.h100" > /dev/null
python3 - "$out.h100" "$out" <<'PY'
import json, sys
profile = json.load(open(sys.argv[1]))
for layer in profile["layers"]:
    layer["forward_ms"] *= 1000
    layer["backward_ms"] *= 1000
json.dump(profile, open(sys.argv[2], "w"), indent=1)
PY
rm -f "$out.h100"
