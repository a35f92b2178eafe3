# shellcheck shell=bash
# Soft-RoCE network of the zcoll rxe harness: sourced by ci/rxe.sh (direct mode, on the
# host), by run.sh (guest mode, in the guest's chroot) and by tests (rxe_net_relink).
# Needs iproute2 (ip, rdma). The address family comes from ZCOLL_RXE_FAMILY (4, the
# default, or 6), read when this file is sourced.
#
# Layout: one veth pair, zrxe0 <-> zrxe1, rxe0 on zrxe0 and rxe1 on zrxe1, all in ONE
# network namespace, so that every process sees both devices and a rank may use either;
# traffic between rxe0 and rxe1 crosses the pair (the selftest checks the veth counters).
#   family 4: zrxe0 10.77.0.1/24, zrxe1 10.77.0.2/24, IPv6 disabled on both; the
#             IPv4-mapped GID is index 1.
#   family 6: zrxe0 fd77::1/64, zrxe1 fd77::2/64 (nodad) and their EUI-64 link-local
#             addresses, NO IPv4 address; GID 0 is the link-local one, GID 1 the fd77::
#             one (ZCOLL_RXE_GID_INDEX says which). For out-of-band connection set-up
#             (QPN/PSN/GID exchanged by the program, ibv_modify_qp), no RDMA CM.
#
# Both addresses are local to the namespace, which takes three things (each checked in the
# guest with Debian 12's kernel 6.1):
#   * accept_local=1 (and rp_filter=0) on both ends (IPv4 only: IPv6 has no such check).
#     rxe always transmits on its own netdev, so rxe1's packets to 10.77.0.1 do cross the
#     pair; but they arrive on zrxe0 with a local source address, a "martian" the kernel
#     drops unless accept_local is set.
#   * policy routing (`ip rule` for IPv4, `ip -6 rule` for IPv6: separate rule lists):
#     rules ahead of the `local` table send locally generated packets for address 1 out
#     of zrxe1 and for address 2 out of zrxe0 (the `local` rule moves from pref 0 to pref
#     1000 to make room; it still handles everything else, received packets included).
#     Without them the kernel resolves the peer's address to `lo`: the RDMA CM calls it
#     loopback and puts BOTH ends on the device that owns the destination address (rxe0
#     <-> rxe0, nothing on the wire), whatever source the client bound; and ibv_modify_qp
#     (which resolves the destination MAC from the GIDs the same way) gets a route through
#     `lo`, so rxe1's packets never reach rxe0. With them, rdma_resolve_addr resolves to
#     (IPv4, checked with a small librdmacm program):
#        bound 10.77.0.2 -> 10.77.0.1: rxe1 (crosses)   unbound -> 10.77.0.1: rxe1 (crosses)
#        bound 10.77.0.1 -> 10.77.0.2: rxe0 (crosses)   unbound -> 10.77.0.2: rxe0 (crosses)
#        bound 10.77.0.1 -> 10.77.0.1: rxe0 (rxe loopback, as one NIC talking to itself)
#     A bound source sets the output interface, and the table-177 route through the other
#     end does not match it, so traffic to a device's own address stays local. (IPv6
#     lookups with a source address do not insist on the output interface, so rxe0 ->
#     fd77::1 gets the route through zrxe1 -- but the destination MAC is zrxe0's own, and
#     rxe loops a packet for its own MAC back itself: rxe0 <-> rxe0 still works.)
#     Link-local destinations need no rules: their lookups do insist on the output
#     interface, which skips the other end's `local` route.
#   * static neighbour entries, so that no ARP is needed (IPv6: for the fd77:: and the
#     link-local addresses; there neighbour discovery between the two ends does work
#     without them, checked, but they save its packets and delays).
# IPv6 also takes: accept_dad=0 (addresses usable at once; `nodad` covers only the ones
# we add, not the link-local ones), addrgenmode eui64 (the link-local address is then the
# rxe's default GID 0 rather than one more GID), keep_addr_on_down=1 (else taking a link
# down deletes fd77::N and with it GID 1, checked; rxe_net_relink re-adds them anyway).
# Two namespaces (one veth end and its rxe device in each) do not work on 6.1: moving the
# netdev to another namespace removes its rxe device (`rdma link` no longer lists it, in
# either namespace), and 6.1's rxe listens on UDP 4791 in the initial namespace only.

