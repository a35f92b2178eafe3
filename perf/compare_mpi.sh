#!/usr/bin/env bash
# compare_mpi.sh -- zcoll_perf against Open MPI's MPI_Allreduce, side by side, on this host.
#
#   perf/compare_mpi.sh                       # np 2 and 4, 8 B .. 64 MiB, float sum
#   perf/compare_mpi.sh -np "2 4 8" -e 8M -d double -o all -- -c 0
#
# Builds zcoll if needed (build/, Release; an existing build/ is reused as it is
# configured), builds perf/build/mpi_allreduce_perf with mpicc (installing Debian's Open
# MPI if mpicc is missing), then for every rank count runs both benchmarks with the same
# flags and prints one table per rank count and dtype/op: time and busbw of each, and the
# ratios. Raw outputs and the tables go to perf/results/<timestamp>/.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: perf/compare_mpi.sh [-np "2 4"] [-b 8] [-e 64M] [-f 2] [-n 20] [-w 5] [-d float]
                           [-o sum] [-A algorithm] [-I] [-t seconds] [-- args for both]
  -np LIST   rank counts to run, space separated (default "2 4")
  -b, -e, -f, -n, -w, -d, -o   passed to both benchmarks (see zcoll_perf -h)
  -A NAME    zcoll algorithm (zcoll_perf -A; MPI picks its own)
  -I         compare the in-place columns (default: out-of-place)
  -t SECS    time limit of each benchmark run (default 1800)
  -- ARGS    further arguments given to both benchmarks (e.g. -- -c 0)
Results: perf/results/<timestamp>/{zcoll,mpi}_np<P>.{out,err}, compare.txt, info.txt
EOF
}

CMDLINE="$*"
NPS="2 4" B=8 E=64M F=2 N=20 W=5 D=float O=sum ALGO="" PLACE=oop TMO=1800
PASS=()
need() { [ $# -ge 2 ] || { echo "compare_mpi.sh: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    -np|--np) need "$@"; NPS=$2; shift 2 ;;
    -b) need "$@"; B=$2; shift 2 ;;
    -e) need "$@"; E=$2; shift 2 ;;
    -f) need "$@"; F=$2; shift 2 ;;
    -n) need "$@"; N=$2; shift 2 ;;
    -w) need "$@"; W=$2; shift 2 ;;
    -d) need "$@"; D=$2; shift 2 ;;
    -o) need "$@"; O=$2; shift 2 ;;
    -A|--algo) need "$@"; ALGO=$2; shift 2 ;;
    -a) echo "compare_mpi.sh: -a: zcoll's algorithm is now -A (zcoll_perf's -a is nccl-tests' averaging)" >&2; exit 2 ;;
    -I) PLACE=ip; shift ;;
    -t) need "$@"; TMO=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; PASS=("$@"); break ;;
    *) echo "compare_mpi.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for p in $NPS; do
  [[ "$p" =~ ^[1-9][0-9]*$ ]] || { echo "compare_mpi.sh: -np: bad rank count '$p'" >&2; exit 2; }
done

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
JOBS=$(nproc 2>/dev/null || echo 2)

# ---- zcoll ------------------------------------------------------------------------
if [ ! -f build/CMakeCache.txt ]; then
  echo "== configuring zcoll (build/, Release)"
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' build/CMakeCache.txt)
[ "$BUILD_TYPE" = Release ] ||
  echo "== note: build/ is a '${BUILD_TYPE:-?}' build, not Release: zcoll numbers may be slower" >&2
echo "== building zcoll_perf and zcoll_run in build/"
cmake --build build -j"$JOBS" --target zcoll_perf zcoll_run >/dev/null

# ---- Open MPI ---------------------------------------------------------------------
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  echo "== mpicc/mpirun not found: installing libopenmpi-dev openmpi-bin"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get install -y libopenmpi-dev openmpi-bin >/dev/null ||
    { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y libopenmpi-dev openmpi-bin >/dev/null; }
fi
MPI_BIN=perf/build/mpi_allreduce_perf
echo "== building $MPI_BIN with mpicc (perf/CMakeLists.txt, with the harness it links)"
cmake -S perf -B perf/build >/dev/null
cmake --build perf/build -j"$JOBS" --target mpi_allreduce_perf >/dev/null

# ---- runs -------------------------------------------------------------------------
RES=perf/results/$(date +%Y%m%d-%H%M%S)
mkdir -p "$RES"
# -z 1: the latency of blocking calls, as this comparison always measured (-- -z 0 for
# the non-blocking, pipelined one)
ARGS=(-b "$B" -e "$E" -f "$F" -n "$N" -w "$W" -d "$D" -o "$O" -z 1 ${PASS[@]+"${PASS[@]}"})
ZARGS=("${ARGS[@]}")
[ -z "$ALGO" ] || ZARGS+=(-A "$ALGO")
{
  echo "date: $(date -Is)"
  echo "command: perf/compare_mpi.sh $CMDLINE"
  echo "host: $(uname -srm), $(nproc) cpus, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
  echo "zcoll: $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(git diff --quiet 2>/dev/null || echo '(modified)'), build/ $BUILD_TYPE"
  echo "mpi: $(mpirun --version 2>/dev/null | head -1)"
  echo "zcoll_perf args: ${ZARGS[*]}"
  echo "mpi_allreduce_perf args: ${ARGS[*]}"
} >"$RES/info.txt"

