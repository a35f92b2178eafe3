#!/usr/bin/env bash
# Runs a command where real soft-RoCE (rdma_rxe) devices exist: rxe0 and rxe1 on the two
# ends of a veth pair (10.77.0.1 and 10.77.0.2; IPv6-only fd77::1 and fd77::2 with
# --family 6), and exits with the command's status.
#   direct mode: this kernel can load rdma_rxe: set the devices up here, tear them down after;
#   guest mode:  it cannot: boot a throwaway qemu guest (Debian's kernel, software
#                emulation) that mounts this machine's root read-only and runs the command
#                there, in the same directory, with the same binaries.
# See ci/rxe/README.md. Usage:
#   ci/rxe.sh [options] -- COMMAND [ARGS...]
#   ci/rxe.sh --selftest
# Options:
#   --np-devices N   1 or 2 rxe devices (default 2)
#   --family 4|6     addresses of the rxe netdevs: 4 (default) IPv4 10.77.0.1/.2; 6 IPv6
#                    only, fd77::1/.2 and link-local, no IPv4 (ZCOLL_RXE_FAMILY)
#   --timeout S      guest mode: kill the guest after S seconds (0: never), exit 124
#                    (default 2400)
#   --selftest       run ci/rxe/selftest.sh (devices, pingpong, ib_write_bw/lat) as COMMAND
#   --shell          after COMMAND (if any), an interactive shell inside the environment
#   --guest|--direct force a mode (default: direct if rdma_rxe loads, else guest)
#   --rw DIR         guest mode: also share DIR writable (repeatable; the root is read-only)
#   --env NAME[=VAL] also pass environment variable NAME into the guest (repeatable)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
me="zcoll-rxe"

ndev=2 family=${ZCOLL_RXE_FAMILY:-4} timeout_s=${ZCOLL_RXE_TIMEOUT:-2400} shell=0 mode=${ZCOLL_RXE_MODE:-auto}
rw_dirs=() extra_env=() cmd=()
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }
while (($#)); do
  case $1 in
    --np-devices) ndev=${2:?}; shift 2 ;;
    --np-devices=*) ndev=${1#*=}; shift ;;
    --family) family=${2:?}; shift 2 ;;
    --family=*) family=${1#*=}; shift ;;
    --timeout) timeout_s=${2:?}; shift 2 ;;
    --timeout=*) timeout_s=${1#*=}; shift ;;
    --selftest) cmd=(bash "$here/rxe/selftest.sh"); shift ;;
    --shell) shell=1; shift ;;
    --guest) mode=guest; shift ;;
    --direct) mode=direct; shift ;;
    --rw) rw_dirs+=("${2:?}"); shift 2 ;;
    --env) extra_env+=("${2:?}"); shift 2 ;;
    -h | --help) usage 0 ;;
    --) shift; cmd=("$@"); break ;;
    *) echo "$me: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
[[ $ndev == [12] ]] || { echo "$me: --np-devices must be 1 or 2" >&2; exit 2; }
[[ $family == [46] ]] || { echo "$me: --family must be 4 or 6" >&2; exit 2; }
export ZCOLL_RXE_FAMILY=$family # net.sh reads it (here or in the guest: env.sh)
[[ $timeout_s =~ ^[0-9]+$ ]] || { echo "$me: --timeout wants seconds" >&2; exit 2; }
if ((${#cmd[@]} == 0 && !shell)); then
  echo "$me: no command (usage: ci/rxe.sh [options] -- COMMAND [ARGS...])" >&2
  exit 2
fi

# ---- packages ------------------------------------------------------------------------
apt_updated=0
apt_update_once() {
  if ((!apt_updated)); then
    apt-get update -q >/dev/null
    apt_updated=1
  fi
}
ensure_pkgs() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "$me: missing packages and not root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "$me: installing ${missing[*]}" >&2
  apt_update_once
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}
rdma_pkgs=(iproute2 rdma-core ibverbs-utils ibverbs-providers perftest)

# ---- mode ----------------------------------------------------------------------------
can_direct() {
  [ "$(id -u)" -eq 0 ] || return 1
  [ -d /sys/module/rdma_rxe ] && return 0
  [ -d "/lib/modules/$(uname -r)" ] || return 1 # a kernel without modules (as here)
  command -v modprobe >/dev/null || ensure_pkgs kmod
  modprobe rdma_rxe 2>/dev/null
}
if [ "$mode" = auto ]; then
  if can_direct; then mode=direct; else mode=guest; fi
fi
case $mode in direct | guest) ;; *) echo "$me: ZCOLL_RXE_MODE must be auto, direct or guest" >&2; exit 2 ;; esac

out=${ZCOLL_RXE_OUT:-$repo/build/rxe-out}
mkdir -p "$out"
out=$(cd "$out" && pwd -P)
export ZCOLL_RXE_OUT=$out

