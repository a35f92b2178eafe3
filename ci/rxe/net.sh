# shellcheck shell=bash
# Soft-RoCE network of the zcoll rxe harness: sourced by ci/rxe.sh (direct mode, on the
# host) and by run.sh (guest mode, in the guest's chroot). Needs iproute2 (ip, rdma).
#
# Layout: one veth pair, zrxe0 (10.77.0.1/24) <-> zrxe1 (10.77.0.2/24), rxe0 on zrxe0 and
# rxe1 on zrxe1, all in ONE network namespace, so that every process sees both devices and
# a rank may use either; traffic between rxe0 and rxe1 crosses the pair (the selftest
# checks the veth counters).
#
# Both addresses are local to the namespace, which takes three things (each checked in the
# guest with Debian 12's kernel 6.1):
#   * accept_local=1 (and rp_filter=0) on both ends. rxe always transmits on its own netdev,
#     so rxe1's packets to 10.77.0.1 do cross the pair; but they arrive on zrxe0 with a
#     local source address, a "martian" the kernel drops unless accept_local is set.
#   * policy routing: rules ahead of the `local` table send locally generated packets for
#     10.77.0.1 out of zrxe1 and for 10.77.0.2 out of zrxe0 (the `local` rule moves from
#     pref 0 to pref 1000 to make room; it still handles everything else, received
#     packets included). Without them the RDMA CM (librdmacm, what zcoll's verbs transport
#     connects with) resolves the peer's address to `lo`, calls it loopback and puts BOTH
#     ends on the device that owns the destination address (rxe0 <-> rxe0, nothing on the
#     wire), whatever source the client bound. With them, rdma_resolve_addr resolves to
#     (checked with a small librdmacm program):
#        bound 10.77.0.2 -> 10.77.0.1: rxe1 (crosses)   unbound -> 10.77.0.1: rxe1 (crosses)
#        bound 10.77.0.1 -> 10.77.0.2: rxe0 (crosses)   unbound -> 10.77.0.2: rxe0 (crosses)
#        bound 10.77.0.1 -> 10.77.0.1: rxe0 (rxe loopback, as one NIC talking to itself)
#     A bound source sets the output interface, and the table-177 route through the other
#     end does not match it, so traffic to a device's own address stays local.
#   * static neighbour entries, so that no ARP is needed.
# Two namespaces (one veth end and its rxe device in each) do not work on 6.1: moving the
# netdev to another namespace removes its rxe device (`rdma link` no longer lists it, in
# either namespace), and 6.1's rxe listens on UDP 4791 in the initial namespace only.

ZR_SUBNET=${ZCOLL_RXE_SUBNET:-10.77.0}
ZR_TABLE=${ZCOLL_RXE_TABLE:-177}
ZR_NETDEVS=(zrxe0 zrxe1)
ZR_ADDRS=("$ZR_SUBNET.1" "$ZR_SUBNET.2")
ZR_DEVS=(rxe0 rxe1)

# rxe_net_up NDEV: creates the pair, the routing and NDEV (1 or 2) rxe devices.
rxe_net_up() {
  local n=${1:-2} i
  # Few forks: every process costs ~0.1 s in the emulated guest.
  ip link add "${ZR_NETDEVS[0]}" type veth peer name "${ZR_NETDEVS[1]}"
  for i in 0 1; do
    echo 1 >"/proc/sys/net/ipv6/conf/${ZR_NETDEVS[i]}/disable_ipv6" 2>/dev/null || true
    echo 1 >"/proc/sys/net/ipv4/conf/${ZR_NETDEVS[i]}/accept_local"
    echo 0 >"/proc/sys/net/ipv4/conf/${ZR_NETDEVS[i]}/rp_filter"
  done
  # rp_filter is the max of `all` and the device's value.
  read -r ZR_SAVED_RPF </proc/sys/net/ipv4/conf/all/rp_filter
  echo 0 >/proc/sys/net/ipv4/conf/all/rp_filter
  local mac0 mac1
  read -r mac0 <"/sys/class/net/${ZR_NETDEVS[0]}/address"
  read -r mac1 <"/sys/class/net/${ZR_NETDEVS[1]}/address"
  local batch=(
    "link set ${ZR_NETDEVS[0]} mtu 1500 up"
    "link set ${ZR_NETDEVS[1]} mtu 1500 up"
    "addr add ${ZR_ADDRS[0]}/24 dev ${ZR_NETDEVS[0]}"
    "addr add ${ZR_ADDRS[1]}/24 dev ${ZR_NETDEVS[1]}"
    # From each end, the other end's address is reached through this end.
    "route add ${ZR_ADDRS[1]} dev ${ZR_NETDEVS[0]} src ${ZR_ADDRS[0]} table $ZR_TABLE"
    "route add ${ZR_ADDRS[0]} dev ${ZR_NETDEVS[1]} src ${ZR_ADDRS[1]} table $ZR_TABLE"
    "neigh replace ${ZR_ADDRS[1]} dev ${ZR_NETDEVS[0]} lladdr $mac1 nud permanent"
    "neigh replace ${ZR_ADDRS[0]} dev ${ZR_NETDEVS[1]} lladdr $mac0 nud permanent"
  )
  # With one device there is nothing to cross to: no rules, and everything to 10.77.0.1
  # (bound or not) is rxe0's loopback.
  if ((n > 1)); then
    if [[ $(ip rule show pref 0) == *'lookup local'* ]]; then
      # First the new rule, then away with the old: local delivery never stops.
      batch+=("rule add pref 1000 lookup local" "rule del pref 0 lookup local")
    fi
    batch+=("rule add pref 100 iif lo to ${ZR_ADDRS[0]} lookup $ZR_TABLE"
      "rule add pref 100 iif lo to ${ZR_ADDRS[1]} lookup $ZR_TABLE")
  fi
  printf '%s\n' "${batch[@]}" | ip -batch -
  for ((i = 0; i < n; i++)); do
    rdma link add "${ZR_DEVS[i]}" type rxe netdev "${ZR_NETDEVS[i]}"
  done
  # The IPv4-mapped GID (index 1) appears a moment after the link.
  for ((i = 0; i < 100; i++)); do
    rxe_gids_ready "$n" && break
    sleep 0.05
  done
  rxe_gids_ready "$n" || echo "zcoll-rxe: warning: IPv4 GIDs did not appear" >&2
  export ZCOLL_RXE=1
  ZCOLL_RXE_DEVS="${ZR_DEVS[*]:0:n}"
  ZCOLL_RXE_ADDRS="${ZR_ADDRS[*]:0:n}"
  ZCOLL_RXE_NETDEVS="${ZR_NETDEVS[*]}"
  export ZCOLL_RXE_DEVS ZCOLL_RXE_ADDRS ZCOLL_RXE_NETDEVS
}

