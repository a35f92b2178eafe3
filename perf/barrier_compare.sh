#!/usr/bin/env bash
# barrier_compare.sh -- zcoll_barrier beside zcoll's own 8-byte allreduce, Open MPI's
# MPI_Barrier (ob1, self+vader) and MPICH's, on this host, in turns.
#
#   perf/barrier_compare.sh                   # np 2 and 4, 9 rounds of 20000 calls
#   perf/barrier_compare.sh -np "2 4 8" -r 15 -n 50000
#
# Every program is the same harness (tools/harness/) timing blocking calls (-z 1), each
# rank's mean per call averaged over the ranks (-a 1): zcoll_perf -t barrier,
# zcoll_perf -b 8 -e 8 (float sum, in place), and perf/build/mpi_allreduce_perf -t barrier
# built here against Open MPI (perf/build: Debian's libopenmpi-dev, openmpi-bin) and MPICH
# (perf/build-mpich with mpicc.mpich: mpich, libmpich-dev), where their compilers are. A round
# runs the four one after the other, in an order that rotates; the table gives per rank
# count the median over rounds of each (us) and the ratios to zcoll's barrier. The machine
# is shared and noisy: only ratios from one run mean anything. A peer that is not built
# shows as n/a, and so does a run past 120 s. More ranks than cores: MPI's ranks spin, so
# a barrier waits for time slices (MPICH: ms each); those rank counts time N/50 calls (at
# least 200). Needs build/dev or -B DIR with zcoll_run and zcoll_perf.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NPS="2 4" R=9 N=20000 B=$ROOT/build/dev
while [ $# -gt 0 ]; do
  case "$1" in
    -np) NPS=$2; shift 2 ;;
    -r) R=$2; shift 2 ;;
    -n) N=$2; shift 2 ;;
    -B) B=$2; shift 2 ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "barrier_compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$B/zcoll_run" ] && [ -x "$B/zcoll_perf" ] ||
  { echo "barrier_compare.sh: $B has no zcoll_run and zcoll_perf (-B DIR)" >&2; exit 2; }
RES=$ROOT/perf/results/barrier-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RES"
# The peers (compare_lib.sh; a failed build: n/a).
# shellcheck source=perf/compare_lib.sh
source "$ROOT/perf/compare_lib.sh"
build_peers
iters() { if [ "$1" -le "$(nproc)" ]; then echo "$N"; else echo $((N / 50 > 200 ? N / 50 : 200)); fi; }

# The in-place time (us) of a table's first row; the barrier's row has only that one.
time_of() { awk '!/^#/ && NF >= 10 { print $10; exit }' "$1"; }

run() { # name np round -> prints the time, or n/a
  local name=$1 np=$2 out=$RES/$1-np$2-$3.txt
  local COMMON=(-z 1 -a 1 -n "$(iters "$np")" -w 100 -c 0)
  case "$name" in
    barrier) timeout -k 5 120 "$B/zcoll_run" -np "$np" "$B/zcoll_perf" -t barrier "${COMMON[@]}" ;;
    allreduce8) timeout -k 5 120 "$B/zcoll_run" -np "$np" "$B/zcoll_perf" -b 8 -e 8 "${COMMON[@]}" ;;
    ompi) [ -x "$OMPI" ] && timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe -np "$np" --mca pml ob1 \
      --mca btl self,vader "$OMPI" -t barrier "${COMMON[@]}" ;;
    mpich) [ -x "$MPICH" ] && timeout -k 5 120 mpirun.mpich -np "$np" "$MPICH" -t barrier "${COMMON[@]}" ;;
  esac >"$out" 2>&1 || { echo n/a; return; }
  time_of "$out"
}

NAMES=(barrier allreduce8 ompi mpich)
printf "# %s rounds of blocking calls (%s each; more ranks than cores: fewer), rotating order;\n# median us per call (ratio to zcoll_barrier)\n" "$R" "$N"
printf "%4s  %16s  %22s  %22s  %22s\n" np zcoll_barrier "zcoll 8 B allreduce" "Open MPI MPI_Barrier" "MPICH MPI_Barrier"
declare -A T M
for np in $NPS; do
  T=()
  for ((k = 0; k < R; k++)); do
    for ((j = 0; j < 4; j++)); do
      n=${NAMES[(j + k) % 4]}
      v=$(run "$n" "$np" "$k")
      [ "$v" = n/a ] || T[$n]+="$v "
    done
  done
  for n in "${NAMES[@]}"; do M[$n]=$(printf '%s\n' ${T[$n]:-} | median); done
  printf "%4s  %16s" "$np" "${M[barrier]}"
  for n in allreduce8 ompi mpich; do
    printf "  %22s" "${M[$n]} ($(ratio "${M[$n]}" "${M[barrier]}"))"
  done
  printf "\n"
done | tee "$RES/table.txt"
echo "# raw outputs: $RES"