# ---- direct mode ---------------------------------------------------------------------
if [ "$mode" = direct ]; then
  ensure_pkgs "${rdma_pkgs[@]}"
  for m in rdma_rxe rdma_ucm veth; do
    [ -d "/sys/module/$m" ] || modprobe "$m"
  done
  # shellcheck source=/dev/null
  . "$here/rxe/net.sh"
  # One harness at a time per machine: the names and addresses are fixed.
  mkdir -p /run/lock
  exec 9>/run/lock/zcoll-rxe.lock
  flock 9
  rxe_net_down # leftovers of a run that was killed hard
  trap 'rxe_net_down' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  echo "$me: direct mode (kernel $(uname -r)), IPv$family"
  rxe_net_up "$ndev"
  rxe_net_show
  st=0
  if ((${#cmd[@]})); then
    echo "== running: ${cmd[*]}"
    "${cmd[@]}" || st=$?
    echo "$me: command exited with status $st"
  fi
  if ((shell)); then "${SHELL:-bash}" -i || true; fi
  exit "$st"
fi

# ---- guest mode ----------------------------------------------------------------------
ensure_pkgs "${rdma_pkgs[@]}" qemu-system-x86 busybox-static cpio xz-utils zstd

if [ -n "${ZCOLL_RXE_CACHE:-}" ]; then cache=$ZCOLL_RXE_CACHE
elif [ "$(id -u)" -eq 0 ]; then cache=/var/cache/zcoll-rxe
else cache=${XDG_CACHE_HOME:-$HOME/.cache}/zcoll-rxe
fi
mkdir -p "$cache"

# The kernel: Debian's own (linux-image-amd64's versioned dependency), unpacked once into
# $cache/<package>/ and reused; ZCOLL_RXE_REFRESH=1 looks for a newer one.
kernel_pkg() {
  local p
  p=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}')
  if [ -z "$p" ]; then
    apt_update_once
    p=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}')
  fi
  [ -n "$p" ] || { echo "$me: cannot tell which package linux-image-amd64 depends on" >&2; exit 1; }
  echo "$p"
}
kdir=
if [ "${ZCOLL_RXE_REFRESH:-0}" != 1 ]; then
  kdir=$(find "$cache" -mindepth 2 -maxdepth 2 -name .complete -printf '%h\n' 2>/dev/null | sort -V | tail -n1)
fi
if [ -z "$kdir" ]; then
  pkg=$(kernel_pkg)
  kdir=$cache/$pkg
  if [ ! -e "$kdir/.complete" ]; then
    echo "$me: fetching $pkg into $cache" >&2
    rm -rf "$kdir" "$cache/dl"
    mkdir -p "$cache/dl"
    (cd "$cache/dl" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >/dev/null)
    dpkg -x "$cache"/dl/*.deb "$kdir"
    rm -rf "$cache/dl"
    touch "$kdir/.complete"
  fi
fi
vmlinuz=$(find "$kdir/boot" -maxdepth 1 -name 'vmlinuz-*' 2>/dev/null | head -n1)
[ -n "$vmlinuz" ] || { echo "$me: no kernel in $kdir (remove it and retry)" >&2; exit 1; }
kver=${vmlinuz##*/vmlinuz-}
moddir=$kdir/lib/modules/$kver/kernel

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zcoll-rxe.XXXXXX")
qpid=
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
    kill -TERM "$qpid" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$qpid" 2>/dev/null || break; sleep 0.5; done
    # $qpid is timeout(1); qemu is its child.
    pkill -KILL -P "$qpid" 2>/dev/null || true
    kill -KILL "$qpid" 2>/dev/null || true
  fi
  # The guest kernel's whole log outlives the run: a failure's cause is often in it.
  if [ -n "${boot:-}" ] && [ -s "$boot" ]; then tr -d '\r' <"$boot" >"$out/guest-kernel.log" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- initramfs: busybox, the modules, init.sh, this run's command and environment ----
ird=$tmp/initrd
mkdir -p "$ird"/{bin,sbin,proc,sys,dev,mnt,tmp,zcoll-rxe/modules}
mknod -m 600 "$ird/dev/console" c 5 1 2>/dev/null || true # init.sh copes without it
cp /bin/busybox "$ird/bin/busybox"
for a in $("$ird/bin/busybox" --list); do
  [ -e "$ird/bin/$a" ] || ln -s busybox "$ird/bin/$a"
done
cp "$here/rxe/init.sh" "$ird/init"
chmod 755 "$ird/init"