# rxe_net_relink: after a test took a link of the pair down and up again
# (tests/test_verbs.c), puts back what the kernel flushed with it -- the routes of table
# $ZR_TABLE and the static neighbours -- and the rxe devices themselves: on 6.1 an rxe
# device whose link went down under live queue pairs connects nothing afterwards (RDMA CM
# times out), so both are made anew. Waits until both ports are ACTIVE with their IPv4
# GIDs again; 0 when they are.
rxe_net_relink() {
  local mac0 mac1 i s0 s1
  for i in 1 0; do rdma link delete "${ZR_DEVS[i]}" 2>/dev/null || true; done
  read -r mac0 <"/sys/class/net/${ZR_NETDEVS[0]}/address"
  read -r mac1 <"/sys/class/net/${ZR_NETDEVS[1]}/address"
  printf '%s\n' "link set ${ZR_NETDEVS[0]} up" "link set ${ZR_NETDEVS[1]} up" \
    "route replace ${ZR_ADDRS[1]} dev ${ZR_NETDEVS[0]} src ${ZR_ADDRS[0]} table $ZR_TABLE" \
    "route replace ${ZR_ADDRS[0]} dev ${ZR_NETDEVS[1]} src ${ZR_ADDRS[1]} table $ZR_TABLE" \
    "neigh replace ${ZR_ADDRS[1]} dev ${ZR_NETDEVS[0]} lladdr $mac1 nud permanent" \
    "neigh replace ${ZR_ADDRS[0]} dev ${ZR_NETDEVS[1]} lladdr $mac0 nud permanent" |
    ip -batch -
  for i in 0 1; do rdma link add "${ZR_DEVS[i]}" type rxe netdev "${ZR_NETDEVS[i]}" || return 1; done
  for ((i = 0; i < 200; i++)); do
    read -r s0 <"/sys/class/infiniband/${ZR_DEVS[0]}/ports/1/state"
    read -r s1 <"/sys/class/infiniband/${ZR_DEVS[1]}/ports/1/state"
    [[ $s0 == *ACTIVE* && $s1 == *ACTIVE* ]] && rxe_gids_ready 2 && return 0
    sleep 0.05
  done
  return 1
}

rxe_gids_ready() {
  local i g
  for ((i = 0; i < $1; i++)); do
    read -r g <"/sys/class/infiniband/${ZR_DEVS[i]}/ports/1/gids/1" 2>/dev/null || return 1
    [[ $g == 0000:0000:0000:0000:0000:ffff:* ]] || return 1
  done
}

# rxe_net_down: undoes rxe_net_up, or what a killed run left (safe to call any time, also
# under set -e).
rxe_net_down() {
  local i
  for i in 1 0; do
    if [ -e "/sys/class/infiniband/${ZR_DEVS[i]}" ]; then
      rdma link delete "${ZR_DEVS[i]}" 2>/dev/null || true
    fi
  done
  for i in 0 1; do
    while ip rule del pref 100 iif lo to "${ZR_ADDRS[i]}" lookup "$ZR_TABLE" 2>/dev/null; do :; done
  done
  # `local` at pref 1000 and none at pref 0 is what rxe_net_up makes: put it back.
  if [[ $(ip rule show pref 1000) == *'lookup local'* && $(ip rule show pref 0) != *'lookup local'* ]]; then
    if ip rule add pref 0 lookup local; then ip rule del pref 1000 lookup local || true; fi
  fi
  ip route flush table "$ZR_TABLE" 2>/dev/null || true
  ip link del "${ZR_NETDEVS[0]}" 2>/dev/null || true
  if [ -n "${ZR_SAVED_RPF:-}" ]; then
    echo "$ZR_SAVED_RPF" >/proc/sys/net/ipv4/conf/all/rp_filter || true
    ZR_SAVED_RPF=
  fi
  return 0
}

# rxe_net_show: what the command will find (for the CI log). Few forks, as above.
rxe_net_show() {
  local d p state g0 g1 line dev="" want=0
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
      read -r g0 <"$p/gids/0"
      g1=
      read -r g1 <"$p/gids/1" 2>/dev/null || true
      echo "== ${d##*/} port ${p##*/}: $state, active_mtu ${mtu[${d##*/}]:-?}, gid[0] $g0, gid[1] $g1"
    done
  done
  echo "== addresses"
  ip -br addr show type veth
  echo "ZCOLL_RXE=$ZCOLL_RXE ZCOLL_RXE_DEVS=\"$ZCOLL_RXE_DEVS\" ZCOLL_RXE_ADDRS=\"$ZCOLL_RXE_ADDRS\""
}
