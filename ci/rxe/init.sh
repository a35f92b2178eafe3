#!/bin/sh
# /init of the throwaway guest that ci/rxe.sh boots (busybox sh, PID 1).
# Loads the modules, mounts the host's root (read-only) and the writable shares over 9p,
# chroots into the host's root and runs /run/zcoll-rxe/run.sh there (the host's bash,
# iproute2, rdma-core, ...), then prints the exit-status marker and powers off.
# Everything it needs from the host side is in /zcoll-rxe/ of the initramfs:
#   modules.order  module file names, in load order (files in /zcoll-rxe/modules/)
#   conf           ZR_TOKEN, ZR_HOSTNAME, ZR_SHELL, ZR_MSIZE (sourced)
#   rw             one writable share per line: "<mount tag> <path>"
#   keep           host directories (one a line) to keep visible under the guest's tmpfs
#   run.sh net.sh env.sh cmd.sh   copied into the chroot's /run/zcoll-rxe/
export PATH=/bin:/sbin
ZR_STATUS=125

die() {
  echo "zcoll-rxe guest: $*"
  echo "ZCOLL-RXE-EXIT:${ZR_TOKEN:-none}:$ZR_STATUS"
  sync
  poweroff -f
  echo o >/proc/sysrq-trigger
  exit 1
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# Our output on the serial line ci/rxe.sh names (zr_out=, from the kernel command line),
# apart from the kernel's own log; /dev/console when run by hand.
out=/dev/console
[ -n "${zr_out:-}" ] && [ -c "/dev/$zr_out" ] && out=/dev/$zr_out
exec <"$out" >"$out" 2>&1
# shellcheck source=/dev/null
. /zcoll-rxe/conf
echo "zcoll-rxe guest: kernel up after $(cut -d' ' -f1 /proc/uptime) s"

while read -r m; do
  insmod "/zcoll-rxe/modules/$m" 2>/dev/null || die "insmod $m failed"
done </zcoll-rxe/modules.order

hostname "$ZR_HOSTNAME"
ip link set lo up

o="trans=virtio,version=9p2000.L,msize=${ZR_MSIZE:-512000}"
mount -t 9p -o "$o,ro,cache=loose" hostroot /mnt || die "cannot mount the host's root over 9p"
# A second view of the host's root, to bring back the caller's directories that lie under
# /tmp, /run or /dev/shm once those are the guest's own tmpfs (listed in /zcoll-rxe/keep).
mkdir -p /host
mount --bind /mnt /host
mount -t proc proc /mnt/proc
mount -t sysfs sysfs /mnt/sys
mount -t devtmpfs devtmpfs /mnt/dev
mkdir -p /mnt/dev/pts /mnt/dev/shm
# What udev would add: bash's process substitution needs /dev/fd.
ln -sf /proc/self/fd /mnt/dev/fd
ln -sf /proc/self/fd/0 /mnt/dev/stdin
ln -sf /proc/self/fd/1 /mnt/dev/stdout
ln -sf /proc/self/fd/2 /mnt/dev/stderr
ln -sf /proc/kcore /mnt/dev/core
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /mnt/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /mnt/dev/shm
mount -t tmpfs -o mode=1777 tmpfs /mnt/tmp
mount -t tmpfs -o mode=755 tmpfs /mnt/run
while read -r p; do
  case $p in
    /tmp/?* | /run/?* | /dev/shm/?*)
      mkdir -p "/mnt$p"
      mount --bind "/host$p" "/mnt$p" || die "cannot bind $p" ;;
  esac
done </zcoll-rxe/keep
# Writable shares go last: they may lie under /tmp or /run, which are guest tmpfs by now.
while read -r tag path; do
  [ -n "$tag" ] || continue
  mkdir -p "/mnt$path" 2>/dev/null
  mount -t 9p -o "$o,rw" "$tag" "/mnt$path" || die "cannot mount writable share $path"
done </zcoll-rxe/rw

mkdir -p /mnt/run/zcoll-rxe
cp /zcoll-rxe/run.sh /zcoll-rxe/net.sh /zcoll-rxe/env.sh /zcoll-rxe/cmd.sh /mnt/run/zcoll-rxe/
echo "zcoll-rxe guest: host root mounted after $(cut -d' ' -f1 /proc/uptime) s"

if [ "${ZR_SHELL:-0}" = 1 ]; then
  # Interactive: a shell with a controlling terminal on the serial console.
  setsid -c chroot /mnt /bin/bash /run/zcoll-rxe/run.sh
else
  # Through a pipe, so the command sees no terminal (no colours, no progress bars), as in CI.
  chroot /mnt /bin/bash /run/zcoll-rxe/run.sh </dev/null 2>&1 | cat
fi
if [ -r /mnt/run/zcoll-rxe/status ]; then
  ZR_STATUS=$(cat /mnt/run/zcoll-rxe/status)
else
  echo "zcoll-rxe guest: run.sh left no exit status"
fi
sync
echo
echo "ZCOLL-RXE-EXIT:$ZR_TOKEN:$ZR_STATUS"
poweroff -f
echo o >/proc/sysrq-trigger
sleep 10
