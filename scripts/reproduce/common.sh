# Shared by scripts/reproduce/*.sh (sourced, not run). Every script takes
#   NAME.sh [LOOM_BINARY] [--quick] [--out DIR]
# and writes DIR/NAME.csv and DIR/NAME.png (DIR defaults to results/ in the repository).
# After `repro_init NAME "$@"` these are set:
#   root      the repository        loom   the loom executable    quick  1 with --quick, else 0
#   out       the output directory  csv    DIR/NAME.csv           png    DIR/NAME.png
#   python    /usr/bin/python3 (Debian's, which has python3-matplotlib), with scripts/reproduce on PYTHONPATH
#   mpi       the mpiexec command line as an array (oversubscribed, yielding while idle, root-safe)
#   work      a scratch directory removed at exit (KEEP=DIR keeps it there instead)

repro_usage() {
  echo "usage: scripts/reproduce/$1.sh [LOOM_BINARY] [--quick] [--out DIR]" >&2
  exit 2
}

repro_init() {
  local name=$1
  shift
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  loom=${LOOM:-$root/build/apps/loom}
  quick=0
  out=$root/results
  while [ $# -gt 0 ]; do
    case $1 in
      --quick) quick=1 ;;
      --out) [ $# -ge 2 ] || repro_usage "$name"; out=$2; shift ;;
      -h|--help) repro_usage "$name" ;;
      -*) echo "$name.sh: unknown option $1" >&2; repro_usage "$name" ;;
      *) loom=$1 ;;
    esac
    shift
  done
  [ -x "$loom" ] || { echo "$name.sh: no loom executable at $loom (build it: cmake --build build --target loom)" >&2; exit 1; }
  loom=$(cd "$(dirname "$loom")" && pwd)/$(basename "$loom")
  python=/usr/bin/python3
  [ -x "$python" ] || { echo "$name.sh: /usr/bin/python3 is missing" >&2; exit 1; }
  "$python" -c 'import matplotlib' 2>/dev/null ||
    { echo "$name.sh: matplotlib is missing for /usr/bin/python3 (apt-get install python3-matplotlib)" >&2; exit 1; }
  export PYTHONPATH=$root/scripts/reproduce${PYTHONPATH:+:$PYTHONPATH}
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  csv=$out/$name.csv
  png=$out/$name.png
  mpi=(${MPIEXEC:-mpiexec} --oversubscribe --mca mpi_yield_when_idle 1)
  [ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
  if [ -n "${KEEP:-}" ]; then
    work=$KEEP
    mkdir -p "$work"
  else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
  fi
  export LOOM_NUM_THREADS=1 LOOM_COMM_TIMEOUT_S=${LOOM_COMM_TIMEOUT_S:-300}
  repro_started=$(date +%s)
  repro_banner "$name"
}

# The machine, its load and the time: printed before and after a run, since timings on a shared
# machine mean little without them.
repro_banner() {
  echo "# $1$([ "$quick" = 1 ] && echo ' (quick)'): $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n):" \
    "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')," \
    "$(free -g | awk '/Mem:/ {print $2}') GiB; load average $(cut -d' ' -f1-3 /proc/loadavg)"
}

repro_finish() {
  echo "# done in $(( $(date +%s) - repro_started )) s; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# wrote $csv and $png"
}

repro_plot() {  # repro_plot FIGURE: DIR/NAME.csv -> DIR/NAME.png
  LOOM="$loom" "$python" "$root/scripts/reproduce/plot.py" "$1" "$csv" "$png"
}
