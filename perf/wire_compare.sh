#!/bin/bash
# wire_compare.sh -- compressed averaging (ZCOLL_WIRE_DTYPE=bfloat16|float16) against float32
# on the wire: zcoll_perf's float32 allreduce, each wire type in turn, round by round so that
# a noisy machine disturbs them alike. Prints each run's busbw (out of place, the float32
# bytes the caller reduces) and the MiB the ranks put, then per size the median busbw of
# each wire type and its ratio to float32's.
#
#   perf/wire_compare.sh                       # build/, 4 ranks on this host (shm), 16M, 5 rounds
#   perf/wire_compare.sh -T ucx -s "1M 16M"    # UCX between the ranks of this host
#   perf/wire_compare.sh -H 2,2                # emulated hosts (tests/netns, needs root): UCX
#                                              # over TCP on veth between them, shm within
#   perf/wire_compare.sh -H 4 -n 1 -R 2gbit    # 4 hosts of 1 rank, each link shaped to 2 Gb/s
#   options: -B build dir, -n ranks, -o op (avg), -w "none bfloat16 float16", -r rounds
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build np=4 hosts="" tl="" sizes="16M" rounds=5 wires="none bfloat16 float16" op=avg
rate=""
while getopts B:n:H:T:s:r:w:o:R: o; do
  case $o in
    B) build=$(cd "$OPTARG" && pwd) ;;
    n) np=$OPTARG ;;
    H) hosts=$OPTARG ;;
    T) tl=$OPTARG ;;
    s) sizes=$OPTARG ;;
    r) rounds=$OPTARG ;;
    w) wires=$OPTARG ;;
    o) op=$OPTARG ;;
    R) rate=$OPTARG ;;
    *) sed -n 2,13p "$0"; exit 2 ;;
  esac
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() { # wire size -> the run's output in $out/cur
  local perf=("$build/zcoll_perf" -o "$op" -b "$2" -e "$2" -n 10 -w 3 -z 1 -c 0)
  if [ -n "$hosts" ]; then
    local x=(-x "ZCOLL_WIRE_DTYPE=$1")
    [ -n "$tl" ] && x+=(-x "ZCOLL_TRANSPORT=$tl")
    [ -n "$rate" ] && x+=(--rate "$rate")
    /usr/bin/python3 "$here/tests/netns/zcoll_netns.py" --hosts "$hosts" --timeout 300 "${x[@]}" \
      -- "${perf[@]}" > "$out/cur" 2>&1 || { cat "$out/cur"; exit 1; }
    sed -i 's/^\[h[0-9]* r[0-9]*\] //' "$out/cur"
  else
    env ZCOLL_WIRE_DTYPE="$1" ${tl:+ZCOLL_TRANSPORT=$tl} \
      "$build/zcoll_run" -np "$np" "${perf[@]}" > "$out/cur" 2>&1 || { cat "$out/cur"; exit 1; }
  fi
}
where=${hosts:+"hosts $hosts"}
where=${where:-"$np ranks on this host"}${tl:+", $tl"}${rate:+", links of $rate"}
for ((i = 1; i <= rounds; i++)); do
  for s in $sizes; do
    for w in $wires; do
      run "$w" "$s"
      bw=$(awk '$1 ~ /^[0-9]+$/ && NF > 10 {print $8; exit}' "$out/cur")
      mib=$(sed -n 's/.*: \([0-9.]* MiB within hosts, [0-9.]* MiB between hosts\).*/\1/p' \
        "$out/cur" | head -1)
      echo "round $i $s wire $w: busbw $bw GB/s${mib:+; put $mib}"
      echo "$bw" >> "$out/$s.$w"
    done
  done
done
median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for s in $sizes; do
  base=$(median "$out/$s.none" 2>/dev/null || echo 0)
  for w in $wires; do
    m=$(median "$out/$s.$w")
    awk -v w="$w" -v m="$m" -v b="$base" -v s="$s" -v where="$where" -v op="$op" \
      'BEGIN {printf "%s float32 %s, %s, wire %s: median busbw %.3f GB/s%s\n", s, op, where, w, m,
              (b > 0 && w != "none" ? sprintf(", %.2fx float32", m / b) : "")}'
  done
done
