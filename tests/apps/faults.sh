#!/usr/bin/env bash
# Fault tests of `loom train` under mpiexec (issue 15, docs/reliability.md section 1-3): a rank
# killed (kill -9) or stopped (SIGSTOP) at start-up, in warm-up, in the steady 1F1B phase, in the
# gradient allreduce or in a checkpoint write, of a 4-rank (2 stages x 2 replicas) or an 8-rank
# (4 stages x 2 replicas) run; damaged checkpoints; a full disk. Each case checks that mpiexec
# and every rank process end, non-zero, within 30 s of the fault, with a message that names the
# rank (or the file), and that the previous checkpoint still resumes.
#
#   faults.sh LOOM MPIEXEC WORK_DIR CASE [NP]
#   CASE (NP 4 or 8, default 4): kill-in-mpi-init | kill-at-startup | kill-in-warmup | kill-in-steady | kill-in-allreduce |
#         kill-in-checkpoint | stop-in-mpi-init | stop-after-mpi-init | stop-in-warmup | stop-in-steady |
#         stop-in-allreduce | stop-in-checkpoint
#   CASE (2 ranks): damaged-checkpoint | disk-full
# Exit 0: passed, 77: skipped (disk-full without permission to mount a tmpfs; mpiexec's own
# teardown hang, see launcher_hang), else failed.
set -u
LOOM=$1
MPIEXEC=$2
WORK=$3
CASE=$4
NP=${5:-4}
TIMEOUT_S=5  # LOOM_COMM_TIMEOUT_S of the runs that must be ended by the watchdog
BOUND_S=30   # issue 15: every rank and mpiexec end within 30 s of the fault
rm -rf "$WORK" && mkdir -p "$WORK" || { echo "faults.sh: cannot create $WORK"; exit 2; }
MPI_FLAGS=(--oversubscribe -x LOOM_NUM_THREADS=1 -x LOOM_COMM_TIMEOUT_S)
[ "$(id -u)" = 0 ] && MPI_FLAGS+=(--allow-run-as-root)
export LOOM_COMM_TIMEOUT_S=60  # runs that should finish, and kills (mpiexec must end those); stops set less
# A small mlp, for the damaged files and the full disk (2 ranks).
TRAIN=(train --model mlp --data synthetic --global-batch 16 --microbatches 2 --lr-schedule constant --quiet)
SMALL=(--set hidden=64,layers=4)
# The signalled runs: S stages x 2 replicas (ranks 2s and 2s+1 hold stage s), M = 2S micro-batches
# so that every stage has a steady phase (DAPPLE: stage s runs S - s warm-up forwards), 4 steps,
# checkpoints after steps 2 and 4.
case $NP in
  4) STAGES=2 ;;
  8) STAGES=4 ;;
  *) echo "faults.sh: NP must be 4 or 8, got '$NP'"; exit 2 ;;
esac
RUN=(train --model mlp --data synthetic --global-batch 32 --microbatches $((2 * STAGES)) --lr-schedule constant --quiet
     "${SMALL[@]}" --steps 4 --stages "$STAGES" --replicas 2)
# pick FOR_4 FOR_8: the value for this NP (the rank or stage a case hits: a middle stage or a
# replica, not only the first and last ranks).
pick() { if [ "$NP" = 4 ]; then echo "$1"; else echo "$2"; fi; }

