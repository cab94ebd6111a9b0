#!/usr/bin/env bash
# shellcheck disable=SC2317  # the steps are functions that `step` runs through bash -c
# Everything loom checks on a GPU machine, in one run (issue 11, "On a GPU"), logs under OUT_DIR.
# Made for the device tool: prepared on a machine without a GPU, so that a session lent one runs
# it once, reads OUT_DIR, fixes, reruns once. Each step has its own time limit and its own log; a
# failing step does not stop the next; OUT_DIR/summary.txt has one line per step and the script
# exits non-zero if any step failed.
#
# Usage: scripts/gpu_check.sh OUT_DIR [BUILD_DIR]     (BUILD_DIR default build-gpu/, reused if there)
#   e.g. through the device tool:  scripts/gpu_check.sh "$OUT"
# GPU_CHECK_BUDGET_S (default 540) bounds the whole run, so that it ends inside one device-tool
# command (600 s at most) with every log written: each step's limit is cut to what is left, and
# the steps that find nothing left are listed as "not run (budget)". The steps run in order of
# what they decide (correctness first, then the figures).
#
# Steps, in the order they run (their sum of limits exceeds the budget: a fresh build on the
# 16-core H200 machine is expected to take 3-5 minutes, the rest is unmeasured):
#   machine     nvidia-smi, nvcc and driver versions
#   build       CUDA build (sm_90 + PTX by default; CUDAARCHS overrides), loom and the gpu tests
#   gpu-tests   every ctest with label gpu: the CUDA runtime, every layer's CUDA forward/backward
#               against the CPU (fp32, 1e-4 relative), NCCL between 2 ranks where 2 GPUs exist, the
#               Trainer on --device cuda against the CPU within 1e-4 for 10 steps (2 ranks sharing
#               the device: the host-staged path), and the same in bf16 and fp16 within 1e-2
#   train       `loom train --device cuda` of the gpt preset at tiny size against `--device cpu`,
#               and the same pipelined over 2 ranks sharing the GPU (host-staged), per-step losses;
#               with 2+ GPUs also 2 stages with --boundary-backend nccl (NCCL send/receive)
#   gemm        `loom bench gemm --device cuda`, f32 and bf16: loom's GEMM against cuBLAS called
#               directly on the same buffers (target >= 0.95x at sizes >= 2048) and the % of the
#               device's peak (bf16 target >= 60% of the H200's dense 989 TFLOP/s)
#   gpt-torch   the gpt preset at GPT-2 small's width (dim 768, 12 heads, 12 layers, seq 256) trained
#               by `loom train --device cuda` and by the same model in PyTorch eager on the GPU, same
#               batch, optimizer and precision (fp32, then bf16): samples/s and tokens/s of each
#               (scripts/bench_presets_seq.py; the parameter counts must agree)
#   layers      `loom bench layers --device cuda`: every row's forward+backward on the GPU against the
#               same PyTorch module on cuda:0 (python3 on PATH, which must have torch with CUDA)
#   profile     `loom profile --device cuda` of the gpt preset: the same bytes per block as on the
#               CPU (the device's ledger), and the per-block times
#   gpt-speed   `loom train --device cuda` samples/s of the gpt preset at cpu size (a figure only)
# Where more than one GPU is visible, the gpu tests and `train` also reduce gradients and cross
# stage boundaries over NCCL (--reduce-backend / --boundary-backend auto take NCCL where every rank
# of the group has its own GPU); on one GPU, ranks share it and stay host-staged. bf16 training
# runs its GEMMs on tensor cores (ops::GemmOperandScope: bf16 x bf16 -> f32) with f32 storage, fp16
# the same with f16 operands and dynamic loss scaling.
set -uo pipefail
out=${1:?usage: scripts/gpu_check.sh OUT_DIR [BUILD_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-$root/build-gpu}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
summary="$out/summary.txt"
: >"$summary"
failed=0

budget=${GPU_CHECK_BUDGET_S:-540}

# step NAME SECONDS COMMAND...: runs COMMAND with a time limit (cut to the budget left), its output
# in OUT_DIR/NAME.log.
step() {
  local name=$1 limit=$2; shift 2
  local start=$SECONDS left=$((budget - SECONDS))
  if ((left < 10)); then
    printf '%-10s %-22s %4d s\n' "$name" "not run (budget)" 0 | tee -a "$summary"
    failed=1
    return
  fi
  ((limit > left)) && limit=$left
  timeout "$limit" bash -c '"$@"' "$name" "$@" >"$out/$name.log" 2>&1  # bash -c: steps are functions
  local rc=$?
  local verdict=ok
  [ "$rc" = 77 ] && verdict=skipped
  [ "$rc" != 0 ] && [ "$rc" != 77 ] && { verdict="FAILED (rc $rc)"; failed=1; }
  [ "$rc" = 124 ] && verdict="FAILED (over ${limit} s)"
  printf '%-10s %-22s %4d s  %s\n' "$name" "$verdict" $((SECONDS - start)) "$out/$name.log" | tee -a "$summary"
}

machine() {
  date -u
  nvidia-smi || return 1
  nvcc --version || /usr/local/cuda/bin/nvcc --version
  cmake --version | head -1
  nproc
}

build_loom() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLOOM_CUDA=ON -DLOOM_NATIVE=ON || return 1
  cmake --build "$build" -j"$(nproc)"
}

