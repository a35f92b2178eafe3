#!/usr/bin/env bash
# Runs inside ci/rxe.sh (rxe0 <-> rxe1 across a veth): perftest's raw RDMA WRITE
# bandwidth and latency, then zcoll_perf over verbs on the same devices, and prints
# zcoll's figures as ratios of the raw link's; then two rails against one (ZCOLL_IB_HCA),
# and with ZCOLL_RXE_BENCH_BASE=DIR (another build's directory, e.g. of the commit before a
# change) this build against that one. Usage: perf/rxe_compare.sh (the host side).
set -euo pipefail
build=${1:?build directory}
iters=${ZCOLL_RXE_BENCH_ITERS:-200}
read -r addr0 _ <<<"${ZCOLL_RXE_ADDRS:-10.77.0.1 10.77.0.2}"

# perftest pair: server on rxe0, client on rxe1. perftest's "MB/sec" is 2^20 bytes per
# second (its MBS report format); converted to GB/s (1e9 B/s) like zcoll_perf's.
pair() { # tool size extra...
  local tool=$1 size=$2; shift 2
  "$tool" -d rxe0 -x 1 -F -s "$size" "$@" >/dev/null 2>&1 &
  local srv=$!
  local out
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    if out=$("$tool" -d rxe1 -x 1 -F -s "$size" "$@" "$addr0" 2>&1); then break; fi
    sleep 0.5 # the server may not listen yet
  done
  wait "$srv" || true
  printf '%s\n' "$out"
}

declare -A raw_bw
for size in 1048576 8388608; do
  out=$(pair ib_write_bw "$size" -n "$iters")
  mibs=$(awk -v s="$size" '$1 == s {print $4}' <<<"$out")
  raw_bw[$size]=$(awk -v m="$mibs" 'BEGIN {printf "%.6f", m * 1048576 / 1e9}') # GB/s
  echo "ib_write_bw -x 1 -s $size: average ${mibs} MiB/s = ${raw_bw[$size]} GB/s"
done
out=$(pair ib_write_lat 8 -n 2000)
read -r lat_typ lat_avg < <(awk '$1 == 8 {print $5, $6}' <<<"$out")
echo "ib_write_lat -x 1 -s 8: typical ${lat_typ} us, average ${lat_avg} us"

# -z 1 -a 3: the latency of a blocking call on the slower rank, beside ib_write_lat's
zperf() { ZCOLL_TRANSPORT=verbs "$build/zcoll_run" -np 2 "$build/zcoll_perf" -c 1 -z 1 -a 3 "$@"; }
zout=$(zperf -b 8 -e 8 -n 200 -w 20; zperf -b 1M -e 8M -f 8 -n 10 -w 2)
printf '%s\n' "$zout"
# busbw from the time column (the table rounds GB/s to 2 decimals): 2 ranks, so
# busbw = algbw = bytes / time.
row() { awk -v s="$1" '$1 == s && $0 !~ /^#/ {printf "%s %.6f\n", $6, s / $6 / 1e3}' <<<"$zout"; }
read -r z8_time _ < <(row 8)
read -r _ z1m_bw < <(row 1048576)
read -r _ z8m_bw < <(row 8388608)
echo
echo "# zcoll over verbs, 2 ranks on rxe0/rxe1, against the raw link (same guest, same run)"
printf '%-28s %12s %12s %8s\n' "" zcoll raw ratio
awk -v z="$z1m_bw" -v r="${raw_bw[1048576]}" \
  'BEGIN {printf "%-28s %12.5f %12.5f %8.2f\n", "busbw 1 MiB (GB/s)", z, r, z / r}'
awk -v z="$z8m_bw" -v r="${raw_bw[8388608]}" \
  'BEGIN {printf "%-28s %12.5f %12.5f %8.2f\n", "busbw 8 MiB (GB/s)", z, r, z / r}'
awk -v z="$z8_time" -v r="$lat_typ" \
  'BEGIN {printf "%-28s %12.2f %12.2f %8.2f\n", "8 B latency (us)", z, r, z / r}'

# The median of a few runs, taken in turns (A B A B ...) so that the guest's drift hits
# every configuration alike. bw8m / lat8: GB/s at 8 MiB, us at 8 B, from one run's table.
bw8m() { awk '$1 == 8388608 && $0 !~ /^#/ {printf "%.6f\n", 8388608 / $6 / 1e3}'; }
lat8() { awk '$1 == 8 && $0 !~ /^#/ {print $6}'; }
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
rounds=${ZCOLL_RXE_BENCH_ROUNDS:-3}
one=() two=()
for ((i = 0; i < rounds; i++)); do
  one+=("$(zperf -b 8M -e 8M -n 10 -w 2 | bw8m)")
  two+=("$(ZCOLL_IB_HCA=rxe0,rxe1 zperf -b 8M -e 8M -n 10 -w 2 | bw8m)")
done
m1=$(printf '%s\n' "${one[@]}" | median) m2=$(printf '%s\n' "${two[@]}" | median)
echo
echo "# two rails (ZCOLL_IB_HCA=rxe0,rxe1) against one, busbw at 8 MiB, median of $rounds"
echo "# (on rxe both ranks' rail 0 is rxe0 and rail 1 rxe1: two softirq engines, one wire)"
awk -v a="$m2" -v b="$m1" 'BEGIN {printf "%-28s %12.5f %12.5f %8.2f\n", "2 rails / 1 rail (GB/s)", a, b, a / b}'
if [ -n "${ZCOLL_RXE_BENCH_BASE:-}" ]; then
  base=$ZCOLL_RXE_BENCH_BASE
  bperf() { ZCOLL_TRANSPORT=verbs "$base/zcoll_run" -np 2 "$base/zcoll_perf" -c 1 -z 1 -a 3 "$@"; }
  nb=() bb=() nl=() bl=()
  for ((i = 0; i < rounds; i++)); do
    nl+=("$(zperf -b 8 -e 8 -n 200 -w 20 | lat8)")
    bl+=("$(bperf -b 8 -e 8 -n 200 -w 20 | lat8)")
    nb+=("$(zperf -b 8M -e 8M -n 10 -w 2 | bw8m)")
    bb+=("$(bperf -b 8M -e 8M -n 10 -w 2 | bw8m)")
  done
  echo
  echo "# this build against $base, one rail, median of $rounds taken in turns"
  printf '%-28s %12s %12s %8s\n' "" this base ratio
  awk -v a="$(printf '%s\n' "${nb[@]}" | median)" -v b="$(printf '%s\n' "${bb[@]}" | median)" \
    'BEGIN {printf "%-28s %12.5f %12.5f %8.2f\n", "busbw 8 MiB (GB/s)", a, b, a / b}'
  awk -v a="$(printf '%s\n' "${nl[@]}" | median)" -v b="$(printf '%s\n' "${bl[@]}" | median)" \
    'BEGIN {printf "%-28s %12.2f %12.2f %8.2f\n", "8 B latency (us)", a, b, a / b}'
fi