ZR_FAMILY=${ZCOLL_RXE_FAMILY:-4}
ZR_SUBNET=${ZCOLL_RXE_SUBNET:-10.77.0}
ZR_SUBNET6=${ZCOLL_RXE_SUBNET6:-fd77::}
ZR_TABLE=${ZCOLL_RXE_TABLE:-177}
ZR_NETDEVS=(zrxe0 zrxe1)
ZR_ADDRS4=("$ZR_SUBNET.1" "$ZR_SUBNET.2")
ZR_ADDRS6=("${ZR_SUBNET6}1" "${ZR_SUBNET6}2")
ZR_DEVS=(rxe0 rxe1)
if [ "$ZR_FAMILY" = 6 ]; then
  ZR_ADDRS=("${ZR_ADDRS6[@]}") ZR_PLEN=64 ZR_IP=(ip -6)
else
  ZR_ADDRS=("${ZR_ADDRS4[@]}") ZR_PLEN=24 ZR_IP=(ip -4)
fi
ZR_GID_INDEX=1 # family 6: found by rxe_gids_ready

# rxe_net_up NDEV: creates the pair, the routing and NDEV (1 or 2) rxe devices.
rxe_net_up() {
  local n=${1:-2} i f
  [[ $ZR_FAMILY == [46] ]] || { echo "zcoll-rxe: ZCOLL_RXE_FAMILY must be 4 or 6" >&2; return 2; }
  if [ "$ZR_FAMILY" = 6 ] && [ ! -d /proc/sys/net/ipv6 ]; then
    echo "zcoll-rxe: this kernel has no IPv6 (booted with ipv6.disable=1?)" >&2
    return 1
  fi
  # Few forks: every process costs ~0.1 s in the emulated guest.
  ip link add "${ZR_NETDEVS[0]}" type veth peer name "${ZR_NETDEVS[1]}"
  for i in 0 1; do
    f=${ZR_NETDEVS[i]}
    if [ "$ZR_FAMILY" = 6 ]; then
      # Before the links go up: no duplicate address detection, not even for link-local.
      echo 0 >"/proc/sys/net/ipv6/conf/$f/disable_ipv6"
      echo 0 >"/proc/sys/net/ipv6/conf/$f/accept_dad"
      echo 0 >"/proc/sys/net/ipv6/conf/$f/accept_ra"
      echo 1 >"/proc/sys/net/ipv6/conf/$f/keep_addr_on_down"
    else
      echo 1 >"/proc/sys/net/ipv6/conf/$f/disable_ipv6" 2>/dev/null || true
      echo 1 >"/proc/sys/net/ipv4/conf/$f/accept_local"
      echo 0 >"/proc/sys/net/ipv4/conf/$f/rp_filter"
    fi
  done
  if [ "$ZR_FAMILY" = 4 ]; then
    # rp_filter is the max of `all` and the device's value.
    read -r ZR_SAVED_RPF </proc/sys/net/ipv4/conf/all/rp_filter
    echo 0 >/proc/sys/net/ipv4/conf/all/rp_filter
  fi
  local batch=()
  if [ "$ZR_FAMILY" = 6 ]; then
    batch+=("link set ${ZR_NETDEVS[0]} addrgenmode eui64"
      "link set ${ZR_NETDEVS[1]} addrgenmode eui64")
  fi
  batch+=("link set ${ZR_NETDEVS[0]} mtu 1500 up" "link set ${ZR_NETDEVS[1]} mtu 1500 up")
  zr_addr_batch add
  # With one device there is nothing to cross to: no rules, and everything to address 1
  # (bound or not) is rxe0's loopback.
  if ((n > 1)); then
    if [[ $("${ZR_IP[@]}" rule show pref 0) == *'lookup local'* ]]; then
      # First the new rule, then away with the old: local delivery never stops.
      batch+=("rule add pref 1000 lookup local" "rule del pref 0 lookup local")
    fi
    batch+=("rule add pref 100 iif lo to ${ZR_ADDRS[0]} lookup $ZR_TABLE"
      "rule add pref 100 iif lo to ${ZR_ADDRS[1]} lookup $ZR_TABLE")
  fi
  printf '%s\n' "${batch[@]}" | "${ZR_IP[@]}" -batch -
  for ((i = 0; i < n; i++)); do
    rdma link add "${ZR_DEVS[i]}" type rxe netdev "${ZR_NETDEVS[i]}"
  done
  # The IP GIDs appear a moment after the link.
  for ((i = 0; i < 100; i++)); do
    rxe_gids_ready "$n" && break
    sleep 0.05
  done
  rxe_gids_ready "$n" || echo "zcoll-rxe: warning: IPv$ZR_FAMILY GIDs did not appear" >&2
  export ZCOLL_RXE=1
  ZCOLL_RXE_DEVS="${ZR_DEVS[*]:0:n}"
  ZCOLL_RXE_ADDRS="${ZR_ADDRS[*]:0:n}"
  ZCOLL_RXE_NETDEVS="${ZR_NETDEVS[*]}"
  ZCOLL_RXE_FAMILY=$ZR_FAMILY
  ZCOLL_RXE_GID_INDEX=$ZR_GID_INDEX
  export ZCOLL_RXE_DEVS ZCOLL_RXE_ADDRS ZCOLL_RXE_NETDEVS ZCOLL_RXE_FAMILY ZCOLL_RXE_GID_INDEX
}