fail() { echo "FAIL ($CASE, $NP ranks): $*"; for f in "$WORK"/*.err; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# start NAME NP ARGS...: mpiexec in the background; $PID is mpiexec's, output in WORK/NAME.{out,err}.
start() {
  local name=$1 np=$2
  shift 2
  "$MPIEXEC" "${MPI_FLAGS[@]}" -n "$np" "$LOOM" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PID=$!
}

# wait_line FILE PATTERN SECONDS PID: until FILE has a line matching PATTERN, while PID runs.
wait_line() {
  local deadline=$(( $(date +%s) + $3 ))
  until grep -q -- "$2" "$1" 2>/dev/null; do
    [ "$(date +%s)" -ge "$deadline" ] && fail "no line '$2' in $1 after $3 s"
    kill -0 "$4" 2>/dev/null || fail "mpiexec ended before a line '$2' in $1"
    sleep 0.05
  done
}

# finish PID SECONDS: waits for mpiexec; a hang is a failure (the job is killed). Sets $RC.
finish() {
  local deadline=$(( $(date +%s) + $2 ))
  while kill -0 "$1" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      launcher_hang "$1"
      pkill -9 -P "$1"; kill -9 "$1"
      fail "mpiexec still running after $2 s (hang)"
    fi
    sleep 0.1
  done
  wait "$1"
  RC=$?
}

# A rank killed while it connects to mpiexec's PMIx server (at launch) can leave Open MPI 4.1's
# mpiexec hung in its own teardown after every rank has ended (all its children zombies, "PMIX
# ERROR: UNREACHABLE" on stderr; seen in 3 of about 45 8-rank runs, docs/reliability.md). That is
# the launcher's bug, not loom's: the case is reported as skipped, not passed.
launcher_hang() {
  grep -q "PMIX ERROR: UNREACHABLE" "$WORK/run.err" 2>/dev/null || return 0
  local child
  for child in $(pgrep -P "$1"); do alive "$child" && return 0; done
  pkill -9 -P "$1"; kill -9 "$1"
  echo "SKIPPED ($CASE, $NP ranks): every rank ended, but mpiexec hung in its PMIx teardown (PMIX ERROR: UNREACHABLE), an Open MPI bug"
  exit 77
}

# The loom processes of mpiexec $1 (its children).
ranks_of() { pgrep -P "$1" -f "$(basename "$LOOM")" || true; }
# find_ranks MPIEXEC [PIDS]: RANKS, mpiexec's NP loom processes (with PIDS, seen before). Fewer is a
# failure: "every rank process is gone" over a short list would pass with ranks left behind.
find_ranks() {
  RANKS=$(echo ${2:-} $(ranks_of "$1") | tr ' ' '\n' | sort -u)
  [ "$(wc -w <<<"$RANKS")" -eq "$NP" ] && return 0
  pkill -9 -P "$1"; kill -9 "$1"
  fail "found $(wc -w <<<"$RANKS") of $NP rank processes of mpiexec $1:" $RANKS
}

# Fails if any of the given processes is alive BOUND_S after the fault, at $1 (a zombie, killed
# and not yet reaped, counts as gone).
alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" 2>/dev/null; }
all_gone() {
  local deadline pid
  deadline=$(awk -v t="$1" -v b="$BOUND_S" 'BEGIN { printf "%d", t + b + 1 }')
  shift
  for pid in "$@"; do
    while alive "$pid"; do
      if [ "$(date +%s)" -ge "$deadline" ]; then kill -9 "$pid"; fail "rank process $pid alive $BOUND_S s after the fault"; fi
      sleep 0.1
    done
  done
}

latest_of() { cat "$1/latest" 2>/dev/null; }

# signal_paused SIGNAL HOOK_LINE ARGS...: runs `loom` ARGS on NP ranks under the environment the
# caller exported (a test hook), waits for the hook's line "test hook: rank R pid P paused
# HOOK_LINE", sends SIGNAL to P, and checks that mpiexec exits non-zero within BOUND_S and that
# every rank process is gone. Sets STOPPED_RANK, TIME_TO_EXIT, FAULT_RC.
signal_paused() {
  local signal=$1 hook=$2
  shift 2
  [ "$signal" = STOP ] && export LOOM_COMM_TIMEOUT_S=$TIMEOUT_S
  start run "$NP" "$@"
  local mpiexec=$PID
  wait_line "$WORK/run.err" "paused $hook" 120 "$mpiexec"
  find_ranks "$mpiexec"
  local ranks=$RANKS
  local line; line=$(grep -m1 "paused $hook" "$WORK/run.err")
  local pid; pid=$(sed -n 's/.* pid \([0-9]*\) paused.*/\1/p' <<<"$line")
  STOPPED_RANK=$(sed -n 's/.*test hook: rank \([0-9]*\) .*/\1/p' <<<"$line")
  CHECK_WHILE_PAUSED
  local t0; t0=$(now)
  kill "-$signal" "$pid" || fail "could not send SIG$signal to rank $STOPPED_RANK (pid $pid)"
  finish "$mpiexec" "$BOUND_S"
  TIME_TO_EXIT=$(elapsed "$t0")
  FAULT_RC=$RC
  [ "$RC" -ne 0 ] || fail "mpiexec exited 0 after SIG$signal of rank $STOPPED_RANK"
  # shellcheck disable=SC2086
  all_gone "$t0" $ranks
  export LOOM_COMM_TIMEOUT_S=60
}
CHECK_WHILE_PAUSED() { :; }

