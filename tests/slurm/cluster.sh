#!/usr/bin/env bash
# A real Slurm cluster on this one machine: munged, slurmctld and one
# slurmd, every file (key, configuration, state, logs, pid files, sockets)
# under DIR, no systemd, nothing in /etc touched. Runs as root or as any
# user (every daemon then runs as that user, and only that user's jobs
# run). Needs Debian's slurm-wlm and munge (Slurm 22.05, munge 0.5).
#
#   tests/slurm/cluster.sh up DIR      start it; prints `export SLURM_CONF=...`
#   tests/slurm/cluster.sh down DIR    cancel every job, stop every daemon,
#                                      kill what a job left; exit 1 if
#                                      anything of DIR still runs
#
# Environment for `up`: SLURM_CTLD_PORT, SLURMD_PORT (default: two free
# ports picked at random, so clusters of several checkouts do not meet),
# SLURM_UP_WAIT (30, seconds for the node to come up).
#
# Choices, each measured on a 2-CPU Debian 12 machine (docs/src/reference/
# sharded-runs-deploy.md, "A Slurm cluster on one machine"):
# - OverSubscribe=FORCE:4: up to 4 jobs share a core, so the 3 one-CPU
#   tasks of a 3-task array run at once on 2 CPUs (without it the third
#   waits for one of the others to end, and a start barrier never opens);
# - SelectTypeParameters=CR_Core, not CR_Core_Memory: with memory as a
#   resource and no --mem each job is given the node's whole memory and
#   the tasks run one after another;
# - proctrack/linuxproc and task/none: no cgroups needed;
# - `scontrol shutdown` leaves running jobs (and their slurmstepd) alive,
#   so `down` cancels the jobs first and then kills what is left of them.
set -uo pipefail

usage() { echo "usage: $0 up|down DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
case "$cmd" in up) mkdir -p "$2" ;; down) [ -d "$2" ] || { echo "nothing at $2"; exit 0; } ;; *) usage ;; esac
DIR=$(cd "$2" && pwd -P)
CONF=$DIR/etc/slurm.conf
MSOCK=$DIR/munge/socket
export SLURM_CONF=$CONF

# A pid runs unless it is gone or a zombie: some init processes reap
# orphans only every few seconds, and `kill -0` succeeds on a zombie.
runs() {
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  [ "${s%% *}" != Z ]
}
pidfile_runs() { [ -s "$1" ] && runs "$(cat "$1")"; }
# Waits up to $1 tenths of a second for the pids after it to end.
wait_gone() {
  local n=$1; shift
  for _ in $(seq "$n"); do
    local any=0 p
    for p in "$@"; do runs "$p" && any=1; done
    [ $any = 0 ] && return 0
    sleep 0.1
  done
  return 1
}

# A TCP port nothing listens on, from 20000-39999.
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 20000))
    [ "$p" = "${1:-}" ] && continue
    (: <"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
  done
  echo "no free port found" >&2
  return 1
}

up() {
  for b in munged mungekey slurmctld slurmd sbatch; do
    command -v "$b" >/dev/null || PATH=$PATH:/usr/sbin:/sbin
    command -v "$b" >/dev/null || {
      echo "$b not found: apt-get install --no-install-recommends slurm-wlm munge" >&2
      exit 1
    }
  done
  local user ctld_port slurmd_port node host
  user=$(id -un)
  # munged refuses a socket directory that is not o+x or is group- or
  # world-writable, and a key that is not 0600 and the user's own.
  chmod 755 "$DIR"
  mkdir -p "$DIR"/{munge,etc,log,run,spool/ctld,spool/d}
  chmod 755 "$DIR"/{munge,etc,log,run,spool}
  chmod 700 "$DIR/spool/ctld" "$DIR/spool/d"
  [ -s "$DIR/munge/key" ] || mungekey --create --keyfile="$DIR/munge/key" || exit 1
  chmod 600 "$DIR/munge/key"
  if ! pidfile_runs "$DIR/munge/pid"; then
    rm -f "$MSOCK" "$MSOCK.lock"
    munged --key-file="$DIR/munge/key" --socket="$MSOCK" --pid-file="$DIR/munge/pid" \
      --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/seed" || exit 1
  fi
  for _ in $(seq 50); do
    munge -n -S "$MSOCK" 2>/dev/null | unmunge -S "$MSOCK" >/dev/null 2>&1 && break
    sleep 0.1
  done
  munge -n -S "$MSOCK" | unmunge -S "$MSOCK" >/dev/null || { echo "munged does not answer; see $DIR/log/munged.log" >&2; exit 1; }

  if [ -s "$CONF" ]; then
    # Already configured (a second `up`): keep its ports.
    ctld_port=$(sed -n 's/^SlurmctldPort=//p' "$CONF")
    slurmd_port=$(sed -n 's/^SlurmdPort=//p' "$CONF")
  else
    ctld_port=${SLURM_CTLD_PORT:-$(free_port)} || exit 1
    slurmd_port=${SLURMD_PORT:-$(free_port "$ctld_port")} || exit 1
  fi
  host=$(hostname -s)
  # This machine's CPUs, sockets, cores and memory, as slurmd sees them.
  node=$(slurmd -C | head -1)
  cat >"$CONF" <<EOF
# A one-machine cluster written by tests/slurm/cluster.sh.
ClusterName=isobench
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MSOCK
StateSaveLocation=$DIR/spool/ctld
SlurmdSpoolDir=$DIR/spool/d
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
$node NodeAddr=127.0.0.1 NodeHostname=$host State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
  pidfile_runs "$DIR/run/slurmctld.pid" || slurmctld -f "$CONF" || exit 1
  pidfile_runs "$DIR/run/slurmd.pid" || slurmd -f "$CONF" || exit 1
  local name state=
  name=${node#NodeName=}; name=${name%% *}
  for _ in $(seq $((${SLURM_UP_WAIT:-30} * 10))); do
    state=$(sinfo -h -n "$name" -o %T 2>/dev/null)
    case "$state" in idle|mixed|allocated) break ;; esac
    sleep 0.1
  done
  case "$state" in idle|mixed|allocated) ;; *)
    echo "node $name is '$state', not up; see $DIR/log/" >&2
    exit 1 ;;
  esac
  echo "export SLURM_CONF=$CONF"
}

