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
# shellcheck source=net.sh
. "$d/net.sh"
ulimit -l unlimited 2>/dev/null
umask 022
set -eE
trap 'echo "zcoll-rxe guest: setting up the rxe devices failed (status $?)"' ERR
rxe_net_up "$ZR_NDEV"
trap - ERR
set +eE
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
fi
