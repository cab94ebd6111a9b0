#!/usr/bin/env bash
# Installs what loom needs from Debian 12's packages, only what is missing (idempotent, quiet).
set -euo pipefail
packages=(build-essential cmake git libopenmpi-dev openmpi-bin libeigen3-dev libopenblas-dev libspdlog-dev
          catch2 libcli11-dev nlohmann-json3-dev zlib1g-dev libdnnl-dev python3 python3-torch python3-torchvision
          python3-matplotlib python3-numpy dataset-fashion-mnist gnuplot-nox
          ocl-icd-opencl-dev  # Debian's dnnl-config.cmake requires OpenCL (only recommended by libdnnl-dev)
          clang libclang-rt-14-dev  # clang + its libFuzzer/ASan runtimes: scripts/fuzz.sh
          slurm-wlm munge)  # a real Slurm on the emulated hosts: scripts/cluster/slurm.sh, ctest -L slurm
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
