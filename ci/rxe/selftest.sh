#!/bin/bash
# Check of the rxe environment, run inside it by `ci/rxe.sh --selftest`: ibv_devices, an
# ibv_rc_pingpong pair, ib_write_bw and ib_write_lat pairs between the first and the last
# device (rxe0 -> rxe1 over the veth pair when there are two), and proof from the veth
# counters that the RoCE packets crossed the pair. Exits 0 only if everything worked.
# IPv6 mode (ci/rxe.sh --family 6): the same with the fd77:: GID and the TCP side channel
# on 127.0.0.1 (the rxe netdevs have no IPv4 address, which is checked), plus rxe0 <-> rxe0
# and the link-local GID (index 0); no RDMA CM pair (perftest 4.5's -R resolves the server
# name as IPv4 only: "Address family for hostname not supported").
set -uo pipefail
read -r -a devs <<<"${ZCOLL_RXE_DEVS:?not inside ci/rxe.sh}"
read -r -a addrs <<<"$ZCOLL_RXE_ADDRS"
read -r -a ndevs <<<"$ZCOLL_RXE_NETDEVS"
srv_dev=${devs[0]} srv_addr=${addrs[0]} cli_dev=${devs[-1]}
family=${ZCOLL_RXE_FAMILY:-4} gid=${ZCOLL_RXE_GID_INDEX:-1}
# The TCP side channel of ibv_rc_pingpong and perftest (not RoCE): IPv4 only (their
# servers listen on 0.0.0.0), so loopback in IPv6 mode.
[ "$family" = 6 ] && srv_addr=127.0.0.1
T=${ZCOLL_RXE_SELFTEST_TIMEOUT:-120}
failed=()
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# ready PORT SPID: the server listens on TCP PORT (ibv_rc_pingpong, perftest) or says it
# waits (perftest over the RDMA CM, which shows in no socket table), or died.
ready() {
  ss -ltnH "sport = :$1" 2>/dev/null | grep -q . && return 0
  grep -q "Waiting for client" "$log/srv" 2>/dev/null && return 0
  ! kill -0 "$2" 2>/dev/null
}

# pair NAME PORT SERVER-CMD... -- CLIENT-CMD...: runs a server/client pair, prints both
# outputs, and records a failure unless both exit 0. The client is tried up to 3 times
# (a loaded emulated guest can be slow to start listening).
pair() {
  local name=$1 port=$2 srv=() cli=() spid srv_st cli_st=1 i t0=$SECONDS
  shift 2
  while [ "$1" != -- ]; do srv+=("$1"); shift; done
  shift
  cli=("$@")
  echo "== $name: ${srv[*]}  <->  ${cli[*]}"
  : >"$log/cli"
  stdbuf -oL -eL timeout -s KILL "$T" "${srv[@]}" >"$log/srv" 2>&1 &
  spid=$!
  for ((i = 0; i < 300; i++)); do
    ready "$port" "$spid" && break
    sleep 0.1
  done
  for i in 1 2 3; do
    sleep 0.5
    echo "-- client attempt $i:" >>"$log/cli"
    timeout -s KILL "$T" "${cli[@]}" >>"$log/cli" 2>&1
    cli_st=$?
    [ "$cli_st" -eq 0 ] && break
    kill -0 "$spid" 2>/dev/null || break
    sleep 2
  done
  # A client that never got through leaves the server waiting: do not wait T seconds.
  [ "$cli_st" -eq 0 ] || pkill -KILL -P "$spid" 2>/dev/null
  wait "$spid"
  srv_st=$?
  echo "-- server (exit $srv_st):"
  cat "$log/srv"
  echo "-- client (exit $cli_st):"
  cat "$log/cli"
  if [ "$srv_st" -ne 0 ] || [ "$cli_st" -ne 0 ]; then
    failed+=("$name")
    echo "-- $name: FAILED ($((SECONDS - t0)) s)"
  else
    echo "-- $name: ok ($((SECONDS - t0)) s)"
  fi
}

