#!/usr/bin/env bash
# shellcheck disable=SC2317  # the steps are functions that `step` runs through bash -c
# Everything loom checks on a GPU machine, in one run (issues 11 and 33), logs under OUT_DIR.
# Made for the device tool: prepared on a machine without a GPU, so that a session lent one runs
# it once, reads OUT_DIR, fixes, reruns once. Each step has its own time limit and its own log; a
# failing step does not stop the next; OUT_DIR/summary.txt has one line per step and, under it,
# every figure the step printed (its lines starting "figure: "); the script exits non-zero if any
# step failed.
#
# Usage: scripts/gpu_check.sh [--dry-run] OUT_DIR [BUILD_DIR]
#   e.g. through the device tool:  scripts/gpu_check.sh "$OUT"      (timeout_s 400)
#   --dry-run: walks every step and prints "would run: ..." for each, touching no GPU, build or
#     nvidia-smi (exit 0 on any machine); the summary lists the steps as "dry run".
#   GPU_CHECK_STEPS=gemm,gpt-torch: run only these steps (machine and setup always run: a rerun
#     lands on a bare machine); an unknown name is an error listing the steps.
#   GPU_CHECK_BUDGET_S (default 330) bounds the whole run: each step's limit is cut to what is
#     left, and steps that find nothing left are listed as "not run (budget)".
#
# The budget. The device tool lends 15 minutes of device time in all, each machine start (1-2
# minutes) included, and gives the machine back soon after a call, so the rerun gets a bare
# machine and no build survives: start + run + start + rerun = 2 x 90 s + 2 x 330 s = 14 minutes.
# The step limits below add up to the 330 s.
#
# Carry binaries, not sources. The image (issue 33) has nvcc, CMake, ninja and PyTorch's wheels
# but none of Open MPI, Eigen, OpenBLAS, spdlog, CLI11, nlohmann-json or Catch2. Building there
# would mean carrying those as unpacked .deb contents (about 23 MB of .deb files; Open MPI then
# needs relocating just the same) and spending 3-5 minutes of the 330 s compiling, once per call.
# A bundle built here costs no device time: scripts/gpu_bundle.sh builds loom and every gpu test
# with LOOM_NATIVE=OFF and LOOM_ONEDNN=OFF (the host CPU is unknown; OpenBLAS plus oneDNN alone
# would be 76 MB) and packs them with Open MPI (launcher, components, help texts, relocated by
# OPAL_PREFIX) and every library ldd resolves that the image lacks (scripts/gpu_image_libs.txt)
# into loom-gpu-bundle.tar.xz; scripts/gpu_carry_size.sh fails it over 60 MiB together with the
# working tree; scripts/gpu_bundle_proof.sh runs it in a chroot holding only the image's
# libraries (every ELF resolves; `mpiexec -n 2` of a CPU test passes; the NCCL test skips).
# cuDNN and NCCL come from the image's wheels (site-packages/nvidia/*/lib, found from python3).
# The bundle carries neither glibc nor libstdc++: built on Debian 12 it needs glibc 2.36 (Debian's
# libevent calls arc4random) and GLIBCXX_3.4.30 (GCC 12), i.e. an image of Ubuntu 24.04 or newer
# (a Python 3.12 venv suggests it); the setup step checks both (the bundle's requires.txt) and
# fails with a one-line reason on an older image (then build the bundle on that older system).
# Without a bundle (GPU_CHECK_BUNDLE, default ./loom-gpu-bundle.tar.xz), the setup step builds
# from sources, which needs those libraries on the machine (a developer's GPU box).
# Prepare and run:
#   scripts/gpu_bundle.sh --configure build-bundle && scripts/gpu_bundle.sh build-bundle .
#   scripts/gpu_bundle_proof.sh loom-gpu-bundle.tar.xz          # here, as root: no GPU needed
#   run(command='scripts/gpu_check.sh "$OUT"', carry=['loom-gpu-bundle.tar.xz'], timeout_s=400)
#
# Steps, in the order they run (correctness, then the headline figures, then the rest), limits:
#   machine     10  nvidia-smi, nvcc and driver versions
#   setup       30  unpack the bundle (or build from sources, limit 300)
#   gpu-tests   90  every gpu test: the CUDA runtime, every layer's CUDA forward/backward against
#               the CPU, NCCL on one rank (comm_nccl_test_np1: allreduce, reduce-scatter, all-gather,
#               send+receive to itself), NCCL between 2 ranks where 2 GPUs exist, the Trainer on
#               --device cuda against the CPU (fp32 1e-4; bf16, fp16 1e-2); each test at most
#               GPU_TEST_TIMEOUT_S (60) with the watchdog at 30 s, so one hang costs one test
#   train       40  `loom train --device cuda` of gpt tiny against `--device cpu` (figure: the
#               largest relative loss difference), and 2 stages over 2 ranks sharing the GPU
#   gemm        25  `loom bench gemm --device cuda`, f32 and bf16, against cuBLAS on the same buffers
#   gpt-torch   75  gpt at GPT-2 small's width (dim 768, 12 heads, 12 layers, seq 256) by loom and
#               by PyTorch eager on the GPU, fp32 then bf16: samples/s of each and their ratio
#   layers      25  `loom bench layers --device cuda` against PyTorch on cuda:0
#   profile     20  `loom profile --device cuda`: the CPU's bytes per block, and the times
#   gpt-speed   15  `loom train --device cuda` samples/s of gpt at cpu size
set -uo pipefail
dry_run=0
[ "${1:-}" = --dry-run ] && { dry_run=1; shift; }
out=${1:?usage: scripts/gpu_check.sh [--dry-run] OUT_DIR [BUILD_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-$root/build-gpu}
bundle_archive=${GPU_CHECK_BUNDLE:-$root/loom-gpu-bundle.tar.xz}
bundle=/tmp/loom-gpu-bundle
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
summary="$out/summary.txt"
: >"$summary"
failed=0
budget=${GPU_CHECK_BUDGET_S:-330}
all_steps=(machine setup gpu-tests train gemm gpt-torch layers profile gpt-speed)
wanted=",machine,setup,${GPU_CHECK_STEPS:-$(IFS=,; echo "${all_steps[*]}")},"
steps_text=${GPU_CHECK_STEPS:-}
for name in ${steps_text//,/ }; do
  [[ " ${all_steps[*]} " == *" $name "* ]] || { echo "gpu_check: unknown step '$name' in GPU_CHECK_STEPS (steps: ${all_steps[*]})" >&2; exit 2; }
done

# step NAME SECONDS COMMAND...: runs COMMAND (pipefail on) with a time limit cut to the budget left,
# its output in OUT_DIR/NAME.log; the verdict and the log's "figure: " lines go to the summary.
step() {
  local name=$1 limit=$2; shift 2
  local start=$SECONDS left=$((budget - SECONDS))
  if [[ "$wanted" != *",$name,"* ]]; then
    printf '%-10s %-22s\n' "$name" "not run (GPU_CHECK_STEPS)" | tee -a "$summary"; return
  fi
  if ((dry_run)); then
    echo "would run: $name (limit $limit s): ${step_text[$1]:-$*}"
    printf '%-10s %-22s %4d s  %s\n' "$name" "dry run" "$limit" "$*" >>"$summary"; return
  fi
  if ((left < 5)); then
    printf '%-10s %-22s %4d s\n' "$name" "not run (budget)" 0 | tee -a "$summary"; failed=1; return
  fi
  ((limit > left)) && limit=$left
  timeout "$limit" bash -o pipefail -c '"$@"' "$name" "$@" >"$out/$name.log" 2>&1  # bash -c: steps are functions
  local rc=$?
  local verdict=ok
  [ "$rc" = 77 ] && verdict=skipped
  [ "$rc" != 0 ] && [ "$rc" != 77 ] && { verdict="FAILED (rc $rc)"; failed=1; }
  [ "$rc" = 124 ] && verdict="FAILED (over ${limit} s)"
  printf '%-10s %-22s %4d s  %s\n' "$name" "$verdict" $((SECONDS - start)) "$out/$name.log" | tee -a "$summary"
  grep '^figure: ' "$out/$name.log" | sed 's/^/           /' | tee -a "$summary"
}

source "$root/scripts/gpu_check_steps.sh"

if ((dry_run)) || [ ! -f "$bundle_archive" ]; then setup_limit=300; else setup_limit=30; fi
((dry_run)) && echo "gpu_check: dry run; bundle ${bundle_archive} ($([ -f "$bundle_archive" ] && echo present || echo "absent: setup would build in $build"))"
step machine 10 machine
if [ -f "$bundle_archive" ]; then step setup "$setup_limit" unpack_bundle; else step setup "$setup_limit" build_loom; fi
((dry_run)) || use_binaries
step gpu-tests 90 gpu_tests
step train 40 train_on_gpu
step gemm 25 gemm_on_gpu
step gpt-torch 75 gpt_vs_torch
step layers 25 layers_on_gpu
step profile 20 profile_on_gpu
step gpt-speed 15 gpt_speed
echo "summary: $summary"
((dry_run)) && exit 0
exit "$failed"