# Who named the lost or stopped rank: loom's watchdog, or mpiexec (a killed rank: Open MPI's
# "process rank R with PID P ... exited on signal 9"). Fails if nobody did.
named_by() {
  if grep -q "loom: error.*rank $STOPPED_RANK stopped progressing" "$WORK/run.err"; then
    NAMED="loom: $(grep -m1 -o 'communication watchdog: .* stopped progressing' "$WORK/run.err" | cut -c1-160)"
  elif grep -q "process rank $STOPPED_RANK with PID .* signal 9" "$WORK/run.err" "$WORK/run.out"; then
    NAMED="mpiexec ended the job: $(grep -h -m1 -o "process rank $STOPPED_RANK with PID .* signal 9[^.]*" "$WORK/run.err" "$WORK/run.out" | head -1)"
  else
    fail "no message names rank $STOPPED_RANK"
  fi
}

# report FAULT [MORE]: the line of a passed case.
report() { echo "ok: $1 of rank $STOPPED_RANK ($NP ranks): every rank and mpiexec ended (exit $FAULT_RC) in $TIME_TO_EXIT s; $NAMED${2:+; $2}"; }

# kill_at PHASE RANK N / stop_at PHASE RANK N: the signal at LOOM_TEST_PAUSE_AT=PHASE:RANK:N.
kill_at() {
  LOOM_TEST_PAUSE_AT=$1:$2:$3 signal_paused KILL "at $1 $3" "${RUN[@]}"
  named_by
  report "kill -9 at $1 (step $3)"
}
stop_at() {
  LOOM_TEST_PAUSE_AT=$1:$2:$3 signal_paused STOP "at $1 $3" "${RUN[@]}"
  grep -q "rank $STOPPED_RANK stopped progressing" "$WORK/run.err" || fail "no message naming rank $STOPPED_RANK"
  named_by
  report "SIGSTOP at $1 (step $3, LOOM_COMM_TIMEOUT_S=$TIMEOUT_S)"
}

case_kill_in_warmup() { kill_at warmup "$(pick 1 3)" 1; }
case_stop_in_warmup() { stop_at warmup "$(pick 2 4)" 2; }
case_kill_in_steady() { kill_at steady "$(pick 2 4)" 2; }
case_stop_in_steady() { stop_at steady "$(pick 1 5)" 3; }
case_kill_in_allreduce() { kill_at allreduce "$(pick 3 5)" 2; }
case_stop_in_allreduce() { stop_at allreduce "$(pick 1 2)" 1; }

case_kill_at_startup() {
  LOOM_TEST_PAUSE_AFTER_MPI_INIT=$(pick 1 5) signal_paused KILL "after MPI_Init_thread" "${RUN[@]}"
  named_by
  report "kill -9 right after MPI_Init_thread"
}

case_stop_after_mpi_init() {
  LOOM_TEST_PAUSE_AFTER_MPI_INIT=$(pick 2 3) signal_paused STOP "after MPI_Init_thread" "${RUN[@]}"
  grep -q "rank $STOPPED_RANK stopped progressing" "$WORK/run.err" || fail "no message naming rank $STOPPED_RANK"
  named_by
  report "SIGSTOP right after MPI_Init_thread"
}

# A rank paused by LOOM_TEST_PAUSE_BEFORE_RENAME in the checkpoint of step 4 (its stage file
# written as .tmp), then SIGNAL; `latest` still names step 2.
fault_in_checkpoint() {
  CHECKPOINT_STAGE=$2
  CHECK_WHILE_PAUSED() {
    [ -f "$WORK/ckpt/step-000004/stage$CHECKPOINT_STAGE.safetensors.tmp" ] || fail "no stage$CHECKPOINT_STAGE.safetensors.tmp while paused"
  }
  LOOM_TEST_PAUSE_BEFORE_RENAME=step-000004/stage$2.safetensors \
    signal_paused "$1" "before renaming" "${RUN[@]}" --checkpoint "$WORK/ckpt" --checkpoint-every 2
  [ "$(latest_of "$WORK/ckpt")" = step-000004 ] && fail "latest names the checkpoint that was being written"
  [ "$(latest_of "$WORK/ckpt")" = step-000002 ] || fail "latest is '$(latest_of "$WORK/ckpt")', not step-000002"
}

# The previous checkpoint resumes, and the next save cleans the half-written one.
resume_previous() {
  start resume "$NP" "${RUN[@]}" --resume "$WORK/ckpt" --checkpoint "$WORK/ckpt" --checkpoint-every 2
  finish "$PID" 120
  [ "$RC" -eq 0 ] || fail "resume from the previous checkpoint failed ($RC)"
  [ "$(latest_of "$WORK/ckpt")" = step-000004 ] || fail "the resumed run did not commit step 4"
  [ -z "$(find "$WORK/ckpt" -name '*.tmp')" ] || fail ".tmp files left: $(find "$WORK/ckpt" -name '*.tmp')"
  [ -f "$WORK/ckpt/step-000002/manifest.json" ] || fail "step-000002 (kept: --keep-checkpoints 2) is gone"
}