counters() { # tx_packets of each veth end
  local n
  for n in "${ndevs[@]}"; do printf "%s " "$(<"/sys/class/net/$n/statistics/tx_packets")"; done
}

# crossed NAME MIN BEFORE: with two devices, each veth end must have sent MIN packets.
crossed() {
  local a b
  ((${#devs[@]} > 1)) || return 0
  read -r -a b <<<"$3"
  read -r -a a <<<"$(counters)"
  echo "== veth tx_packets (${ndevs[*]}) before $2: ${b[*]}, after: ${a[*]}"
  if ((a[0] - b[0] < $2 || a[1] - b[1] < $2)); then
    echo "-- $1: the RoCE packets did NOT cross the veth pair"
    failed+=("$1:veth")
  else
    echo "-- $1: the RoCE packets crossed the veth pair"
  fi
}

if [ "$family" = 6 ]; then
  v4=$(ip -4 -o addr show dev "${ndevs[0]}"; ip -4 -o addr show dev "${ndevs[1]}")
  if [ -n "$v4" ]; then
    echo "-- IPv6 mode, but the rxe netdevs have IPv4 addresses:"
    echo "$v4"
    failed+=(no-ipv4)
  else
    echo "== IPv6 mode: no IPv4 address on ${ndevs[*]}; GID index $gid"
  fi
fi

before=$(counters)
pair ibv_rc_pingpong 18515 ibv_rc_pingpong -g "$gid" -d "$srv_dev" -n 1000 -- \
  ibv_rc_pingpong -g "$gid" -d "$cli_dev" -n 1000 "$srv_addr"
crossed ibv_rc_pingpong 1000 "$before" # 1000 round trips

if [ "$family" = 6 ]; then
  # Out-of-band set-up (as zcoll's verbs transport is moving to) on the same device, and
  # with the link-local GID.
  if [ "$srv_dev" != "$cli_dev" ]; then # (with one device, the pair above was that)
    pair ibv_rc_pingpong:self 18515 ibv_rc_pingpong -g "$gid" -d "$srv_dev" -n 1000 -- \
      ibv_rc_pingpong -g "$gid" -d "$srv_dev" -n 1000 "$srv_addr"
  fi
  before=$(counters)
  pair ibv_rc_pingpong:link-local 18515 ibv_rc_pingpong -g 0 -d "$srv_dev" -n 1000 -- \
    ibv_rc_pingpong -g 0 -d "$cli_dev" -n 1000 "$srv_addr"
  crossed ibv_rc_pingpong:link-local 1000 "$before"
else
  # Connected through the RDMA CM, as zcoll's verbs transport does: the CM must pick the
  # client's device from the route to the server's address (see net.sh), not loop back.
  before=$(counters)
  pair rdma_cm 18515 ib_write_bw -F -R -x 1 -d "$srv_dev" -n 200 -- \
    ib_write_bw -F -R -x 1 -d "$cli_dev" -n 200 "$srv_addr"
  crossed rdma_cm 200 "$before" # 200 x 64 KiB: the data alone is 12800 packets one way
fi

before=$(counters)
pair ib_write_bw 18515 ib_write_bw -F -x "$gid" -d "$srv_dev" -D 2 -- \
  ib_write_bw -F -x "$gid" -d "$cli_dev" -D 2 "$srv_addr"
[ "$family" = 6 ] && crossed ib_write_bw 100 "$before" # the side channel is on lo
pair ib_write_lat 18515 ib_write_lat -F -x "$gid" -d "$srv_dev" -n 1000 -- \
  ib_write_lat -F -x "$gid" -d "$cli_dev" -n 1000 "$srv_addr"

if ((${#failed[@]})); then
  echo "selftest: FAILED: ${failed[*]}"
  exit 1
fi
echo "selftest: all passed"