# Field $2 (3 = state, 4 = parent, 6 = session) of pid $1's stat line,
# counted as proc(5) counts them; read by the shell alone (no fork).
stat_field() {
  local line
  read -r line <"/proc/$1/stat" 2>/dev/null || return 1
  line=${line##*) }
  set -- $line
  shift $(($2 - 3))
  echo "$1"
}

# Processes of DIR's cluster other than this script and its callers:
# every process whose command line names DIR or that has a file under DIR
# open, and every process in the session of a slurmstepd of DIR (a job's
# processes).
ours() {
  local skip=" $$ $BASHPID " p=$$ pid sid q
  while [ "$p" -gt 1 ] 2>/dev/null; do
    p=$(stat_field "$p" 4) || break
    skip+="$p "
  done
  local -A seen=()
  for pid in $( { grep -laF -- "$DIR" /proc/[0-9]*/cmdline 2>/dev/null
                  find /proc/[0-9]*/fd -lname "$DIR/*" 2>/dev/null; } | cut -d/ -f3 | sort -u); do
    [[ $skip == *" $pid "* ]] && continue
    runs "$pid" || continue
    seen[$pid]=1
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmstepd ]; then
      sid=$(stat_field "$pid" 6) || continue
      for q in /proc/[0-9]*; do
        q=${q#/proc/}
        [[ $skip == *" $q "* ]] && continue
        [ "$(stat_field "$q" 6 2>/dev/null)" = "$sid" ] && seen[$q]=1
      done
    fi
  done
  for pid in "${!seen[@]}"; do runs "$pid" && echo "$pid"; done
}

down() {
  if pidfile_runs "$DIR/run/slurmctld.pid"; then
    local jobs
    jobs=$(squeue -h -o %A 2>/dev/null | sort -u)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null
      for _ in $(seq 100); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.1; done
    fi
    scontrol shutdown >/dev/null 2>&1
  fi
  local pids=
  for f in "$DIR/run/slurmctld.pid" "$DIR/run/slurmd.pid"; do
    pidfile_runs "$f" && pids+=" $(cat "$f")"
  done
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    wait_gone 100 $pids || { kill -TERM $pids 2>/dev/null; wait_gone 50 $pids || kill -KILL $pids 2>/dev/null; }
  fi
  # What a job left (slurmstepd and its session), then munged last: the
  # daemons above need it to the end.
  local m
  m=$(cat "$DIR/munge/pid" 2>/dev/null)
  local left
  left=$(ours | grep -vx "${m:-none}")
  if [ -n "$left" ]; then
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null
    # shellcheck disable=SC2086
    wait_gone 50 $left
  fi
  if [ -n "$m" ] && runs "$m"; then
    kill -TERM "$m"
    wait_gone 50 "$m" || kill -KILL "$m" 2>/dev/null
  fi
  rm -f "$MSOCK" "$MSOCK.lock"
  left=$(ours)
  if [ -n "$left" ]; then
    echo "still running after down:" >&2
    # shellcheck disable=SC2086
    ps -o pid,user,args -p "$(echo $left | tr ' ' ,)" >&2
    exit 1
  fi
}

"$cmd"
