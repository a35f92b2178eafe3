#!/usr/bin/env bash
# asgd_compare.sh -- examples/asgd non-blocking against --blocking, both progress modes,
# run in turns so that a noisy neighbour hits every variant alike.
#
#   perf/asgd_compare.sh                      # build/, np 2 and 4, 5 rounds
#   perf/asgd_compare.sh -B build/rel -np "4" -r 9 -- --every 16
#
# Per (ranks, mode, progress): the median over rounds of the time blocked inside zcoll
# (the slowest rank's, as asgd reports it) with min..max, and the median elapsed time of
# the 5 epochs. Arguments after -- go to asgd.
set -euo pipefail
build=build nps="2 4" rounds=5
while [ $# -gt 0 ]; do
  case "$1" in
    -B) build=$2; shift 2 ;;
    -np) nps=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "asgd_compare.sh: unknown argument '$1' (try -h)" >&2; exit 2 ;;
  esac
done
for f in zcoll_run asgd; do
  [ -x "$build/$f" ] || { echo "asgd_compare.sh: no $build/$f (build first)" >&2; exit 2; }
done
for r in $(seq "$rounds"); do
  for np in $nps; do for mode in non-blocking blocking; do for pr in caller thread; do
    extra=()
    [ "$mode" = blocking ] && extra=(--blocking)
    out=$(ZCOLL_PROGRESS=$pr "$build/zcoll_run" -np "$np" "$build/asgd" "${extra[@]}" "$@" \
          2>/dev/null) || { echo "asgd_compare.sh: np $np $mode $pr failed" >&2; exit 1; }
    blocked=$(sed -n 's/^asgd: ranks.*blocked in zcoll \([0-9.]*\) s.*/\1/p' <<<"$out")
    elapsed=$(grep '^epoch' <<<"$out" | tail -1 | sed 's/.*elapsed \([0-9.]*\) s.*/\1/')
    echo "$np $mode $pr $blocked $elapsed"
  done; done; done
  echo "round $r of $rounds done" >&2
done | /usr/bin/python3 -c '
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in sys.stdin:
    np, mode, pr, blocked, elapsed = line.split()
    runs[(int(np), mode, pr)].append((float(blocked), float(elapsed)))
print("# ranks mode         progress  blocked s, median [min..max]   elapsed s, median")
for key in sorted(runs):
    b = [x[0] for x in runs[key]]
    e = [x[1] for x in runs[key]]
    print("  %-5d %-12s %-9s %.4f [%.4f..%.4f]          %.4f" % (
        key[0], key[1], key[2], statistics.median(b), min(b), max(b), statistics.median(e)))'
