#!/usr/bin/env bash
# ab.sh -- is a change slower? Two builds of zcoll and Open MPI, run in turns, medians.
#
#   perf/ab.sh -A /work/wt/base/build -B build                 # 8 B and 8 MiB, np 2
#   perf/ab.sh -A old/build -B build -np 4 -s "8 1M" -r 15
#
# On a shared, noisy machine one run of each says little: a neighbour's burst shifts a
# mean by 50%. So every round runs A, B and MPI's allreduce one after the other (A first
# in odd rounds, B first in even ones), at each size, and the table gives per size the median over rounds of each (time of the slowest
# rank, us), the spread (min..max), and B/A and B/MPI, the medians' ratios. A build is a
# directory holding zcoll_run and zcoll_perf (any build type; say which in the note); a
# libzcoll.so.0 in it is the one they use (LD_LIBRARY_PATH), so that variants of the
# library can be compared with one pair of programs. Every program times blocking calls
# and reports the slowest rank (-z 1 -a 3), except a zcoll_perf older than those flags,
# which knows no other way.
# Raw outputs: perf/results/ab-<timestamp>/.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: perf/ab.sh -A DIR -B DIR [-np 2] [-s "8 8M"] [-r 9] [-n N] [-I] [-P]
  -A DIR, -B DIR  build directories with zcoll_run and zcoll_perf (A: before, B: after)
  -np P           ranks (default 2)
  -s "SIZES"      sizes in bytes, K/M suffixes (default "8 8M")
  -r R            rounds (default 9)
  -n N            iterations per run (default: 20000 up to 4 KiB, 2000 up to 256 KiB,
                  else 100)
  -I              in place (default: out of place)
  -P              pin rank r to CPU r mod ncpus (taskset; MPI: --bind-to core): on a
                  VM, migrations alone move an 8-byte result by 30%
  --no-mpi        leave Open MPI out
EOF
}

A="" B="" NP=2 SIZES="8 8M" R=9 N="" PLACE=oop MPI=1 PIN=0
need() { [ $# -ge 2 ] || { echo "ab.sh: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    -A) need "$@"; A=$2; shift 2 ;;
    -B) need "$@"; B=$2; shift 2 ;;
    -np) need "$@"; NP=$2; shift 2 ;;
    -s) need "$@"; SIZES=$2; shift 2 ;;
    -r) need "$@"; R=$2; shift 2 ;;
    -n) need "$@"; N=$2; shift 2 ;;
    -I) PLACE=ip; shift ;;
    -P) PIN=1; shift ;;
    --no-mpi) MPI=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "ab.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[ -n "$A" ] && [ -n "$B" ] || { usage >&2; exit 2; }
for d in "$A" "$B"; do
  [ -x "$d/zcoll_run" ] && [ -x "$d/zcoll_perf" ] ||
    { echo "ab.sh: $d has no zcoll_run and zcoll_perf" >&2; exit 2; }
done
[[ "$NP" =~ ^[1-9][0-9]*$ ]] || { echo "ab.sh: -np: bad rank count '$NP'" >&2; exit 2; }
[[ "$R" =~ ^[1-9][0-9]*$ ]] || { echo "ab.sh: -r: bad round count '$R'" >&2; exit 2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bytes() { # 8M -> 8388608
  local v=${1%[KkMmGg]} m=1
  case "$1" in *[Kk]) m=1024 ;; *[Mm]) m=$((1024 * 1024)) ;; *[Gg]) m=$((1024 * 1024 * 1024)) ;; esac
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "ab.sh: bad size '$1'" >&2; exit 2; }
  echo $((v * m))
}
# -z 1 -a 3 for a program that knows them (zcoll_perf before nccl-tests' flags did
# exactly that, and refuses them)
modes() { if "$1" -h 2>/dev/null | grep -q -- --blocking; then echo "-z 1 -a 3"; fi; }
iters() {
  if [ -n "$N" ]; then echo "$N"
  elif [ "$1" -le 4096 ]; then echo 20000
  elif [ "$1" -le 262144 ]; then echo 2000
  else echo 100; fi
}

