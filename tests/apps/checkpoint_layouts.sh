#!/usr/bin/env bash
# Checkpoints across layouts, end to end with the loom executable: a checkpoint written by 4 ranks
# (4 stages x 1, Adam) resumes on one rank (1 x 1) and on two (2 stages, 1 x 2 replicas), and the
# next steps' losses equal an uninterrupted run at that layout within 1e-5 relative (the steps
# before the checkpoint summed their gradients in the writer's order); `loom checkpoint inspect`
# reads the layout and verifies every checksum; `loom checkpoint export` writes every parameter
# once, named by its block (loom describe's names), with whole-JSON metadata, which an independent
# reader (Python, the safetensors format by hand) finds complete; a tied weight (gpt's head) is
# written under both its names.
# Usage: checkpoint_layouts.sh LOOM WORKDIR MPIEXEC [MPIEXEC FLAGS...]
set -euo pipefail
loom=$1
work=$2
shift 2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
python=/usr/bin/python3
model=(--model mlp --set input=16,hidden=24,layers=6,classes=4 --data synthetic --global-batch 16
       --optimizer adam --lr-schedule constant --threads 1 --seed 3)

"$@" -n 4 "$loom" train "${model[@]}" --stages 4 --steps 3 --checkpoint ckpt > write.log
"$loom" checkpoint inspect ckpt > inspect.log
grep -q "written at 4 stage(s), 1 chunk(s) per stage, replicas per stage \[1,1,1,1\]" inspect.log
[ "$(grep -c 'checksums ok' inspect.log)" -eq 4 ] || { cat inspect.log; echo "expected 4 verified stage files"; exit 1; }
"$loom" checkpoint inspect ckpt --tensors > tensors.log
grep -q "optimizer\.0\..*exp_avg" tensors.log

# Losses of steps 4..6 (metrics lines) after the resume, against the uninterrupted run's.
compare() {
  "$python" - "$1" "$2" <<'PY'
import json, sys
resumed = [json.loads(line)["loss"] for line in open(sys.argv[1])]
whole = [json.loads(line)["loss"] for line in open(sys.argv[2])][3:]
assert len(resumed) == 3 and len(whole) == 3, (resumed, whole)
for r, w in zip(resumed, whole):
    assert abs(r - w) <= 1e-5 * abs(w), f"resumed {resumed} but uninterrupted {whole}"
print("losses equal:", resumed)
PY
}
for layout in "1 --stages 1" "2 --stages 2" "2 --stages 1 --replicas 2"; do
  read -r ranks flags <<< "$layout"
  name=$(echo "$flags" | tr -d ' -')
  # shellcheck disable=SC2086
  "$@" -n "$ranks" "$loom" train "${model[@]}" $flags --steps 6 --metrics "whole-$name.json" > "whole-$name.log"
  # shellcheck disable=SC2086
  "$@" -n "$ranks" "$loom" train "${model[@]}" $flags --steps 6 --resume ckpt --metrics "resumed-$name.json" \
    > "resumed-$name.log"
  echo "resumed on $ranks rank(s), $flags:"
  compare "resumed-$name.json" "whole-$name.json"
done

"$loom" checkpoint export ckpt --out model.safetensors
expected=$("$loom" describe --model mlp --set input=16,hidden=24,layers=6,classes=4 | sed -n 's/^total: \([0-9]*\) parameters.*/\1/p')
# A tied model: gpt's head weight is the word embedding's, held once by the checkpoint.
"$loom" train --model gpt --size tiny --steps 1 --threads 1 --checkpoint ckpt-gpt > gpt.log
"$loom" checkpoint export ckpt-gpt --out gpt.safetensors > gpt-export.log
"$python" - model.safetensors "$expected" gpt.safetensors <<'PY'
import json, struct, sys
def read(path):
    with open(path, "rb") as f:
        length = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(length))
        return header, f.read()
header, _ = read(sys.argv[1])
meta = header.pop("__metadata__")
values = 0
for name, entry in header.items():
    assert not name.startswith("optimizer."), name
    assert name.split(".")[0] in ("hidden0", "hidden1", "hidden2", "hidden3", "hidden4", "classifier"), \
        f"{name}: not named by its block as loom describe names it"
    count = 1
    for d in entry["shape"]:
        count *= d
    values += count
assert values == int(sys.argv[2]), f"exported {values} values, the model has {sys.argv[2]} parameters"
settings = json.loads(meta["loom.settings"])  # whole JSON, every setting
assert settings == {"input": 16, "hidden": 24, "layers": 6, "classes": 4}, settings
assert meta["loom.model"] == "mlp" and json.loads(meta["loom.ties"]) == [], meta
print(f"exported {len(header)} tensors, {values} values: every parameter once, by block name; metadata {meta}")
header, data = read(sys.argv[3])
meta = header.pop("__metadata__")
ties = json.loads(meta["loom.ties"])
assert len(ties) == 1, ties
canonical, copy = header[ties[0]["canonical"]], header[ties[0]["copy"]]
assert ties[0]["copy"].startswith("head.") and ties[0]["canonical"].startswith("embedding."), ties
assert canonical["shape"] == copy["shape"], (canonical, copy)
span = lambda e: data[e["data_offsets"][0]:e["data_offsets"][1]]
assert span(canonical) == span(copy), "the tied head weight differs from the embedding"
assert json.loads(meta["loom.settings"])["vocab"] == 256, meta
print(f"gpt: the tie {ties[0]} written under both names, equal")
PY
