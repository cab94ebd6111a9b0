#!/usr/bin/env bash
# run_quick.sh SCRIPT LOOM OUT: scripts/reproduce/SCRIPT.sh LOOM --quick --out OUT, then
# check_csv.py on OUT/SCRIPT.csv. Exits 77 (ctest: skipped) when what the script needs is not here.
set -euo pipefail
script=$1 loom=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
skip() { echo "SKIPPED: reproduce_$script needs $1 — not available here"; exit 77; }
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || skip "python3-matplotlib for /usr/bin/python3"
# The published profiles (data/profiles) are part of the repository: a missing one fails the script.
case $script in
  time_to_accuracy|weight_stashing)
    [ -f "${LOOM_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/train-images-idx3-ubyte.gz" ] ||
      skip "Fashion-MNIST (dataset-fashion-mnist or LOOM_FASHION_MNIST_DIR)" ;;
esac
rm -rf "$out"
"$root/scripts/reproduce/$script.sh" "$loom" --quick --out "$out"
[ -f "$out/$script.png" ] || { echo "reproduce_$script: $out/$script.png was not written" >&2; exit 1; }
/usr/bin/python3 "$here/check_csv.py" "$script" "$out/$script.csv"
