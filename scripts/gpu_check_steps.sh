# shellcheck shell=bash disable=SC2317
# The steps of scripts/gpu_check.sh (sourced by it; see its header). Each runs in its own
# `bash -o pipefail -c` with a time limit; a line "figure: ..." in a step's output is copied to the
# summary. They read $out, $root, $build, $bundle and, after the setup step, $loom.

# What each step runs, in words (printed by --dry-run).
# shellcheck disable=SC2034  # read by scripts/gpu_check.sh
declare -A step_text=(
  [machine]="nvidia-smi; nvcc --version; cmake --version; nproc"
  [unpack_bundle]="tar -xJf \$GPU_CHECK_BUNDLE into $bundle; source env.sh (Open MPI, libraries); loom --version"
  [build_loom]="cmake -DLOOM_CUDA=ON -DLOOM_ONEDNN=OFF; cmake --build --target loom and every gpu test"
  [gpu_tests]="every test labelled gpu (the bundle's tests.json, or ctest -L gpu)"
  [train_on_gpu]="loom train gpt tiny --device cuda vs --device cpu (1e-4); mpiexec -n 2 ... --stages 2 --device cuda"
  [gemm_on_gpu]="loom bench gemm --device cuda --dtype f32, then bf16 (against cuBLAS)"
  [gpt_vs_torch]="scripts/bench_presets_seq.py --presets gpt --device cuda --precision fp32, then bf16 (against PyTorch eager)"
  [layers_on_gpu]="loom bench layers --device cuda --json (against PyTorch on cuda:0)"
  [profile_on_gpu]="loom profile gpt --device cpu and --device cuda: bytes per block must agree"
  [gpt_speed]="loom train gpt cpu-size --device cuda --steps 20: samples/s"
)

machine() {
  date -u
  nvidia-smi || return 1
  nvcc --version || /usr/local/cuda/bin/nvcc --version
  cmake --version | head -1
  nproc
  echo "figure: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
}

build_loom() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLOOM_CUDA=ON -DLOOM_NATIVE=ON -DLOOM_ONEDNN=OFF || return 1
  local tests
  tests=$(ctest --test-dir "$build" -L gpu --show-only=json-v1 | python3 -c '
import json, os, sys
print(" ".join(sorted({os.path.basename(w) for t in json.load(sys.stdin)["tests"] for w in t.get("command", []) if "/tests/" in w})))')
  # shellcheck disable=SC2086  # one target a word
  cmake --build "$build" -j"$(nproc)" --target loom $tests
}

# The image's glibc and libstdc++ are at least what the bundle was built against (requires.txt).
check_requirements() {
  local glibc glibcxx have_glibc stdcxx
  glibc=$(awk '$1 == "glibc" { print $2 }' "$bundle/requires.txt")
  glibcxx=$(awk '$1 == "glibcxx" { print $2 }' "$bundle/requires.txt")
  have_glibc=$(getconf GNU_LIBC_VERSION | awk '{ print $2 }')
  if [ "$(printf '%s\n' "$glibc" "$have_glibc" | sort -V | head -1)" != "$glibc" ]; then
    echo "gpu_check: the bundle needs glibc $glibc, this machine has $have_glibc: build the bundle on a system no newer than the image"
    return 1
  fi
  stdcxx=$(ldconfig -p | awk '/libstdc\+\+\.so\.6 .*x86-64/ { print $NF; exit }')
  if [ -n "$glibcxx" ] && { [ -z "$stdcxx" ] || ! grep -qa "GLIBCXX_$glibcxx" "$stdcxx"; }; then
    echo "gpu_check: the bundle needs libstdc++ with GLIBCXX_$glibcxx, which the libstdc++ found (${stdcxx:-none}) lacks"
    return 1
  fi
  echo "figure: glibc $have_glibc (bundle needs $glibc), libstdc++ has GLIBCXX_$glibcxx"
}