MPI_BIN=$ROOT/perf/build/mpi_allreduce_perf
if [ "$MPI" = 1 ]; then
  command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
    { echo "ab.sh: needs Open MPI (apt-get install libopenmpi-dev openmpi-bin) or --no-mpi" >&2; exit 2; }
  # the peers' project (perf/CMakeLists.txt): the MPI driver and the harness it links
  { cmake -S "$ROOT/perf" -B "$ROOT/perf/build" &&
    cmake --build "$ROOT/perf/build" --target mpi_allreduce_perf; } >/dev/null ||
    { echo "ab.sh: cannot build $MPI_BIN (perf/CMakeLists.txt), or use --no-mpi" >&2; exit 2; }
fi

PINNED=() MPI_PIN=()
if [ "$PIN" = 1 ]; then
  command -v taskset >/dev/null || { echo "ab.sh: -P needs taskset (util-linux)" >&2; exit 2; }
  # zcoll_run gives each rank ZCOLL_RANK: a rank pins itself before it becomes zcoll_perf.
  PINNED=(sh -c 'exec taskset -c $((ZCOLL_RANK % $(nproc))) "$@"' pin)
  MPI_PIN=(--bind-to core --map-by core)
  [ "$NP" -le "$(nproc)" ] || MPI_PIN=(--bind-to core --map-by core:OVERSUBSCRIBE)
fi

RES=$ROOT/perf/results/ab-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RES"
{
  echo "date: $(date -Is)"
  echo "A: $A ($(git -C "$A" rev-parse --short HEAD 2>/dev/null || echo '?'))"
  echo "B: $B ($(git -C "$B" rev-parse --short HEAD 2>/dev/null || echo '?'))"
  echo "np $NP, sizes $SIZES, rounds $R, $PLACE, pinned: $PIN"
} >"$RES/info.txt"
col=6; [ "$PLACE" = ip ] && col=10
one() { # label size iters command... -> "label size time" on stdout
  local label=$1 size=$2; shift 2
  local t
  t=$(timeout -k 5 600 "$@" 2>>"$RES/stderr.txt" | tee -a "$RES/$label.out" |
      awk -v c="$col" '!/^#/ && NF >= 13 {print $c; exit}') || true
  echo "$label $size ${t:-nan}"
}
for r in $(seq "$R"); do
  for s in $SIZES; do
    b=$(bytes "$s") n=$(iters "$b")
    ARGS=(-b "$b" -e "$b" -n "$n" -w 50 -c 0)
    order="A B"
    [ $((r % 2)) = 0 ] && order="B A" # ABBA: whatever favours the first or second run cancels
    for l in $order; do
      d=$A; [ "$l" = B ] && d=$B
      # shellcheck disable=SC2046 # modes prints words, or nothing
      one "$l" "$b" env LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$d/zcoll_run" -np "$NP" "${PINNED[@]}" "$d/zcoll_perf" "${ARGS[@]}" $(modes "$d/zcoll_perf")
    done
    [ "$MPI" = 0 ] || one MPI "$b" mpirun --allow-run-as-root --oversubscribe -np "$NP" \
      "${MPI_PIN[@]}" --mca pml ob1 --mca btl self,vader "$MPI_BIN" "${ARGS[@]}" -z 1 -a 3
  done
  echo "round $r of $R done" >&2
done >"$RES/times.txt"

/usr/bin/python3 - "$RES/times.txt" <<'PY' | tee "$RES/table.txt"
import collections, math, statistics, sys
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    label, size, v = line.split()
    if v != "nan":
        t[(int(size), label)].append(float(v))
sizes = sorted({s for s, _ in t})
labels = [l for l in ("A", "B", "MPI") if any((s, l) in t for s in sizes)]
print("# median over rounds of the slowest rank's time per call (us); min..max in brackets")
print("#%11s" % "bytes" + "".join("%28s" % l for l in labels) + "%8s" % "B/A" +
      ("%8s" % "B/MPI" if "MPI" in labels else ""))
for s in sizes:
    med = {l: statistics.median(t[(s, l)]) for l in labels if t[(s, l)]}
    row = "%12d" % s
    for l in labels:
        v = t[(s, l)]
        row += "%28s" % ("%.4g [%.4g..%.4g]" % (med[l], min(v), max(v)) if v else "-")
    row += "%8.3f" % (med["B"] / med["A"]) if "A" in med and "B" in med else "%8s" % "-"
    if "MPI" in labels:
        row += "%8.3f" % (med["B"] / med["MPI"]) if "MPI" in med and "B" in med else "%8s" % "-"
    print(row)
PY
echo "== results in ${RES#"$ROOT"/}"
