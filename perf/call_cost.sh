#!/usr/bin/env bash
# call_cost.sh -- what one blocking allreduce costs in instructions and cache misses, per
# call and per function, measured by callgrind (valgrind) on every rank: deterministic where
# this VM's timings are not, and the VM has no hardware counters for perf stat.
#
#   perf/call_cost.sh -B build/rel                      # 8 B, p = 2, 20000 calls
#   perf/call_cost.sh -B /tmp/old/build -np 4 -s 64 -n 5000
#
# Each rank runs zcoll_perf -b S -e S -n N -w 100 -z 1 -c 0 under callgrind with its cache
# simulation (--cache-sim=yes: a private D1 and last level per process, so a line another
# rank wrote counts as a hit if it was cached before -- the coherence traffic between cores,
# which is what a small allreduce's misses are, is not seen: only a machine with hardware
# counters shows it). Printed per rank: zcoll_allreduce's inclusive instructions (Ir), data
# reads and writes and simulated misses per call, then its heaviest callees per call
# (inclusive; functions of set-up amortized over the calls are left out). A build is a directory
# holding zcoll_run and zcoll_perf (its libzcoll.so.0, if any, is the one they load).
# Raw outputs: perf/results/callgrind-<timestamp>/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=$ROOT/build/rel NP=2 S=8 N=20000 TOP=12
while [ $# -gt 0 ]; do
  case "$1" in
    -B) B=$2; shift 2 ;;
    -np) NP=$2; shift 2 ;;
    -s) S=$2; shift 2 ;;
    -n) N=$2; shift 2 ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "call_cost.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v valgrind >/dev/null || { echo "call_cost.sh: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
[ -x "$B/zcoll_run" ] && [ -x "$B/zcoll_perf" ] ||
  { echo "call_cost.sh: $B has no zcoll_run and zcoll_perf (-B DIR)" >&2; exit 2; }
B=$(cd "$B" && pwd)
RES=$ROOT/perf/results/callgrind-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RES"
export LD_LIBRARY_PATH=$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Warm-ups run under callgrind too: the counts cover N + 100 calls, and the table divides
# by the calls zcoll_allreduce made (its own count), so fixed start-up costs stay out.
"$B/zcoll_run" -np "$NP" --timeout 1200 valgrind --tool=callgrind --cache-sim=yes \
  --callgrind-out-file="$RES/callgrind.%q{ZCOLL_RANK}.out" -q \
  "$B/zcoll_perf" -b "$S" -e "$S" -n "$N" -w 100 -z 1 -c 0 >"$RES/perf.txt" 2>&1 ||
  { cat "$RES/perf.txt" >&2; echo "call_cost.sh: the run failed (see $RES)" >&2; exit 1; }
echo "# $B: $S bytes, p = $NP, $N timed calls; per zcoll_allreduce call (callgrind)"
for f in "$RES"/callgrind.*.out; do
  rank=${f##*callgrind.}; rank=${rank%.out}
  callgrind_annotate --inclusive=yes --threshold=100 "$f" >"$RES/annotate.$rank.txt" 2>/dev/null
  # the call count: the "calls=" lines under each "cfn=" naming zcoll_allreduce (callgrind
  # names a function once, "(id) name", and by "(id)" alone after that)
  calls=$(awk '
    /^c?fn=\([0-9]+\) zcoll_allreduce$/ { match($0, /\([0-9]+\)/); id = substr($0, RSTART, RLENGTH) }
    /^cfn=/ { want = id != "" && index($0, "cfn=" id) == 1 }
    /^calls=/ && want { split($1, a, "="); n += a[2]; want = 0 }
    END { print n + 0 }' "$f")
  # callgrind_annotate: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw, then "file:function [object]"
  awk -v rank="$rank" -v calls="$calls" -v top="$TOP" '
    NF >= 10 && $NF ~ /^\[/ {
      name = $(NF - 1); sub(/.*:/, "", name)
      v = 0
      for (i = 1; i < NF - 1 && v < 9; i++)
        if ($i ~ /^[0-9,]+$/ || $i == ".") { gsub(",", "", $i); c[++v] = $i + 0 }
      if (v < 9 || calls == 0) next
      if (name == "zcoll_allreduce" && !seen) {
        seen = 1
        printf "rank %s: %d calls; per call: %.0f Ir, %.0f data reads, %.0f writes; misses: D1 %.2f read %.2f write, LL %.2f read %.2f write\n",
          rank, calls, c[1] / calls, c[2] / calls, c[3] / calls, c[5] / calls, c[6] / calls, c[8] / calls, c[9] / calls
        next
      }
      if (seen && shown < top && c[1] / calls >= 10 && name !~ /^(main|pt_|perf_|_start|__libc|EVP_)|init|bootstrap|bs_/) {
        printf "    %8.0f Ir  %s\n", c[1] / calls, name; shown++
      }
    }' "$RES/annotate.$rank.txt"
done
echo "# raw outputs: $RES"
