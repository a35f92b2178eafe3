#!/usr/bin/env bash
# init_scale.sh -- how zcoll_comm_init scales with the number of local ranks (issue 11).
#
#   perf/init_scale.sh                          # build/, 32 64 128 256 ranks, 5 rounds
#   perf/init_scale.sh -B build/rel -np "64 512" -r 9 -x ZCOLL_TRANSPORT=ucx
#
# Every rank only initializes and destroys a communicator (perf/init_scale.c, compiled here
# against the build's library). A round runs each rank count once, in turns, so that a noisy
# neighbour hits every count alike. Per rank count, medians over the rounds of: the job's wall
# time (zcoll_run, fork to last exit), the span from the first rank's start to the last
# rank's return from init, and over the ranks of a job the median and the slowest init and
# the median destroy. "x" is the wall time against the previous row's, scaled to per-rank
# work: 1.00 is linear in the ranks, above it worse.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build nps="32 64 128 256" rounds=5 xs=()
while [ $# -gt 0 ]; do
  case "$1" in
    -B) build=$2; shift 2 ;;
    -np) nps=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -x) xs+=(-x "$2"); shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "init_scale.sh: unknown argument '$1' (try -h)" >&2; exit 2 ;;
  esac
done
[ -x "$build/zcoll_run" ] && [ -e "$build/libzcoll.so" ] ||
  { echo "init_scale.sh: no $build/zcoll_run or libzcoll.so (build first)" >&2; exit 2; }
lib=$(cd "$build" && pwd)
prog=$lib/zcoll_init_scale
if [ ! -x "$prog" ] || [ perf/init_scale.c -nt "$prog" ] || [ "$lib/libzcoll.so" -nt "$prog" ]; then
  cc -std=c11 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra -Werror -Iinclude perf/init_scale.c \
     -L"$lib" -lzcoll -Wl,-rpath,"$lib" -o "$prog"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$rounds"); do
  for np in $nps; do
    t0=$EPOCHREALTIME
    "$build/zcoll_run" -np "$np" "${xs[@]}" --timeout 600 "$prog" >"$out/job" ||
      { echo "init_scale.sh: $np ranks failed (round $r)" >&2; exit 1; }
    t1=$EPOCHREALTIME
    echo "job $np $t0 $t1" >>"$out/all"
    grep '^init_scale ' "$out/job" >>"$out/all"
  done
  echo "init_scale.sh: round $r of $rounds done" >&2
done
/usr/bin/python3 - "$out/all" "$nps" <<'PY'
import collections, statistics as st, sys
runs = collections.defaultdict(list)  # np -> [(wall, span, init med, init max, destroy med)]
job, ranks = None, []
def close():
    if job:
        np_, wall = job
        assert len(ranks) == np_, f"{len(ranks)} of {np_} ranks reported"
        init = [(t1 - t0) * 1e3 for t0, t1, _ in ranks]
        span = max(t1 for _, t1, _ in ranks) - min(t0 for t0, _, _ in ranks)
        runs[np_].append((wall, span, st.median(init), max(init),
                          st.median([(t2 - t1) * 1e3 for _, t1, t2 in ranks])))
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "job":
        close()
        job, ranks = (int(f[1]), float(f[3]) - float(f[2])), []
    else:
        ranks.append(tuple(map(float, f[3:6])))
close()
print("| ranks | job wall s | start->last ready s | init ms median | init ms max "
      "| destroy ms median | x |")
print("|---|---|---|---|---|---|---|")
prev = None
for np_ in map(int, sys.argv[2].split()):
    m = [st.median(col) for col in zip(*runs[np_])]
    x = f"{m[0] / prev[1] / (np_ / prev[0]):.2f}" if prev else ""
    print(f"| {np_} | {m[0]:.3f} | {m[1]:.3f} | {m[2]:.1f} | {m[3]:.1f} | {m[4]:.1f} | {x} |")
    prev = (np_, m[0])
print(f"(medians over {len(runs[np_])} rounds)")
PY
