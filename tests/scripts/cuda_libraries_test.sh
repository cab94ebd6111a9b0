#!/usr/bin/env bash
# cmake/loomCudaLibraries.cmake finds cuDNN and NCCL where the GPU image has them (issue 33): by
# their versioned names only (libcudnn.so.9, libnccl.so.2, as NVIDIA's pip wheels ship them) under
# LOOM_CUDNN_ROOT / LOOM_NCCL_ROOT, and under a Python's site-packages/nvidia/<package>; a root
# without the library is a warning naming it. The fake roots hold links to this machine's real
# libraries and headers (found next to the CUDA toolkit); skipped (77) where there are none.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "cuda_libraries_test: $*" >&2; exit 1; }

real_lib() { find -L "$cuda/lib" "$cuda/lib64" /usr/lib/x86_64-linux-gnu -maxdepth 1 -name "$1" 2>/dev/null | head -1; }
cudnn=$(real_lib libcudnn.so.9); nccl=$(real_lib libnccl.so.2)
[ -n "$cudnn" ] && [ -n "$nccl" ] && [ -f "$cuda/include/cudnn.h" ] && [ -f "$cuda/include/nccl.h" ] ||
  { echo "skipped: no libcudnn.so.9, libnccl.so.2 and their headers next to $cuda"; exit 77; }

# make_root DIR: DIR/{lib,include} with only the versioned libraries and the headers, as links.
make_root() {
  mkdir -p "$1/cudnn/lib" "$1/cudnn/include" "$1/nccl/lib" "$1/nccl/include"
  ln -s "$cudnn" "$1/cudnn/lib/libcudnn.so.9"
  ln -s "$nccl" "$1/nccl/lib/libnccl.so.2"
  ln -s "$cuda"/include/cudnn*.h "$1/cudnn/include/"
  ln -s "$cuda/include/nccl.h" "$1/nccl/include/"
}

# configure NAME ARGS...: the "found" lines of a fresh configure.
configure() {
  local name=$1; shift
  cmake -S "$here/cuda_libraries" -B "$work/build-$name" -DCUDAToolkit_ROOT="$cuda" "$@" 2>&1 | tee "$work/$name.log" |
    sed -n 's/^-- found //p'
}

make_root "$work/roots"
found=$(configure roots -DLOOM_CUDNN_ROOT="$work/roots/cudnn" -DLOOM_NCCL_ROOT="$work/roots/nccl")
grep -qx "cudnn: $work/roots/cudnn/lib/libcudnn.so.9 | $work/roots/cudnn/include" <<<"$found" || fail "LOOM_CUDNN_ROOT: $found"
grep -qx "nccl: $work/roots/nccl/lib/libnccl.so.2 | $work/roots/nccl/include" <<<"$found" || fail "LOOM_NCCL_ROOT: $found"

mkdir -p "$work/site" && make_root "$work/site/nvidia"  # a namespace package, as the wheels install it
found=$(PYTHONPATH="$work/site" configure wheels -DLOOM_PYTHON="$(command -v python3)")
grep -qx "cudnn: $work/site/nvidia/cudnn/lib/libcudnn.so.9 | $work/site/nvidia/cudnn/include" <<<"$found" || fail "wheels: $found"
grep -qx "nccl: $work/site/nvidia/nccl/lib/libnccl.so.2 | $work/site/nvidia/nccl/include" <<<"$found" || fail "wheels: $found"

mkdir -p "$work/empty"
found=$(LOOM_NCCL_ROOT="$work/empty" configure empty -DLOOM_CUDNN_ROOT="$work/roots/cudnn")
grep -qx "nccl: none" <<<"$found" || fail "an empty LOOM_NCCL_ROOT (environment) still found: $found"
grep -q "LOOM_NCCL_ROOT=$work/empty: no nccl.h" "$work/empty.log" || fail "no warning naming the empty root"
echo "cuDNN and NCCL found by versioned name under LOOM_*_ROOT and under the wheels' nvidia/ folders"