# Modules, dependencies first (from each module's own "depends=" in .modinfo). The roots:
# virtio PCI and 9p for the shares, rxe (needs crc32_generic for its ICRC, a soft
# dependency that "depends=" does not name: without it `rdma link add` says "failed to add"),
# veth and dummy for the links.
declare -A modpath=() loaded=()
while IFS= read -r f; do
  n=${f##*/}; n=${n%%.ko*}; modpath[${n//-/_}]=$f
done < <(find "$moddir" -name '*.ko*')
order=()
add_mod() {
  local n=${1//-/_} f deps d
  [ -z "${loaded[$n]:-}" ] || return 0
  f=${modpath[$n]:-}
  [ -n "$f" ] || { echo "$me: module $n not in $moddir" >&2; exit 1; }
  loaded[$n]=1
  case $f in
    *.ko.xz) xz -dc "$f" >"$ird/zcoll-rxe/modules/$n.ko" ;;
    *.ko.zst) zstd -qdc "$f" >"$ird/zcoll-rxe/modules/$n.ko" ;;
    *.ko.gz) gzip -dc "$f" >"$ird/zcoll-rxe/modules/$n.ko" ;;
    *) cp "$f" "$ird/zcoll-rxe/modules/$n.ko" ;;
  esac
  deps=$(tr '\0' '\n' <"$ird/zcoll-rxe/modules/$n.ko" | sed -n 's/^depends=//p' | head -n1)
  for d in ${deps//,/ }; do add_mod "$d"; done
  order+=("$n.ko")
}
for m in virtio_pci 9pnet_virtio 9p crc32_generic rdma_rxe rdma_ucm veth dummy; do add_mod "$m"; done
printf '%s\n' "${order[@]}" >"$ird/zcoll-rxe/modules.order"

# Writable shares: the output directory and every --rw DIR, mounted at the same paths.
qemu_shares=(-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap")
: >"$ird/zcoll-rxe/rw"
i=0
for dir in "$out" "${rw_dirs[@]}"; do
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd -P)
  [[ $dir != *[[:space:],]* ]] || { echo "$me: cannot share a path with blanks or commas: $dir" >&2; exit 2; }
  qemu_shares+=(-virtfs "local,path=$dir,mount_tag=rw$i,security_model=none,multidevs=remap")
  echo "rw$i $dir" >>"$ird/zcoll-rxe/rw"
  i=$((i + 1))
done