STATUS=0
for p in $NPS; do
  echo "== np $p: zcoll_perf"
  rc=0
  timeout -k 10 "$TMO" build/zcoll_run -np "$p" build/zcoll_perf "${ZARGS[@]}" \
    >"$RES/zcoll_np$p.out" 2>"$RES/zcoll_np$p.err" || rc=$?
  echo "$rc" >"$RES/zcoll_np$p.rc"
  [ "$rc" -eq 0 ] || { echo "   zcoll_perf exited with status $rc (see $RES/zcoll_np$p.err)"; STATUS=1; }
  echo "== np $p: mpi_allreduce_perf"
  rc=0
  timeout -k 10 "$TMO" mpirun --allow-run-as-root --oversubscribe -np "$p" --mca pml ob1 \
    --mca btl self,vader "$MPI_BIN" "${ARGS[@]}" \
    >"$RES/mpi_np$p.out" 2>"$RES/mpi_np$p.err" || rc=$?
  echo "$rc" >"$RES/mpi_np$p.rc"
  [ "$rc" -eq 0 ] || { echo "   mpi_allreduce_perf exited with status $rc (see $RES/mpi_np$p.err)"; STATUS=1; }
done

# ---- the side-by-side tables ------------------------------------------------------
python3 - "$RES" "$PLACE" $NPS <<'PY' | tee "$RES/compare.txt"
import math, os, sys

res, place, nps = sys.argv[1], sys.argv[2], [int(p) for p in sys.argv[3:]]
col = 5 if place == "oop" else 9  # first column (time) of the chosen placement


def parse(path):
    """{(type, op): {bytes: (time_us, wrong, algorithm)}} and the banner line."""
    rows, banner = {}, ""
    if not os.path.exists(path):
        return rows, banner
    with open(path) as f:
        for line in f:
            if (line.startswith("# zcoll_perf:") or line.startswith("# mpi_allreduce_perf:")) \
                    and not banner:  # the first banner line: the library, transport, ranks
                banner = line[2:].strip()
            if line.startswith("#"):
                continue
            w = line.split()
            if len(w) < 13 or not w[0].isdigit():
                continue
            try:
                t = float(w[col])
            except ValueError:
                continue
            wrong = w[col + 3]
            algo = w[13] if len(w) > 13 else ""
            rows.setdefault((w[2], w[3]), {})[int(w[0])] = (t, wrong, algo)
    return rows, banner


def rc_of(path):
    try:
        return open(path).read().strip()
    except OSError:
        return "?"


def why(base, rc):
    """The benchmark's own error line, when it failed."""
    if rc == "0":
        return ""
    try:
        lines = [l.strip() for l in open(base + ".err") if l.strip()]
    except OSError:
        return ""
    own = [l for l in lines if l.startswith(("zcoll_perf:", "mpi_allreduce_perf:"))]
    return ": " + (own or lines or ["?"])[0][:160]


def bw(size, t, p):
    return size / t / 1e3 * 2 * (p - 1) / p if t > 0 else 0.0


def fmt(v, spec):
    return format(v, spec) if v is not None else "-"


for p in nps:
    z, zb = parse(f"{res}/zcoll_np{p}.out")
    m, mb = parse(f"{res}/mpi_np{p}.out")
    zrc, mrc = rc_of(f"{res}/zcoll_np{p}.rc"), rc_of(f"{res}/mpi_np{p}.rc")
    print(f"# np {p}, {'in-place' if place == 'ip' else 'out-of-place'}")
    print(f"#   zcoll: {zb or 'no output'} (exit {zrc}){why(f'{res}/zcoll_np{p}', zrc)}")
    print(f"#   MPI:   {mb or 'no output'} (exit {mrc}){why(f'{res}/mpi_np{p}', mrc)}")
    keys = list(z) + [k for k in m if k not in z]
    if not keys:
        print("#   no rows to compare\n#")
        continue
    for key in keys:
        zr, mr = z.get(key, {}), m.get(key, {})
        print(f"# {key[0]} {key[1]}")
        print("# %12s %12s %12s %12s %12s %10s %10s  %s" % ("size(B)", "zcoll(us)", "MPI(us)",
              "zcoll busbw", "MPI busbw", "busbw z/M", "time z/M", "zcoll algorithm"))
        ratios = []
        for size in sorted(set(zr) | set(mr)):
            zt = zr[size][0] if size in zr else None
            mt = mr[size][0] if size in mr else None
            zbw = bw(size, zt, p) if zt is not None else None
            mbw = bw(size, mt, p) if mt is not None else None
            tr = zt / mt if zt and mt else None
            br = mt / zt if zt and mt and p > 1 else None  # same bytes, same p
            if tr:
                ratios.append(tr)
            note = zr[size][2] if size in zr else ""
            bad = [n for n, r in (("zcoll", zr), ("MPI", mr))
                   if size in r and r[size][1] not in ("0", "N/A")]
            if bad:
                note += "  WRONG: " + ", ".join(bad)
            print("  %12d %12s %12s %12s %12s %10s %10s  %s" % (
                size, fmt(zt, ".2f"), fmt(mt, ".2f"), fmt(zbw, ".3f"), fmt(mbw, ".3f"),
                fmt(br, ".3f"), fmt(tr, ".3f"), note))
        if ratios:
            g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            print(f"# geometric mean of time zcoll/MPI over {len(ratios)} sizes: {g:.3f}")
        print("#")
PY
echo "== results in $RES"
exit $STATUS
