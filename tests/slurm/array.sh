#!/usr/bin/env bash
# A sharded isobench study as a Slurm job array, on a Slurm cluster of
# this one machine: brings the cluster up (tests/slurm/cluster.sh),
# submits deploy/slurm/isobench-array.sbatch as `sbatch --array=0-(N-1)`
# (task I runs `isobench run ... --shards N`, its index from
# SLURM_ARRAY_TASK_ID), waits for every task, checks that each exited 0,
# runs `isobench merge` of the shards, and takes the cluster down again on
# every way out (done, failure, Ctrl-C, SIGTERM, its own time limit).
#
#   tests/slurm/array.sh --dsn DSN --out DIR [--shards N] [--isobench BIN]
#                        [--timeout SECONDS] -- [isobench run options...]
#
# DIR gets shard-0 ... shard-(N-1), merged/ (the study), and the tasks'
# output (slurm-task-I.out). The cluster lives in a new /tmp/isobench-slurm-*
# directory, removed at the end (kept, and named, when something of it
# would not stop). Needs slurm-wlm and munge (Debian: apt-get install
# --no-install-recommends slurm-wlm munge).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
root=$(cd "$here/../.." && pwd -P)
shards=3 dsn= out= isobench=isobench timeout=300
while [ $# -gt 0 ]; do
  case "$1" in
    --dsn) dsn=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --isobench) isobench=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "unknown option $1 (see the head of $0)" >&2; exit 2 ;;
  esac
done
[ -n "$dsn" ] && [ -n "$out" ] || { echo "usage: $0 --dsn DSN --out DIR [--shards N] [--isobench BIN] [--timeout S] -- [run options]" >&2; exit 2; }
isobench=$(command -v "$isobench") || { echo "isobench not found; give --isobench BIN" >&2; exit 2; }
mkdir -p "$out" && out=$(cd "$out" && pwd -P)

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
t0=$(now)
cluster=$(mktemp -d /tmp/isobench-slurm-XXXXXX)
echo "slurm cluster in $cluster"
jid=
status=1
finish() {
  trap - EXIT INT TERM
  local t=$(now)
  # The tasks' output, for whoever reads the results.
  for f in "$cluster"/task-*.out; do [ -e "$f" ] && cp "$f" "$out/slurm-${f##*/}"; done
  if "$here/cluster.sh" down "$cluster"; then
    rm -rf "$cluster"
    echo "slurm down in $(since "$t") s"
  else
    echo "slurm did not stop cleanly; its files are in $cluster" >&2
    status=1
  fi
  echo "total $(since "$t0") s"
  exit "$status"
}
trap finish EXIT
trap 'echo "interrupted" >&2; status=130; finish' INT TERM

eval "$("$here/cluster.sh" up "$cluster")" || { echo "the cluster did not come up" >&2; exit 1; }
echo "slurm up in $(since "$t0") s"

# Parameters go through the environment (sbatch's default --export=ALL).
export DSN=$dsn RESULTS=$out ISOBENCH=$isobench
t1=$(now)
jid=$(sbatch --parsable --array=0-$((shards - 1)) --cpus-per-task=1 \
  --output="$cluster/task-%a.out" "$root/deploy/slurm/isobench-array.sbatch" "$@") || exit 1
echo "submitted array job $jid ($shards tasks)"
deadline=$(( $(date +%s) + timeout ))
# Finished tasks leave squeue at once (`sbatch --wait` polls every few s).
while [ -n "$(squeue -h -j "$jid" 2>/dev/null)" ]; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "the array did not finish within $timeout s; cancelling it" >&2
    scancel "$jid"
    exit 1
  fi
  sleep 0.2
done
echo "array done in $(since "$t1") s"
# Each task's state and exit code (kept by slurmctld for MinJobAge).
failed=0 seen=0
while read -r task state code; do
  echo "task ${task#ArrayTaskId=}: ${state#JobState=} ${code#ExitCode=}"
  seen=$((seen + 1))
  [ "$state" = JobState=COMPLETED ] || failed=1
done < <(scontrol -o show job "$jid" | grep -o 'ArrayTaskId=[^ ]* .*' |
         sed 's/^\(ArrayTaskId=[^ ]*\).*\(JobState=[^ ]*\).*\(ExitCode=[^ ]*\).*/\1 \2 \3/')
if [ "$failed" = 1 ] || [ "$seen" != "$shards" ]; then
  echo "a task failed; its output is in $out/slurm-task-*.out" >&2
  exit 1
fi
t2=$(now)
dirs=()
for i in $(seq 0 $((shards - 1))); do dirs+=("$out/shard-$i"); done
"$isobench" merge "${dirs[@]}" --out "$out/merged" || exit 1
echo "merged in $(since "$t2") s: $out/merged"
status=0