# Environment: CI, PATH, locale, sanitizer and test-runner settings, ZCOLL_*, and --env NAMEs.
{
  for n in $(compgen -e); do
    case $n in
      CI | PATH | HOME | USER | LOGNAME | LANG | LANGUAGE | LC_* | TZ | TERM | TMPDIR | \
        ZCOLL_* | *SAN_OPTIONS | CTEST_* | GITHUB_* | OMPI_* | PRTE_* | PMIX_* | UCX_* | \
        CC | CXX | CFLAGS | CXXFLAGS | LDFLAGS | MAKEFLAGS) ;;
      *) continue ;;
    esac
    # The guest's /tmp is its own tmpfs: a host TMPDIR elsewhere would be read-only there.
    [ "$n" = TMPDIR ] && continue
    printf 'export %s=%q\n' "$n" "${!n}"
  done
  for n in "${extra_env[@]}"; do
    if [[ $n == *=* ]]; then printf 'export %s=%q\n' "${n%%=*}" "${n#*=}"
    else printf 'export %s=%q\n' "$n" "${!n-}"
    fi
  done
  printf 'ZR_NDEV=%q\nZR_CWD=%q\nZR_SHELL=%q\nZR_CMDLINE=%q\n' "$ndev" "$(pwd -P)" "$shell" "${cmd[*]}"
} >"$ird/zcoll-rxe/env.sh"
if ((${#cmd[@]})); then
  { printf 'exec'; printf ' %q' "${cmd[@]}"; printf '\n'; } >"$ird/zcoll-rxe/cmd.sh"
else
  : >"$ird/zcoll-rxe/cmd.sh"
fi
# The caller's directory and this repository stay visible even under /tmp (see init.sh).
printf '%s\n' "$(pwd -P)" "$(cd "$repo" && pwd -P)" >"$ird/zcoll-rxe/keep"
cp "$here/rxe/run.sh" "$here/rxe/net.sh" "$ird/zcoll-rxe/"
token=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
printf 'ZR_TOKEN=%s\nZR_HOSTNAME=%q\nZR_SHELL=%s\nZR_MSIZE=%s\n' \
  "$token" "$(hostname)" "$shell" "${ZCOLL_RXE_MSIZE:-512000}" >"$ird/zcoll-rxe/conf"
(cd "$ird" && find . -print0 | cpio --null -o -H newc --quiet) >"$tmp/initrd.cpio"

# ---- boot ----------------------------------------------------------------------------
# Software emulation (TCG) only: -enable-kvm hangs at boot on these machines. The kernel
# logs in full to its own serial line (ttyS1, boot.log); init.sh and the command write to
# ttyS0 (console.log), so the command's output stays clean and a boot that stalls can be
# shown. A TCG boot has been seen to stall before init on a busy CI machine (once in a
# couple of dozen runs, nothing on either console for 40 min): if the devices are not
# ready within the boot limit (the command has not started), the guest is killed, its
# kernel log shown, and booted afresh.
boot_limit=${ZCOLL_RXE_BOOT_LIMIT:-240} boot_tries=${ZCOLL_RXE_BOOT_TRIES:-3}
qemu=(qemu-system-x86_64 -accel tcg -machine pc -cpu max -smp "${ZCOLL_RXE_SMP:-2}"
  -m "${ZCOLL_RXE_MEM:-4G}" -nodefaults -no-user-config -display none -no-reboot
  -kernel "$vmlinuz" -initrd "$tmp/initrd.cpio"
  "${qemu_shares[@]}")
log=$tmp/console.log boot=$tmp/boot.log
echo "$me: guest mode: booting Debian kernel $kver under qemu (TCG), $ndev rxe device(s), IPv$family, timeout ${timeout_s}s"
if ((shell)); then
  # Interactive: the serial console on this terminal; Ctrl-A x quits qemu.
  qemu+=(-append "console=ttyS0 quiet loglevel=3 panic=-1 mitigations=off rdinit=/init ${ZCOLL_RXE_APPEND:-}"
    -chardev "stdio,id=con,mux=on,signal=off" -serial chardev:con -mon "chardev=con,mode=readline")
  t0=$(date +%s.%N)
  set +e
  timeout --foreground -k 10 "$timeout_s" "${qemu[@]}" 2>&1 | tee "$log"
  qst=${PIPESTATUS[0]}
  set -e
else
  qemu+=(-append "console=ttyS1 loglevel=6 panic=-1 mitigations=off rdinit=/init zr_out=ttyS0 ${ZCOLL_RXE_APPEND:-}"
    -chardev "file,id=con,path=$log" -serial chardev:con
    -chardev "file,id=klog,path=$boot" -serial chardev:klog)
  try=1
  while :; do
    : >"$log"
    : >"$boot"
    t0=$(date +%s.%N)
    timeout -k 10 "$timeout_s" "${qemu[@]}" </dev/null >"$tmp/qemu.err" 2>&1 &
    qpid=$!
    # Live output: the console, with the serial line's CRs dropped. In the background, so
    # that a signal to this script is handled promptly (bash defers traps until a
    # foreground command ends; the 1 s sleeps below are the longest wait).
    tail -n +1 -s 0.2 -f --pid="$qpid" "$log" | sed -u 's/\r$//' &
    tpid=$!
    stalled=0 waited=0
    while kill -0 "$qpid" 2>/dev/null; do
      if ((waited >= boot_limit)) && ! grep -q 'zcoll-rxe guest: devices ready' "$log"; then
        stalled=1
        break
      fi
      sleep 1 & wait $! || true
      waited=$((waited + 1))
    done
    if ((stalled)); then
      echo "$me: attempt $try: the guest was not ready within ${boot_limit}s; the kernel's last words:" >&2
      tail -n 25 "$boot" | sed 's/\r$//; s/^/  | /' >&2
      kill -TERM "$qpid" 2>/dev/null || true
      qst=0
      wait "$qpid" || qst=$?
      qpid=
      wait "$tpid" || true
      if ((try >= boot_tries)); then
        echo "$me: gave up after $try boots" >&2
        exit 125
      fi
      try=$((try + 1))
      continue
    fi
    qst=0
    wait "$qpid" || qst=$?
    qpid=
    wait "$tpid" || true # tail ends within 0.2 s of qemu
    break
  done
fi
t1=$(date +%s.%N)
el=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
if [ -s "$tmp/qemu.err" ]; then
  echo "$me: qemu said:"
  cat "$tmp/qemu.err"
fi
show_klog() {
  [ -s "$boot" ] || return 0
  echo "$me: the guest kernel's last words:" >&2
  tail -n 25 "$boot" | sed 's/\r$//; s/^/  | /' >&2
}
if [ "$qst" -eq 124 ] || [ "$qst" -eq 137 ]; then
  echo "$me: the guest did not finish within ${timeout_s}s: killed" >&2
  show_klog
  exit 124
fi
st=$(tr -d '\r' <"$log" | sed -n "s/^ZCOLL-RXE-EXIT:$token:\([0-9][0-9]*\)\$/\1/p" | tail -n1)
if [ -z "$st" ]; then
  echo "$me: the guest stopped without reporting an exit status (qemu exit $qst) after ${el}s" >&2
  show_klog
  exit 125
fi
echo "$me: guest finished in ${el}s; command exit status $st"
[ "$st" -eq 0 ] || show_klog
exit "$st"
