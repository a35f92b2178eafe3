# shellcheck shell=bash
# Soft-RoCE network of the zcoll rxe harness: sourced by ci/rxe.sh (direct mode, on the
# host) and by run.sh (guest mode, in the guest's chroot). Needs iproute2 (ip, rdma).
#
# Layout: one veth pair, zrxe0 (10.77.0.1/24) <-> zrxe1 (10.77.0.2/24), rxe0 on zrxe0 and
# rxe1 on zrxe1, all in ONE network namespace, so that every process sees both devices and
# a rank may use either.
#
# Why policy routing and not two namespaces: with both addresses local to one namespace the
# kernel routes 10.77.0.2 -> 10.77.0.1 through `lo`, and rxe drops RoCE packets that arrive
# on `lo` (it looks its device up by the receiving netdev), so rxe0 <-> rxe1 would not work
# at all, or would silently never touch the veth. Two namespaces do not help on Debian 12's
# kernel (6.1): rxe opens its UDP 4791 socket in the initial namespace only, so a device
# whose netdev lives in another namespace never receives anything. Instead:
#   * a rule ahead of the `local` table sends locally generated packets for 10.77.0.1 out
#     of zrxe1, and for 10.77.0.2 out of zrxe0 (the `local` rule is moved from pref 0 to
#     pref 1000 to make room; it still handles everything else, and all received packets);
#   * accept_local=1 and rp_filter=0 on both ends let a packet whose source is one of our
#     own addresses be received on the other end; static neighbour entries spare ARP.
# rxe itself routes with the device's netdev as the output interface: rxe1 -> 10.77.0.1
# leaves through zrxe1, crosses the pair and comes in on zrxe0, i.e. rxe0 (the veth
# counters in `ip -s link` show it). Traffic from a device to its own address stays inside
# rxe (its loopback path). Plain TCP/UDP between the two addresses crosses the pair too.

ZR_SUBNET=${ZCOLL_RXE_SUBNET:-10.77.0}
ZR_TABLE=${ZCOLL_RXE_TABLE:-177}
ZR_NETDEVS=(zrxe0 zrxe1)
ZR_ADDRS=("$ZR_SUBNET.1" "$ZR_SUBNET.2")
ZR_DEVS=(rxe0 rxe1)

# rxe_net_up NDEV: creates the pair, the routing and NDEV (1 or 2) rxe devices.
rxe_net_up() {
  local n=${1:-2} i peer
  ip link add "${ZR_NETDEVS[0]}" type veth peer name "${ZR_NETDEVS[1]}"
  for i in 0 1; do
    peer=$((1 - i))
    sysctl -qw "net.ipv6.conf.${ZR_NETDEVS[i]}.disable_ipv6=1" 2>/dev/null || true
    sysctl -qw "net.ipv4.conf.${ZR_NETDEVS[i]}.accept_local=1"
    sysctl -qw "net.ipv4.conf.${ZR_NETDEVS[i]}.rp_filter=0"
    ip link set "${ZR_NETDEVS[i]}" mtu 1500 up
    ip addr add "${ZR_ADDRS[i]}/24" dev "${ZR_NETDEVS[i]}"
    # From here, packets for the peer's address leave through this end.
    ip route add "${ZR_ADDRS[peer]}" dev "${ZR_NETDEVS[i]}" src "${ZR_ADDRS[i]}" table "$ZR_TABLE"
  done
  for i in 0 1; do
    peer=$((1 - i))
    ip neigh replace "${ZR_ADDRS[peer]}" dev "${ZR_NETDEVS[i]}" nud permanent \
      lladdr "$(cat "/sys/class/net/${ZR_NETDEVS[peer]}/address")"
  done
  # rp_filter is the max of `all` and the device's value.
  ZR_SAVED_RPF=$(sysctl -n net.ipv4.conf.all.rp_filter)
  sysctl -qw net.ipv4.conf.all.rp_filter=0
  if [[ $(ip rule show pref 0) == *'lookup local'* ]]; then
    ip rule add pref 1000 lookup local   # first add the new one: local delivery never stops
    ip rule del pref 0 lookup local
    ZR_MOVED_LOCAL=1
  fi
  for i in 0 1; do
    ip rule add pref 100 iif lo to "${ZR_ADDRS[i]}" lookup "$ZR_TABLE"
  done
  for ((i = 0; i < n; i++)); do
    rdma link add "${ZR_DEVS[i]}" type rxe netdev "${ZR_NETDEVS[i]}"
  done
  # The IPv4-mapped GID (index 1) appears a moment after the link.
  for ((i = 0; i < 50; i++)); do
    rxe_gids_ready "$n" && break
    sleep 0.1
  done
  rxe_gids_ready "$n" || echo "zcoll-rxe: warning: IPv4 GIDs did not appear" >&2
  export ZCOLL_RXE=1
  ZCOLL_RXE_DEVS="${ZR_DEVS[*]:0:n}"
  ZCOLL_RXE_ADDRS="${ZR_ADDRS[*]:0:n}"
  ZCOLL_RXE_NETDEVS="${ZR_NETDEVS[*]:0:n}"
  export ZCOLL_RXE_DEVS ZCOLL_RXE_ADDRS ZCOLL_RXE_NETDEVS
}

rxe_gids_ready() {
  local i g
  for ((i = 0; i < $1; i++)); do
    g=$(cat "/sys/class/infiniband/${ZR_DEVS[i]}/ports/1/gids/1" 2>/dev/null) || return 1
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
    sysctl -qw "net.ipv4.conf.all.rp_filter=$ZR_SAVED_RPF"
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