# zr_addr_batch add|replace: appends to the caller's `batch` the addresses, the routes of
# table $ZR_TABLE and the static neighbours of the pair (what a link going down flushes).
zr_addr_batch() {
  local mac0 mac1 ll0 ll1 opt=
  read -r mac0 <"/sys/class/net/${ZR_NETDEVS[0]}/address"
  read -r mac1 <"/sys/class/net/${ZR_NETDEVS[1]}/address"
  [ "$ZR_FAMILY" = 6 ] && opt=" nodad"
  batch+=(
    "addr $1 ${ZR_ADDRS[0]}/$ZR_PLEN dev ${ZR_NETDEVS[0]}$opt"
    "addr $1 ${ZR_ADDRS[1]}/$ZR_PLEN dev ${ZR_NETDEVS[1]}$opt"
    # From each end, the other end's address is reached through this end.
    "route replace ${ZR_ADDRS[1]} dev ${ZR_NETDEVS[0]} src ${ZR_ADDRS[0]} table $ZR_TABLE"
    "route replace ${ZR_ADDRS[0]} dev ${ZR_NETDEVS[1]} src ${ZR_ADDRS[1]} table $ZR_TABLE"
    "neigh replace ${ZR_ADDRS[1]} dev ${ZR_NETDEVS[0]} lladdr $mac1 nud permanent"
    "neigh replace ${ZR_ADDRS[0]} dev ${ZR_NETDEVS[1]} lladdr $mac0 nud permanent"
  )
  if [ "$ZR_FAMILY" = 6 ]; then
    zr_ll ll0 "$mac0"
    zr_ll ll1 "$mac1"
    batch+=(
      "neigh replace $ll1 dev ${ZR_NETDEVS[0]} lladdr $mac1 nud permanent"
      "neigh replace $ll0 dev ${ZR_NETDEVS[1]} lladdr $mac0 nud permanent"
    )
  fi
}

