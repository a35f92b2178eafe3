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
#   * policy routing: a rule ahead of the `local` table sends locally generated packets for
#     10.77.0.1 out of zrxe1 and for 10.77.0.2 out of zrxe0 (the `local` rule moves from
#     pref 0 to pref 1000 to make room; it still handles received packets). Without it the
#     RDMA CM (librdmacm, what zcoll's verbs transport connects with) resolves the peer's
#     address to `lo`, calls it loopback and puts BOTH ends on the device that owns the
#     destination address (rxe0 <-> rxe0, nothing on the wire), whatever the client bound.
#     With it, rdma_resolve_addr from 10.77.0.2 picks rxe1 and the traffic crosses the pair;
#     plain TCP/UDP between the two addresses crosses it too. A device talking to its own
#     address still uses rxe's internal loopback (the route lookup names the device).
#   * static neighbour entries, so that no ARP is needed.
# Two namespaces (one veth end and its rxe device in each) do not work on 6.1: rxe opens its
# UDP 4791 socket in the initial namespace only, and a device whose netdev moved to another
# namespace disappears from `rdma link` (shared rdma namespace mode or not).

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
  ZR_SAVED_RPF=$(</proc/sys/net/ipv4/conf/all/rp_filter)
  echo 0 >/proc/sys/net/ipv4/conf/all/rp_filter
  local mac0 mac1
  mac0=$(<"/sys/class/net/${ZR_NETDEVS[0]}/address")
  mac1=$(<"/sys/class/net/${ZR_NETDEVS[1]}/address")
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
  if [[ $(ip rule show pref 0) == *'lookup local'* ]]; then
    # First the new rule, then away with the old: local delivery never stops.
    batch+=("rule add pref 1000 lookup local" "rule del pref 0 lookup local")
    ZR_MOVED_LOCAL=1
  fi
  batch+=("rule add pref 100 iif lo to ${ZR_ADDRS[0]} lookup $ZR_TABLE"
    "rule add pref 100 iif lo to ${ZR_ADDRS[1]} lookup $ZR_TABLE")
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

rxe_gids_ready() {
  local i g
  for ((i = 0; i < $1; i++)); do
    [ -r "/sys/class/infiniband/${ZR_DEVS[i]}/ports/1/gids/1" ] || return 1
    g=$(<"/sys/class/infiniband/${ZR_DEVS[i]}/ports/1/gids/1")
    [[ $g == 0000:0000:0000:0000:0000:ffff:* ]] || return 1
  done
}

# rxe_net_down: undoes rxe_net_up as far as it got (safe to call more than once).
rxe_net_down() {
  local i
  for i in 1 0; do
    [ -e "/sys/class/infiniband/${ZR_DEVS[i]}" ] && rdma link delete "${ZR_DEVS[i]}" 2>/dev/null
  done
  for i in 0 1; do
    ip rule del pref 100 iif lo to "${ZR_ADDRS[i]}" lookup "$ZR_TABLE" 2>/dev/null
  done
  if [ "${ZR_MOVED_LOCAL:-0}" = 1 ]; then
    ip rule add pref 0 lookup local && ip rule del pref 1000 lookup local
    ZR_MOVED_LOCAL=0
  fi
  ip route flush table "$ZR_TABLE" 2>/dev/null
  ip link del "${ZR_NETDEVS[0]}" 2>/dev/null
  if [ -n "${ZR_SAVED_RPF:-}" ]; then
    echo "$ZR_SAVED_RPF" >/proc/sys/net/ipv4/conf/all/rp_filter
    ZR_SAVED_RPF=
  fi
  return 0
}

# rxe_net_show: what the command will find (for the CI log).
rxe_net_show() {
  local d p
  echo "== rdma link"
  rdma link show
  echo "== ibv_devices"
  ibv_devices
  for d in /sys/class/infiniband/*; do
    [ -e "$d" ] || continue
    for p in "$d"/ports/*; do
      echo "== ${d##*/} port ${p##*/}: $(cat "$p/state"), active_mtu $(ibv_devinfo -d "${d##*/}" -i "${p##*/}" 2>/dev/null | awk '/active_mtu/ {print $2; exit}'), gid[0] $(cat "$p/gids/0"), gid[1] $(cat "$p/gids/1" 2>/dev/null)"
    done
  done
  echo "== addresses"
  ip -br addr show dev "${ZR_NETDEVS[0]}"
  ip -br addr show dev "${ZR_NETDEVS[1]}"
  echo "ZCOLL_RXE=$ZCOLL_RXE ZCOLL_RXE_DEVS=\"$ZCOLL_RXE_DEVS\" ZCOLL_RXE_ADDRS=\"$ZCOLL_RXE_ADDRS\""
}
