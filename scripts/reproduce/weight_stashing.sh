#!/usr/bin/env bash
# PipeDream's weight stashing matters: the same asynchronous 1F1B run (`--schedule pipedream`,
# 4 stages, one block of the CNN each, so stage 0 has 4 minibatches in flight and its backwards
# run up to 3 updates after their forwards) with and without stashing. Without it
# (`--no-weight-stashing-experiment`, a mode that exists only for this experiment) every backward
# uses the newest weights, not the ones its forward used, so the gradients are inconsistent.
# How much that hurts grows with the step size, so it runs at two settings of SGD: lr 0.05 with
# momentum 0.9 (effective step lr / (1 - momentum) = 0.5) and lr 0.03 with momentum 0.5 (0.06).
# Plots test accuracy per epoch, against wall-clock and against epochs.
#
# Usage: scripts/reproduce/weight_stashing.sh [LOOM_BINARY] [--quick] [--out DIR]
#   --quick: the 4-block mlp instead of the CNN (~5x faster), 1 epoch, lr 0.05 with momentum 0.9 only
# A run without stashing may diverge; loom train then stops on the non-finite loss, and the CSV
# says at which step (diverged_at_step) instead of giving an accuracy.
# Environment: EPOCHS (2), SETTINGS ("0.05:0.9 0.03:0.5", lr:momentum pairs),
#   SET (cnn settings, channels=8,hidden=64), BATCH (32), KEEP
set -euo pipefail
source "$(dirname "$0")/common.sh"
repro_init weight_stashing "$@"
epochs=${EPOCHS:-2}
settings=${SETTINGS:-0.05:0.9 0.03:0.5}
model=cnn
set_=${SET:-channels=8,hidden=64}
if [ "$quick" = 1 ]; then
  epochs=${EPOCHS:-1}
  settings=${SETTINGS:-0.05:0.9}
  model=mlp
  set_=${SET:-input=784,hidden=256,layers=4,classes=10}
fi
batch=${BATCH:-32}
data_dir=${LOOM_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
[ -f "$data_dir/train-images-idx3-ubyte.gz" ] ||
  { echo "weight_stashing.sh: Fashion-MNIST is missing from $data_dir (set LOOM_FASHION_MNIST_DIR)" >&2; exit 1; }
echo "# $model $set_, batch $batch, $epochs epochs, pipedream on 4 ranks x 1 thread, SGD lr:momentum $settings"

for setting in $settings; do
  for mode in stashing no-stashing; do
    flags=()
    [ "$mode" = no-stashing ] && flags+=(--no-weight-stashing-experiment)
    echo "# $mode, lr:momentum $setting: load average $(cut -d' ' -f1-3 /proc/loadavg)"
    run=$work/$mode@$setting
    if ! "${mpi[@]}" -n 4 "$loom" train --model "$model" --set "$set_" --data fashion-mnist --stages 4 \
      --schedule pipedream --global-batch "$batch" --epochs "$epochs" --lr "${setting%:*}" --momentum "${setting#*:}" \
      --threads 1 --log-every 1 --quiet --metrics "$run.jsonl" "${flags[@]}" 2>"$run.err"; then
      # Without stashing a run may diverge: loom train stops every rank on a non-finite loss.
      grep -q "training diverged" "$run.err" ||
        { cat "$run.err" >&2; echo "weight_stashing.sh: the $mode run failed" >&2; exit 1; }
      touch "$run.diverged"
      echo "# $mode, lr:momentum $setting: diverged: $(grep -m1 'training diverged' "$run.err")"
    fi
  done
done

"$python" - "$work" "$csv" "$batch" "$model $set_" $settings <<'EOF'
import os, sys
import tables

work, out, batch, model, *settings = sys.argv[1:]
rows = []
for setting in settings:
    lr, momentum = setting.split(":")
    for mode in ("stashing", "no-stashing"):
        run = f"{work}/{mode}@{setting}"
        for r in tables.epoch_curve(run + ".jsonl", int(batch), os.path.exists(run + ".diverged")):
            rows.append({"model": model, "mode": mode, "lr": float(lr), "momentum": float(momentum), **r})
tables.write_csv(out, rows)
print("| weight stashing | lr | momentum | epoch | training s | test accuracy | mean train loss |")
print("|---|---:|---:|---:|---:|---:|---:|")
for r in rows:
    accuracy = f"diverged at step {r['diverged_at_step']}" if r["diverged_at_step"] else f"{100 * r['test_accuracy']:.2f} %"
    print(f"| {r['mode']} | {r['lr']} | {r['momentum']} | {r['epoch']} | {r['elapsed_s']:.1f} "
          f"| {accuracy} | {r['train_loss']:.4g} |")
final = {(r["mode"], r["lr"], r["momentum"]): r for r in rows}
describe = lambda r: f"diverged at step {r['diverged_at_step']}" if r["diverged_at_step"] else f"{100 * r['test_accuracy']:.2f} %"
for (mode, lr, momentum), r in final.items():
    if mode == "stashing":
        other = final[("no-stashing", lr, momentum)]
        print(f"lr {lr}, momentum {momentum}: with stashing {describe(r)} after {r['epoch']} epochs, "
              f"without {describe(other)}")
EOF
repro_plot weight_stashing
repro_finish
