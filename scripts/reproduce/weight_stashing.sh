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
#   --quick: 1 epoch, lr 0.05 with momentum 0.9 only
# Environment: EPOCHS (2), SETTINGS ("0.05:0.9 0.03:0.5", lr:momentum pairs),
#   SET (cnn settings, channels=8,hidden=64), BATCH (32), KEEP
set -euo pipefail
source "$(dirname "$0")/common.sh"
repro_init weight_stashing "$@"
epochs=${EPOCHS:-2}
settings=${SETTINGS:-0.05:0.9 0.03:0.5}
if [ "$quick" = 1 ]; then
  epochs=${EPOCHS:-1}
  settings=${SETTINGS:-0.05:0.9}
fi
set_=${SET:-channels=8,hidden=64}
batch=${BATCH:-32}
data_dir=${LOOM_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
[ -f "$data_dir/train-images-idx3-ubyte.gz" ] ||
  { echo "weight_stashing.sh: Fashion-MNIST is missing from $data_dir (set LOOM_FASHION_MNIST_DIR)" >&2; exit 1; }
echo "# cnn $set_, batch $batch, $epochs epochs, pipedream on 4 ranks x 1 thread, SGD lr:momentum $settings"

for setting in $settings; do
  for mode in stashing no-stashing; do
    flags=()
    [ "$mode" = no-stashing ] && flags+=(--no-weight-stashing-experiment)
    echo "# $mode, lr:momentum $setting: load average $(cut -d' ' -f1-3 /proc/loadavg)"
    "${mpi[@]}" -n 4 "$loom" train --model cnn --set "$set_" --data fashion-mnist --stages 4 --schedule pipedream \
      --global-batch "$batch" --epochs "$epochs" --lr "${setting%:*}" --momentum "${setting#*:}" --threads 1 \
      --log-every 1 --quiet --metrics "$work/$mode@$setting.jsonl" "${flags[@]}"
  done
done

"$python" - "$work" "$csv" "$batch" "cnn $set_" $settings <<'EOF'
import sys
import tables

work, out, batch, model, *settings = sys.argv[1:]
rows = []
for setting in settings:
    lr, momentum = setting.split(":")
    for mode in ("stashing", "no-stashing"):
        for r in tables.epoch_curve(f"{work}/{mode}@{setting}.jsonl", int(batch)):
            rows.append({"model": model, "mode": mode, "lr": float(lr), "momentum": float(momentum), **r})
tables.write_csv(out, rows)
print("| weight stashing | lr | momentum | epoch | training s | test accuracy | mean train loss |")
print("|---|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['mode']} | {r['lr']} | {r['momentum']} | {r['epoch']} | {r['elapsed_s']:.1f} "
          f"| {100 * r['test_accuracy']:.2f} % | {r['train_loss']:.4g} |")
final = {(r["mode"], r["lr"], r["momentum"]): r for r in rows}
for (mode, lr, momentum), r in final.items():
    if mode == "stashing":
        other = final[("no-stashing", lr, momentum)]
        print(f"lr {lr}, momentum {momentum}, after {r['epoch']} epochs: {100 * r['test_accuracy']:.2f} % with "
              f"stashing, {100 * other['test_accuracy']:.2f} % without")
EOF
repro_plot weight_stashing
repro_finish