unpack_bundle() {
  rm -rf "$bundle" && mkdir -p "$bundle" && tar -C "$bundle" -xJf "$bundle_archive" || return 1
  echo "figure: bundle $(du -sh "$bundle_archive" | cut -f1) packed, $(du -sh "$bundle" | cut -f1) unpacked"
  check_requirements || return 1
  # shellcheck disable=SC1091  # made by scripts/gpu_bundle.sh
  source "$bundle/env.sh" || return 1
  # Every executable loads (a library the image lacks would show here first).
  ! ldd "$bundle"/bin/* | grep 'not found' && "$bundle/bin/loom" --help >/dev/null
}

# The folders of NVIDIA's pip wheels that hold libraries (cuDNN, NCCL, cuBLAS), ':'-joined.
wheel_library_path() {
  python3 - 2>/dev/null <<'EOF'
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit
print(":".join(d for p in nvidia.__path__ for d in sorted(glob.glob(os.path.join(p, "*", "lib"))) if os.path.isdir(d)))
EOF
}

# In this shell (not a step): the loom to run, the bundle's environment and the wheels' libraries;
# the gpu tests name files by the source folder they were built in, so that path must exist.
use_binaries() {
  loom="$build/apps/loom"
  if [ -f "$bundle/env.sh" ]; then
    # shellcheck disable=SC1091  # made by scripts/gpu_bundle.sh
    source "$bundle/env.sh"
    loom="$bundle/bin/loom"
    local source_dir
    source_dir=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["source_dir"])' "$bundle/tests.json")
    [ -e "$source_dir" ] || { mkdir -p "$(dirname "$source_dir")" && ln -s "$root" "$source_dir"; }
  fi
  local wheels
  wheels=$(wheel_library_path)
  [ -n "$wheels" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$wheels"
  export loom
}

# Every gpu test: from the bundle's tests.json, or through ctest in a build.
gpu_tests() {
  [ -f "$bundle/tests.json" ] || { ctest --test-dir "$build" -L gpu --output-on-failure; return; }
  python3 - "$bundle" <<'EOF'
import json, os, signal, subprocess, sys
bundle = sys.argv[1]
counts = {"passed": 0, "skipped": 0, "failed": 0}
# A hang in one test must not take the others' time: the watchdog ends a stuck NCCL or MPI wait
# after 30 s with its message, and a test still running after 60 s is killed with its ranks.
limit = float(os.environ.get("GPU_TEST_TIMEOUT_S", "60"))


def run_test(command, env):
    child = subprocess.Popen(command, cwd=bundle, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, start_new_session=True)
    try:
        output = child.communicate(timeout=limit)[0]
        return child.returncode, output
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGTERM)  # mpiexec ends the ranks it started
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
        return f"killed after {limit:.0f} s", child.communicate()[0]


for test in json.load(open(os.path.join(bundle, "tests.json")))["tests"]:
    env = dict(os.environ, **dict(e.split("=", 1) for e in test["environment"]))
    env.setdefault("LOOM_COMM_TIMEOUT_S", "30")
    rc, output = run_test(test.get("command", []), env)
    verdict = "passed" if rc == 0 else "skipped" if rc == 77 else "failed"
    counts[verdict] += 1
    print(f"{test['name']}: {verdict} (rc {rc})", flush=True)
    if verdict != "passed":
        print(output[-4000:], flush=True)
print(f"figure: gpu tests: {counts['passed']} passed, {counts['skipped']} skipped, {counts['failed']} failed")
sys.exit(1 if counts["failed"] else 0)
EOF
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
print(f"figure: {a.split('/')[-1]} vs {b.split('/')[-1]}: {len(la)} steps, largest relative loss difference {worst:.3g} (tolerance {tol})")
sys.exit(0 if worst <= tol else 1)
EOF
}

train_on_gpu() {
  local common=(--model gpt --size tiny --data synthetic --steps 10 --quiet)
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

# Each row of `loom bench gemm` (m n k trans loom cuBLAS ratio %peak) becomes a figure.
gemm_on_gpu() {
  local dtype
  for dtype in f32 bf16; do
    "$loom" bench gemm --device cuda --dtype "$dtype" | tee "$out/gemm-$dtype.txt" || return 1
    awk -v d="$dtype" '$1 ~ /^[0-9]+$/ { printf "figure: gemm %s %sx%sx%s %s: loom %s cuBLAS %s TFLOP/s, ratio %s, %s%% of peak\n", d, $1, $2, $3, $4, $5, $6, $7, $8 }' \
      "$out/gemm-$dtype.txt"
  done
}

# loom against PyTorch eager on the GPU; GPT_TORCH_SET overrides the model (smaller for a quick look).
gpt_vs_torch() {
  local precision
  for precision in fp32 bf16; do
    python3 "$root/scripts/bench_presets_seq.py" "$loom" --presets gpt --device cuda \
      --precision "$precision" --set "${GPT_TORCH_SET:-dim=768,heads=12,layers=12,seq=256,dropout=0}" \
      --global-batch 32 --microbatches 1 --steps 8 --warmup 3 --repeats 1 --threads 8 --python "$(command -v python3)" \
      --out "$out/gpt-torch-$precision" || return 1
    python3 - "$out/gpt-torch-$precision/bench_presets_seq.csv" "$precision" <<'EOF'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(f"figure: gpt {sys.argv[2]} ({r['parameters']} parameters): loom {r['loom_samples_per_s']} PyTorch "
          f"{r['torch_samples_per_s']} samples/s, ratio {r['ratio']}")
EOF
  done
}

layers_on_gpu() {
  "$loom" bench layers --device cuda --python "$(command -v python3)" --repeats 5 --json \
    >"$out/bench-layers-cuda.json" || return 1
  cat "$out/bench-layers-cuda.json"
}

# The bytes of every block agree between two profiles (times are only printed).
profile_on_gpu() {
  local common=(--model gpt --size cpu --microbatch 8 --repeats 5)
  "$loom" profile "${common[@]}" --device cpu --out "$out/profile-cpu.json" || return 1
  "$loom" profile "${common[@]}" --device cuda --out "$out/profile-cuda.json" || return 1
  python3 - "$out/profile-cuda.json" "$out/profile-cpu.json" <<'EOF'
import json, sys
a, b = (json.load(open(p))["layers"] for p in sys.argv[1:3])
keys = ("activation_bytes", "boundary_bytes", "parameter_bytes")
bad = [(x["name"], k) for x, y in zip(a, b) for k in keys if x.get(k) != y.get(k)]
print(f"figure: profile: {len(a)} blocks; bytes that differ from the CPU's: {bad or 'none'}")
sys.exit(0 if len(a) == len(b) and not bad else 1)
EOF
}

gpt_speed() {
  "$loom" train --model gpt --size cpu --data synthetic --steps 20 --device cuda --metrics "$out/gpt-speed.jsonl" || return 1
  python3 -c 'import json, sys; r = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"figure: gpt cpu-size on the GPU: {r[-1].get(\"samples_per_s\")} samples/s at step {r[-1][\"step\"]}")' "$out/gpt-speed.jsonl"
}

export out root build bundle bundle_archive
export -f machine build_loom check_requirements unpack_bundle wheel_library_path gpu_tests compare_losses train_on_gpu gemm_on_gpu \
  gpt_vs_torch layers_on_gpu profile_on_gpu gpt_speed
