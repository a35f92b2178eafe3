#!/usr/bin/env bash
# A real one-host Slurm (munged, slurmctld, slurmd on this machine) with PMIx as the
# default MPI type, so that `srun -n 4 prog` starts a PMIx job here (tests/launch_pmix.sh).
# No systemd: the daemons are started by hand and stopped by their pid files.
# Usage: ci/slurm.sh start   (idempotent: returns once the node is idle; as root)
#        ci/slurm.sh stop    (stops what start started; nothing if it is not running)
# The packages come from ci/deps.sh (slurmctld slurmd slurm-client munge libpmix-dev).
# State, logs and pid files live in $ZCOLL_SLURM_DIR (default /var/tmp/zcoll-slurm).
set -euo pipefail
dir=${ZCOLL_SLURM_DIR:-/var/tmp/zcoll-slurm}
conf=/etc/slurm/slurm.conf
marker="# written by zcoll's ci/slurm.sh"
munge_pid=/run/munge/munged.pid

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_one() { # pid file, name
  alive "$1" || return 0
  local pid
  pid=$(cat "$1")
  kill "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  echo "ci/slurm.sh: $2 (pid $pid) did not stop in 5 s" >&2
  return 1
}

write_conf() {
  local host node
  host=$(hostname -s)
  # The node line as slurmd sees this machine: a line that disagrees drains the node.
  node=$(slurmd -C | head -1 | sed 's/ RealMemory=[0-9]*//')
  mkdir -p "$dir/state" "$dir/spool" /etc/slurm
  # The cgroup plugins need cgroup namespaces that containers and CI VMs often lack.
  cat >"$conf" <<EOF
$marker
ClusterName=zcoll
SlurmctldHost=$host
SlurmUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=pmix
ReturnToService=2
$node State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  [ "$(id -u)" -eq 0 ] || { echo "ci/slurm.sh: start needs root" >&2; exit 1; }
  for b in munged slurmctld slurmd sinfo srun; do
    command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] ||
      { echo "ci/slurm.sh: $b is missing (ci/deps.sh installs it)" >&2; exit 1; }
  done
  # Slurm's pmix plugin dlopen()s the unversioned libpmix.so, which only libpmix-dev has.
  [ -e "$(pkg-config --variable=libdir pmix 2>/dev/null)/libpmix.so" ] ||
    { echo "ci/slurm.sh: libpmix.so is missing: apt-get install libpmix-dev" >&2; exit 1; }
  if [ -e "$conf" ] && ! grep -qxF "$marker" "$conf"; then
    echo "ci/slurm.sh: $conf exists and is not ours: not touching this machine's Slurm" >&2
    exit 1
  fi
  write_conf
  if ! alive "$munge_pid"; then
    mkdir -p /run/munge && chown munge:munge /run/munge
    su -s /bin/sh munge -c /usr/sbin/munged
  fi
  alive "$dir/slurmctld.pid" || slurmctld
  alive "$dir/slurmd.pid" || slurmd
  local state=""
  for _ in $(seq 300); do
    state=$(sinfo -h -N -o %t 2>/dev/null | head -1 || true)
    case "$state" in
      idle | mix | alloc) echo "ci/slurm.sh: node $(hostname -s) is $state"; return 0 ;;
      down* | drain*) scontrol update nodename="$(hostname -s)" state=resume 2>/dev/null || true ;;
    esac
    sleep 0.1
  done
  echo "ci/slurm.sh: the node is '${state:-not known}' after 30 s; logs in $dir" >&2
  tail -5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
  exit 1
}

stop() {
  stop_one "$dir/slurmd.pid" slurmd
  stop_one "$dir/slurmctld.pid" slurmctld
  stop_one "$munge_pid" munged
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: ci/slurm.sh start|stop" >&2; exit 2 ;;
esac