case_kill_in_checkpoint() {
  fault_in_checkpoint KILL "$(pick 1 2)"
  named_by
  resume_previous
  report "kill -9 in its stage-file write (stage $CHECKPOINT_STAGE)" "step-000002 resumed"
}

case_stop_in_checkpoint() {
  fault_in_checkpoint STOP "$(pick 1 1)"
  grep -q "rank $STOPPED_RANK stopped progressing" "$WORK/run.err" || fail "no message naming rank $STOPPED_RANK"
  named_by
  resume_previous
  report "SIGSTOP in its stage-file write (stage $CHECKPOINT_STAGE, LOOM_COMM_TIMEOUT_S=$TIMEOUT_S)" "step-000002 resumed"
}

# at_launch SIGNAL: SIGNAL to a rank as soon as its process exists: it stops (or dies) before or
# inside MPI_Init_thread, where the others wait for it.
at_launch() {
  STOPPED_RANK=$(pick 2 6)
  [ "$1" = STOP ] && export LOOM_COMM_TIMEOUT_S=$TIMEOUT_S
  start run "$NP" "${RUN[@]}"
  export LOOM_COMM_TIMEOUT_S=60
  local mpiexec=$PID t0 pid="" seen="" deadline=$(( $(date +%s) + 30 ))
  while [ -z "$pid" ]; do
    [ "$(date +%s)" -ge "$deadline" ] && fail "rank $STOPPED_RANK never appeared"
    for candidate in $(ranks_of "$mpiexec"); do
      seen+=" $candidate"  # a killed rank may be reaped before find_ranks looks
      if tr '\0' '\n' <"/proc/$candidate/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$STOPPED_RANK"; then
        kill "-$1" "$candidate" && pid=$candidate && t0=$(now)
      fi
    done
    sleep 0.01
  done
  find_ranks "$mpiexec" "$seen"
  local ranks=$RANKS
  finish "$mpiexec" "$BOUND_S"
  TIME_TO_EXIT=$(elapsed "$t0")
  FAULT_RC=$RC
  [ "$RC" -ne 0 ] || fail "mpiexec exited 0"
  # shellcheck disable=SC2086
  all_gone "$t0" $ranks
}

case_kill_in_mpi_init() {
  at_launch KILL
  named_by
  report "kill -9 at launch"
}

# The stopped rank cannot be named inside MPI_Init_thread (watchdog.h): each other rank says that
# it waits there, and the stopped one is the rank that says nothing.
case_stop_in_mpi_init() {
  at_launch STOP
  grep -q "MPI_Init_thread made no progress" "$WORK/run.err" || fail "no watchdog message from MPI_Init_thread"
  grep -q "(rank $STOPPED_RANK): communication watchdog" "$WORK/run.err" && fail "the stopped rank $STOPPED_RANK printed a message"
  NAMED="$(grep -c 'MPI_Init_thread made no progress' "$WORK/run.err") other ranks printed 'MPI_Init_thread made no progress', not rank $STOPPED_RANK"
  report "SIGSTOP at launch (LOOM_COMM_TIMEOUT_S=$TIMEOUT_S)"
}

# resume_fails NAME EXPECTED: resuming WORK/NAME fails on every rank with one line naming EXPECTED.
resume_fails() {
  start "$1" 2 "${TRAIN[@]}" "${SMALL[@]}" --steps 4 --stages 2 --resume "$WORK/$1"
  local t0; t0=$(now)
  finish "$PID" 60
  [ "$RC" -ne 0 ] || fail "$1: resume succeeded"
  grep -q "loom: error" "$WORK/$1.err" && grep -qF -- "$2" "$WORK/$1.err" \
    || fail "$1: expected a 'loom: error' line with '$2'"
  echo "ok ($RC, $(elapsed "$t0") s): $1: $(grep -m1 'loom: error' "$WORK/$1.err" | cut -c1-200)"
}

# damaged COPY: a copy of the good checkpoint to damage.
damaged() { cp -r "$WORK/good" "$WORK/$1"; }

