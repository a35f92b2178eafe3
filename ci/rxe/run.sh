#!/bin/bash
# Runs in the guest, chrooted into the host's root (see init.sh): sets up the rxe devices
# (net.sh), shows them, runs the command in the caller's directory and leaves its exit
# status in /run/zcoll-rxe/status for init.sh to report.
set -uo pipefail
d=/run/zcoll-rxe
status=125
trap 'echo "$status" >"$d/status"' EXIT
# shellcheck source=/dev/null
. "$d/env.sh"
# shellcheck source=/dev/null
. "$d/net.sh"
ulimit -l unlimited 2>/dev/null
umask 022
set -eE
trap 'echo "zcoll-rxe guest: setting up the rxe devices failed (status $?)"' ERR
rxe_net_up "$ZR_NDEV"
trap - ERR
set +eE
# rxe does its protocol work in softirq context (tasklets), which runs in ksoftirqd when it
# is raised outside an interrupt; a rank busy-polling its CQ on the same emulated CPU then
# starves it until the next tick (4 ms: ib_write_lat showed 4000 us instead of 15 us).
# Real-time ksoftirqd threads behave like a NIC that works whatever the CPUs do.
if [ "${ZCOLL_RXE_RT_SOFTIRQ:-1}" = 1 ]; then
  for p in /proc/[0-9]*; do # `read`, not $(<...): no fork per process
    read -r comm <"$p/comm" 2>/dev/null || continue
    [[ $comm == ksoftirqd/* ]] && chrt -f -p 50 "${p#/proc/}" >/dev/null
  done
fi
rxe_net_show
echo "zcoll-rxe guest: devices ready after $(cut -d' ' -f1 /proc/uptime) s"
if ! cd "$ZR_CWD"; then
  echo "zcoll-rxe guest: cannot cd to $ZR_CWD"
  exit
fi
status=0
if [ -s "$d/cmd.sh" ]; then
  echo "== running: $ZR_CMDLINE"
  bash "$d/cmd.sh"
  status=$?
  echo "zcoll-rxe guest: command exited with status $status at $(cut -d' ' -f1 /proc/uptime) s"
fi
if [ "${ZR_SHELL:-0}" = 1 ]; then
  echo "zcoll-rxe guest: interactive shell; 'exit' powers the guest off (or Ctrl-A x quits qemu)"
  bash -i
  shell_status=$?
  [ -s "$d/cmd.sh" ] || status=$shell_status
fi
