#!/usr/bin/env bash
# The main job from a fresh Debian 12 machine: install dependencies, build, run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" loom
"$root/build/apps/loom" bench gemm "$@"