case_damaged_checkpoint() {
  start good 2 "${TRAIN[@]}" "${SMALL[@]}" --stages 2 --steps 2 --checkpoint "$WORK/good"
  finish "$PID" 120
  [ "$RC" -eq 0 ] || fail "the good run failed"
  start other 2 "${TRAIN[@]}" --set hidden=32,layers=4 --stages 2 --steps 2 --checkpoint "$WORK/other"
  finish "$PID" 120
  [ "$RC" -eq 0 ] || fail "the other model's run failed"
  local file=step-000002/stage1.safetensors size
  size=$(stat -c %s "$WORK/good/$file")
  damaged truncated && truncate -s $((size / 2)) "$WORK/truncated/$file"
  resume_fails truncated "truncated/$file: truncated"
  damaged header && printf '\x7f' | dd of="$WORK/header/$file" bs=1 seek=12 conv=notrunc status=none
  resume_fails header "header/$file"
  damaged data && printf '\x7f' | dd of="$WORK/data/$file" bs=1 seek=$((size - 3)) conv=notrunc status=none
  resume_fails data "data/$file: corrupted tensor"
  damaged no_manifest && rm "$WORK/no_manifest/step-000002/manifest.json"
  resume_fails no_manifest "no_manifest/latest: names step-000002, which is not a complete checkpoint"
  damaged edited && sed -i 's/"seed": 1/"seed": 5/' "$WORK/edited/step-000002/manifest.json"
  resume_fails edited "edited/step-000002/manifest.json: the checkpoint has seed 5"
  damaged other_shapes && cp "$WORK/other/$file" "$WORK/other_shapes/$file"
  resume_fails other_shapes "other_shapes/$file: parameter"
  damaged fifo && rm "$WORK/fifo/$file" && mkfifo "$WORK/fifo/$file"
  resume_fails fifo "fifo/$file: a safetensors file must be a regular file, but this is a FIFO"
  damaged fifo_latest && rm "$WORK/fifo_latest/latest" && mkfifo "$WORK/fifo_latest/latest"
  resume_fails fifo_latest "fifo_latest/latest: the checkpoint pointer must be a regular file, but this is a FIFO"
  damaged dir_manifest && rm "$WORK/dir_manifest/step-000002/stage0.json" && mkdir "$WORK/dir_manifest/step-000002/stage0.json"
  resume_fails dir_manifest "stage0.json: a checkpoint manifest must be a regular file, but this is a directory"
  damaged bad_latest && echo "../../etc" >"$WORK/bad_latest/latest"
  resume_fails bad_latest "bad_latest/latest: expected the name of a step directory"
}

case_disk_full() {
  DISK="$WORK/disk"
  local disk=$DISK
  mkdir -p "$disk"
  if ! mount -t tmpfs -o size=1m loom-faults "$disk" 2>"$WORK/mount.err"; then
    echo "SKIPPED: cannot mount a tmpfs ($(cat "$WORK/mount.err")); run as root to test a full disk"
    exit 77
  fi
  trap 'umount "$DISK"' EXIT
  # hidden=80: about 0.6 MB per checkpoint; the second does not fit beside the first in 1 MiB.
  start run 2 "${TRAIN[@]}" --steps 4 --set hidden=80,layers=4 --stages 2 --checkpoint "$disk/ckpt" --checkpoint-every 2
  finish "$PID" 120
  [ "$RC" -ne 0 ] || fail "the run filled the disk without an error (checkpoints: $(du -sh "$disk"))"
  grep -q "loom: error.*step-000004/stage[01].*No space left on device" "$WORK/run.err" \
    || fail "no error naming the stage file and 'No space left on device'"
  [ "$(latest_of "$disk/ckpt")" = step-000002 ] || fail "latest is '$(latest_of "$disk/ckpt")', not step-000002"
  [ -z "$(find "$disk" -name '*.tmp')" ] || fail ".tmp files left: $(find "$disk" -name '*.tmp')"
  [ -e "$disk/ckpt/step-000004" ] && fail "the failed step-000004 was not removed"
  start resume 2 "${TRAIN[@]}" --steps 4 --set hidden=80,layers=4 --stages 2 --resume "$disk/ckpt"
  finish "$PID" 120
  [ "$RC" -eq 0 ] || fail "resume from step-000002 on the full disk failed"
  echo "ok: $(grep -m1 'loom: error' "$WORK/run.err" | cut -c1-220)"
  # The metrics file on a full disk.
  dd if=/dev/zero of="$disk/filler" bs=64k status=none 2>/dev/null
  start metrics 2 "${TRAIN[@]}" "${SMALL[@]}" --steps 4 --stages 2 --metrics "$disk/metrics.jsonl"
  finish "$PID" 120
  [ "$RC" -ne 0 ] || fail "writing metrics to a full disk succeeded"
  grep -q "loom: error.*metrics.jsonl.*No space left on device" "$WORK/metrics.err" || fail "no error for the metrics file"
  echo "ok: $(grep -m1 'loom: error' "$WORK/metrics.err" | cut -c1-200)"
}

"case_${CASE//-/_}"
