#!/usr/bin/env bash
# PipeDream's headline: pipelining reaches a target accuracy sooner than synchronous data
# parallelism (BSP) when communication matters. Two ranks train the same small VGG-style CNN
# (`--model cnn`: conv-pool, conv-pool, a wide fc, classifier; with --quick the 4-block `mlp`,
# which is ~10x cheaper) on Fashion-MNIST with the same global batch, learning rate and epochs, as
#   bsp            data parallelism: 1 stage x 2 replicas, ring allreduce of all gradients per step
#   dapple         2 stages, synchronous 1F1B over M micro-batches (the same updates as bsp)
#   pipedream      2 stages, asynchronous 1F1B with weight stashing (PipeDream)
#   pipedream-2bw  2 stages, double-buffered weights (PipeDream-2BW), M micro-batches per update
# Each rank is its own "node" (--ranks-per-node 1) and loom's transfers between them are shaped to
# a slow link (--shape-inter-gbps, comm/link_shaper.h: a transfer occupies the sender's link for
# bytes / bandwidth), so the allreduce of all gradients every step (1.6 MB for the CNN, 1.3 MB for
# the mlp) costs far more than the activations and gradients a 2-stage pipeline moves per step
# (50 KB each way for the CNN at batch 32, 128 KB for the mlp at 128). Wall-clock time is the
# training time from the metrics file (see tables.epoch_curve). Each step's training loss per
# method goes to DIR/time_to_accuracy_steps.csv (step, then one column per method), where
# tests/reproduce/check_csv.py compares bsp's and dapple's step by step.
#
# Usage: scripts/reproduce/time_to_accuracy.sh [LOOM_BINARY] [--quick] [--out DIR]
#   --quick: the mlp, 1 epoch of bsp, dapple and pipedream
# Environment: EPOCHS (2), TARGET (test accuracy, 0.87: what all four reach in 2 epochs; 0.75 with --quick), LINK_GBPS (0.05),
#   MODEL and SET (cnn with channels=8,hidden=512; mlp with its defaults under --quick),
#   BATCH (32; 128 with --quick), LR (0.03), MOMENTUM (0.5), KEEP
set -euo pipefail
source "$(dirname "$0")/common.sh"
repro_init time_to_accuracy "$@"
epochs=${EPOCHS:-2}
target=${TARGET:-0.87}
methods="bsp dapple pipedream pipedream-2bw"
model=${MODEL:-cnn}
set_=${SET:-channels=8,hidden=512}
batch=${BATCH:-32}
if [ "$quick" = 1 ]; then
  epochs=${EPOCHS:-1}
  target=${TARGET:-0.75}
  methods="bsp dapple pipedream"
  model=${MODEL:-mlp}
  set_=${SET:-input=784,hidden=256,layers=4,classes=10}
  batch=${BATCH:-128}
fi
link=${LINK_GBPS:-0.05}
data_dir=${LOOM_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
[ -f "$data_dir/train-images-idx3-ubyte.gz" ] ||
  { echo "time_to_accuracy.sh: Fashion-MNIST is missing from $data_dir (set LOOM_FASHION_MNIST_DIR)" >&2; exit 1; }
echo "# $model $set_, batch $batch, lr ${LR:-0.03}, momentum ${MOMENTUM:-0.5}, $epochs epochs, 2 ranks x 1 thread," \
  "link between them shaped to $link GB/s; target test accuracy $target"

for method in $methods; do
  case $method in
    bsp) layout=(--stages 1 --replicas 2 --microbatches 1) ;;
    dapple) layout=(--stages 2 --schedule dapple --microbatches 4) ;;
    pipedream) layout=(--stages 2 --schedule pipedream) ;;
    pipedream-2bw) layout=(--stages 2 --schedule pipedream-2bw --microbatches 4) ;;
  esac
  echo "# $method: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  "${mpi[@]}" -n 2 "$loom" train --model "$model" --set "$set_" --data fashion-mnist "${layout[@]}" \
    --global-batch "$batch" --epochs "$epochs" --lr "${LR:-0.03}" --momentum "${MOMENTUM:-0.5}" --threads 1 \
    --ranks-per-node 1 --allreduce ring --shape-inter-gbps "$link" --log-every 1 --quiet \
    --metrics "$work/$method.jsonl"
done

"$python" - "$work" "$csv" "$out/time_to_accuracy_steps.csv" "$batch" "$target" "$model $set_" $methods <<'EOF'
import json, sys
import tables

work, out, steps_out, batch, target, model, *methods = sys.argv[1:]
batch, target = int(batch), float(target)
rows = []
for method in methods:
    for r in tables.epoch_curve(f"{work}/{method}.jsonl", batch):
        rows.append({"model": model, "method": method, **r, "target_accuracy": target})
tables.write_csv(out, rows)
losses = {m: {r["step"]: r["loss"] for r in map(json.loads, open(f"{work}/{m}.jsonl")) if "step" in r} for m in methods}
tables.write_csv(steps_out, [{"step": step, **{m: losses[m].get(step, "") for m in methods}}
                             for step in sorted(set().union(*losses.values()))], ["step", *methods])

def time_to_target(method):
    reached = [r for r in rows if r["method"] == method and r["test_accuracy"] >= target]
    return (reached[0]["epoch"], reached[0]["elapsed_s"]) if reached else (None, None)

print("| method | epoch | training s | test accuracy | mean train loss |")
print("|---|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['method']} | {r['epoch']} | {r['elapsed_s']:.1f} | {100 * r['test_accuracy']:.2f} % | {r['train_loss']:.4f} |")
print(f"\ntime to {100 * target:.0f} % test accuracy:")
_, bsp_s = time_to_target("bsp")
for method in methods:
    epoch, seconds = time_to_target(method)
    if seconds is None:
        print(f"  {method}: not reached")
    else:
        speedup = f", {bsp_s / seconds:.2f}x faster than bsp" if bsp_s else ""
        print(f"  {method}: epoch {epoch}, {seconds:.1f} s{speedup}")
EOF
repro_plot time_to_accuracy
repro_finish
