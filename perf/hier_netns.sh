#!/bin/bash
# hier_netns.sh -- the hierarchical allreduce against the flat algorithms on emulated hosts
# (tests/netns: a network, PID, ... namespace per host, veth pairs on a bridge, UCX over
# TCP between hosts, shm inside), interleaved round by round so that a noisy machine
# disturbs both alike. Prints each round's busbw and the bytes that crossed between hosts,
# then the median busbw per algorithm and its ratio to ring's.
#
#   perf/hier_netns.sh                      # build/, 2 hosts x 2 ranks, 8 MiB, 5 rounds
#   perf/hier_netns.sh -B build/rel -H 2,2 -s 32M -r 9 -a "ring rhd hier"
# Needs root (namespaces).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build hosts=2,2 size=8M rounds=5 algos="ring hier"
while getopts B:H:s:r:a: o; do
  case $o in
    B) build=$(cd "$OPTARG" && pwd) ;;
    H) hosts=$OPTARG ;;
    s) size=$OPTARG ;;
    r) rounds=$OPTARG ;;
    a) algos=$OPTARG ;;
    *) sed -n 2,10p "$0"; exit 2 ;;
  esac
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((i = 1; i <= rounds; i++)); do
  for a in $algos; do
    # -z 1: one blocking call per iteration, the time the application waits.
    /usr/bin/python3 "$here/tests/netns/zcoll_netns.py" --hosts "$hosts" --timeout 300 -- \
      "$build/zcoll_perf" -A "$a" -b "$size" -e "$size" -n 10 -w 3 -z 1 -c 0 \
      > "$out/$a.$i" 2>&1 || { cat "$out/$a.$i"; exit 1; }
    sed -i 's/^\[h[0-9]* r[0-9]*\] //' "$out/$a.$i"
    bw=$(awk '$1 ~ /^[0-9]+$/ && NF > 10 {print $8; exit}' "$out/$a.$i")
    cross=$(sed -n 's/.*MiB within hosts, \([0-9.]*\) MiB between hosts.*/\1/p' "$out/$a.$i")
    echo "round $i $a: busbw $bw GB/s (out of place), ${cross:-0} MiB between hosts in the run"
    echo "$bw" >> "$out/$a.bw"
  done
done
median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ring=$(median "$out/ring.bw" 2>/dev/null || echo 0)
for a in $algos; do
  m=$(median "$out/$a.bw")
  awk -v a="$a" -v m="$m" -v r="$ring" -v h="$hosts" -v s="$size" \
    'BEGIN {printf "%s on %s hosts, %s: median busbw %.3f GB/s%s\n", a, h, s, m,
            (r > 0 ? sprintf(", %.2fx ring", m / r) : "")}'
done