# zr_ll VAR MAC: sets VAR to the EUI-64 link-local address of MAC (addrgenmode eui64),
# e.g. 02:11:22:33:44:55 -> fe80::11:22ff:fe33:4455.
zr_ll() {
  local m
  IFS=: read -r -a m <<<"$2"
  printf -v "$1" 'fe80::%x:%x:%x:%x' $(((0x${m[0]} ^ 2) << 8 | 0x${m[1]})) \
    $((0x${m[2]} << 8 | 0xff)) $((0xfe << 8 | 0x${m[3]})) $((0x${m[4]} << 8 | 0x${m[5]}))
}

# zr_gid VAR ADDR: sets VAR to the sysfs spelling of the GID of IPv6 address ADDR (8
# groups of 4 digits).
zr_gid() {
  local a=$2 h=() t=() g out=() k
  if [[ $a == *::* ]]; then
    IFS=: read -r -a h <<<"${a%%::*}"
    IFS=: read -r -a t <<<"${a#*::}"
  else
    IFS=: read -r -a h <<<"$a"
  fi
  for g in "${h[@]}"; do printf -v g '%04x' "0x$g"; out+=("$g"); done
  for ((k = ${#h[@]} + ${#t[@]}; k < 8; k++)); do out+=(0000); done
  for g in "${t[@]}"; do printf -v g '%04x' "0x$g"; out+=("$g"); done
  local IFS=:
  printf -v "$1" '%s' "${out[*]}"
}

# rxe_net_relink: after a test took a link of the pair down and up again
# (tests/transports/test_verbs.c), puts back what the kernel flushed with it -- the routes of table
# $ZR_TABLE, the static neighbours, IPv6 addresses -- and the rxe devices themselves: on
# 6.1 an rxe device whose link went down under live queue pairs connects nothing
# afterwards (RDMA CM times out), so both are made anew. Waits until both ports are
# ACTIVE with their IP GIDs again; 0 when they are.
rxe_net_relink() {
  local i s0 s1 batch=()
  for i in 1 0; do rdma link delete "${ZR_DEVS[i]}" 2>/dev/null || true; done
  batch=("link set ${ZR_NETDEVS[0]} up" "link set ${ZR_NETDEVS[1]} up")
  zr_addr_batch replace
  printf '%s\n' "${batch[@]}" | "${ZR_IP[@]}" -batch -
  for i in 0 1; do rdma link add "${ZR_DEVS[i]}" type rxe netdev "${ZR_NETDEVS[i]}" || return 1; done
  for ((i = 0; i < 200; i++)); do
    read -r s0 <"/sys/class/infiniband/${ZR_DEVS[0]}/ports/1/state"
    read -r s1 <"/sys/class/infiniband/${ZR_DEVS[1]}/ports/1/state"
    [[ $s0 == *ACTIVE* && $s1 == *ACTIVE* ]] && rxe_gids_ready 2 && return 0
    sleep 0.05
  done
  return 1
}

# rxe_gids_ready NDEV: 0 if the first NDEV devices have their IP GID. Family 4: the
# IPv4-mapped GID at index 1. Family 6: the GID of the device's fd77:: address, at the
# same index on every device (ZR_GID_INDEX, 1 in practice); a warning if the indices
# differ (ZR_GID_INDEX is then rxe0's).
rxe_gids_ready() {
  local i g k want idx=()
  if [ "$ZR_FAMILY" = 4 ]; then
    for ((i = 0; i < $1; i++)); do
      read -r g <"/sys/class/infiniband/${ZR_DEVS[i]}/ports/1/gids/1" 2>/dev/null || return 1
      [[ $g == 0000:0000:0000:0000:0000:ffff:* ]] || return 1
    done
    return 0
  fi
  for ((i = 0; i < $1; i++)); do
    zr_gid want "${ZR_ADDRS[i]}"
    for ((k = 0; k < 16; k++)); do
      read -r g <"/sys/class/infiniband/${ZR_DEVS[i]}/ports/1/gids/$k" 2>/dev/null || return 1
      [ "$g" = "$want" ] && break
    done
    ((k < 16)) || return 1
    idx+=("$k")
  done
  ZR_GID_INDEX=${idx[0]}
  if (($1 > 1)) && [ "${idx[0]}" != "${idx[1]}" ]; then
    echo "zcoll-rxe: warning: the fd77:: GIDs have different indices: ${idx[*]}" >&2
  fi
  return 0
}

# rxe_net_down: undoes rxe_net_up (either family), or what a killed run left (safe to
# call any time, also under set -e).
rxe_net_down() {
  local i f
  for i in 1 0; do
    if [ -e "/sys/class/infiniband/${ZR_DEVS[i]}" ]; then
      rdma link delete "${ZR_DEVS[i]}" 2>/dev/null || true
    fi
  done
  for i in 0 1; do
    while ip -4 rule del pref 100 iif lo to "${ZR_ADDRS4[i]}" lookup "$ZR_TABLE" 2>/dev/null; do :; done
    while ip -6 rule del pref 100 iif lo to "${ZR_ADDRS6[i]}" lookup "$ZR_TABLE" 2>/dev/null; do :; done
  done
  # `local` at pref 1000 and none at pref 0 is what rxe_net_up makes: put it back.
  for f in -4 -6; do
    if [[ $(ip "$f" rule show pref 1000 2>/dev/null) == *'lookup local'* &&
      $(ip "$f" rule show pref 0 2>/dev/null) != *'lookup local'* ]]; then
      if ip "$f" rule add pref 0 lookup local; then ip "$f" rule del pref 1000 lookup local || true; fi
    fi
    ip "$f" route flush table "$ZR_TABLE" 2>/dev/null || true
  done
  ip link del "${ZR_NETDEVS[0]}" 2>/dev/null || true
  if [ -n "${ZR_SAVED_RPF:-}" ]; then
    echo "$ZR_SAVED_RPF" >/proc/sys/net/ipv4/conf/all/rp_filter || true
    ZR_SAVED_RPF=
  fi
  return 0
}

# rxe_net_show: what the command will find (for the CI log). Few forks, as above.
rxe_net_show() {
  local d p state g k line gids dev="" want=0
  local -A mtu=()
  echo "== rdma link"
  rdma link show
  echo "== ibv_devices"
  ibv_devices
  while read -r line; do # active_mtu of each device's first port
    case $line in
      hca_id:*) dev=${line#hca_id:} dev=${dev//[[:space:]]/} want=1 ;;
      active_mtu:*)
        if ((want)); then
          read -r mtu["$dev"] _ <<<"${line#active_mtu:}" # "1024 (3)": the bytes
          want=0
        fi ;;
    esac
  done < <(ibv_devinfo 2>/dev/null)
  for d in /sys/class/infiniband/*; do
    [ -e "$d" ] || continue
    for p in "$d"/ports/*; do
      read -r state <"$p/state"
      gids=
      for ((k = 0; k < 16; k++)); do # the GIDs in use (until the first empty one after 0)
        g=
        read -r g <"$p/gids/$k" 2>/dev/null || true
        [[ $k -gt 0 && ( -z $g || $g == 0000:0000:0000:0000:0000:0000:0000:0000 ) ]] && break
        gids+=", gid[$k] $g"
      done
      echo "== ${d##*/} port ${p##*/}: $state, active_mtu ${mtu[${d##*/}]:-?}$gids"
    done
  done
  echo "== addresses"
  ip -br addr show type veth
  echo "ZCOLL_RXE=$ZCOLL_RXE ZCOLL_RXE_DEVS=\"$ZCOLL_RXE_DEVS\" ZCOLL_RXE_ADDRS=\"$ZCOLL_RXE_ADDRS\"" \
    "ZCOLL_RXE_FAMILY=$ZCOLL_RXE_FAMILY ZCOLL_RXE_GID_INDEX=$ZCOLL_RXE_GID_INDEX"
}