# The per-step losses of two metrics files agree within a relative tolerance.
compare_losses() {
  python3 - "$@" <<'EOF'
import json, sys
a, b, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
la = [json.loads(l)["loss"] for l in open(a) if l.strip()]
lb = [json.loads(l)["loss"] for l in open(b) if l.strip()]
assert la and len(la) == len(lb), f"{len(la)} vs {len(lb)} steps"
worst = max(abs(x - y) / max(abs(y), 1e-30) for x, y in zip(la, lb))
print(f"{len(la)} steps, largest relative loss difference {worst:.3g} (tolerance {tol})")
sys.exit(0 if worst <= tol else 1)
EOF
}

train_on_gpu() {
  local loom="$build/apps/loom" common=(--model gpt --size tiny --data synthetic --steps 10 --quiet)
  "$loom" train "${common[@]}" --device cpu --metrics "$out/train-cpu.jsonl" || return 1
  "$loom" train "${common[@]}" --device cuda --metrics "$out/train-cuda.jsonl" || return 1
  compare_losses "$out/train-cuda.jsonl" "$out/train-cpu.jsonl" 1e-4 || return 1
  # 2 stages: on one GPU both ranks share it (host-staged boundary); on two or more, each rank has
  # its own and the boundary goes over NCCL send/receive (the log line says which).
  mpiexec --oversubscribe -n 2 "$loom" train "${common[@]}" --stages 2 --device cuda \
    --metrics "$out/train-cuda-2stages.jsonl" 2>&1 | tee "$out/train-cuda-2stages.log" || return 1
  compare_losses "$out/train-cuda-2stages.jsonl" "$out/train-cpu.jsonl" 1e-4 || return 1
  if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
    mpiexec -n 2 "$loom" train "${common[@]}" --stages 2 --device cuda --boundary-backend nccl \
      --metrics "$out/train-cuda-2stages-nccl.jsonl" || return 1
    compare_losses "$out/train-cuda-2stages-nccl.jsonl" "$out/train-cpu.jsonl" 1e-4 || return 1
  fi
}

gpt_speed() {
  "$build/apps/loom" train --model gpt --size cpu --data synthetic --steps 30 --device cuda \
    --metrics "$out/gpt-speed.jsonl"
}

# The bytes of every block agree between two profiles (times are only printed).
profile_on_gpu() {
  local loom="$build/apps/loom" common=(--model gpt --size cpu --microbatch 8 --repeats 5)
  "$loom" profile "${common[@]}" --device cpu --out "$out/profile-cpu.json" || return 1
  "$loom" profile "${common[@]}" --device cuda --out "$out/profile-cuda.json" || return 1
  python3 - "$out/profile-cuda.json" "$out/profile-cpu.json" <<'EOF'
import json, sys
a, b = (json.load(open(p))["layers"] for p in sys.argv[1:3])
keys = ("activation_bytes", "boundary_bytes", "parameter_bytes")
bad = [(x["name"], k) for x, y in zip(a, b) for k in keys if x.get(k) != y.get(k)]
print(f"{len(a)} blocks; bytes that differ from the CPU's: {bad or 'none'}")
sys.exit(0 if len(a) == len(b) and not bad else 1)
EOF
}

gemm_on_gpu() {
  "$build/apps/loom" bench gemm --device cuda --dtype f32 || return 1
  "$build/apps/loom" bench gemm --device cuda --dtype bf16
}

layers_on_gpu() {
  "$build/apps/loom" bench layers --device cuda --python "$(command -v python3)" --repeats 5 --json \
    >"$out/bench-layers-cuda.json" || return 1
  cat "$out/bench-layers-cuda.json"
}

# loom against PyTorch eager on the GPU; GPT_TORCH_SET overrides the model (smaller for a quick look).
gpt_vs_torch() {
  local precision
  for precision in fp32 bf16; do
    python3 "$root/scripts/bench_presets_seq.py" "$build/apps/loom" --presets gpt --device cuda \
      --precision "$precision" --set "${GPT_TORCH_SET:-dim=768,heads=12,layers=12,seq=256,dropout=0}" \
      --global-batch 32 --microbatches 1 --steps 20 --warmup 5 --repeats 1 --threads 8 \
      --out "$out/gpt-torch-$precision" || return 1
  done
}

export out root build
export -f machine build_loom compare_losses train_on_gpu gpt_speed profile_on_gpu gemm_on_gpu layers_on_gpu gpt_vs_torch
step machine 60 machine
step build 420 build_loom
step gpu-tests 240 ctest --test-dir "$build" -L gpu --output-on-failure
step train 180 train_on_gpu
step gemm 90 gemm_on_gpu
step gpt-torch 180 gpt_vs_torch
step layers 120 layers_on_gpu
step profile 120 profile_on_gpu
step gpt-speed 120 gpt_speed
echo "summary: $summary"
exit "$failed"
