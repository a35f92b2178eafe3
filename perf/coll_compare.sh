#!/usr/bin/env bash
# coll_compare.sh -- one collective of zcoll beside Open MPI's (ob1, self+vader) and MPICH's,
# on this host, in turns, size by size.
#
#   perf/coll_compare.sh -t allgather                  # np 2 and 4, 8 B .. 4 MiB, x8
#   perf/coll_compare.sh -t reduce_scatter -np "2 4" -b 1K -e 16M -f 4 -r 5 -I
#   perf/coll_compare.sh -t barrier
#
# -t: allgather (MPI_Allgather), reduce_scatter (MPI_Reduce_scatter_block, float sum),
# reduce (MPI_Reduce to rank 0, float sum), barrier (MPI_Barrier), allreduce, broadcast,
# alltoall, alltoallv, allgatherv (MPI_Alltoall(v), MPI_Allgatherv: tools/harness/perf_xchg.h's
# uneven counts), gather and scatter (MPI_Gather, MPI_Scatter, root 0), sendrecv (each rank to
# rank+1 and from rank-1 at once: zcoll_isend + zcoll_irecv, MPI_Sendrecv; size is the one
# message, out of place only). Every program is the same harness
# (tools/harness/), timing blocking calls (-z 1), each rank's mean per call averaged over
# the ranks (-a 1), sizes as nccl-tests' (an allgather's and a reduce-scatter's: all ranks'
# blocks; an exchange's: one rank's total), every result checked: zcoll_perf under zcoll_run, and
# perf/build/mpi_allreduce_perf (Open MPI, Debian's libopenmpi-dev) and
# perf/build-mpich/mpi_allreduce_perf (mpicc.mpich: mpich, libmpich-dev), built here where
# their compilers are. A round runs the three one after the other in an order that rotates;
# the table gives per rank count and size the median over rounds (us, out of place; -I: in
# place) and each MPI's time over zcoll's (above 1: zcoll is faster). The machine is shared
# and noisy: only ratios from one run mean anything. A peer not built, failed or past 300 s
# shows as n/a; a wrong element fails the run. Needs build/dev (or -B DIR) with zcoll_run
# and zcoll_perf.
#
# -t allreduce adds, in the same rounds, zcoll with its buffers from zcoll_mem_alloc
# (zcoll_perf -M 1: memory the ranks can map) and one core's memcpy of the same size
# (perf/memcpy_perf.c, malloc'd buffers), and each zcoll's bus bandwidth over memcpy's
# (2(p-1)/p x bytes / time, against bytes / memcpy's time). Issue 25's table:
#   perf/coll_compare.sh -t allreduce -np "2 4" -b 8 -e 32M -f 8 -n 200 -w 100 -r 5 -B build/rel
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COLL=allgather NPS="2 4" R=3 MINB=8 MAXB=4M F=8 N=200 W=5 COL=6 B=$ROOT/build/dev
while [ $# -gt 0 ]; do
  case "$1" in
    -t) COLL=$2; shift 2 ;;
    -np) NPS=$2; shift 2 ;;
    -r) R=$2; shift 2 ;;
    -n) N=$2; shift 2 ;;
    -w) W=$2; shift 2 ;;
    -b) MINB=$2; shift 2 ;;
    -e) MAXB=$2; shift 2 ;;
    -f) F=$2; shift 2 ;;
    -I) COL=10; shift ;;
    -B) B=$2; shift 2 ;;
    -h | --help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "coll_compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$COLL" in
  allgather | reduce_scatter | reduce | allreduce | broadcast) ;;
  alltoall | alltoallv | allgatherv | gather | scatter | sendrecv) ;;
  barrier) COL=10 MINB=0 MAXB=0 ;;
  *) echo "coll_compare.sh: -t $COLL: allgather, reduce_scatter, reduce, barrier, allreduce, broadcast," \
    "alltoall, alltoallv, allgatherv, gather, scatter or sendrecv" >&2; exit 2 ;;
esac
[ "$COLL" = broadcast ] && COL=10 # one buffer: in place only
[ -x "$B/zcoll_run" ] && [ -x "$B/zcoll_perf" ] ||
  { echo "coll_compare.sh: $B has no zcoll_run and zcoll_perf (-B DIR)" >&2; exit 2; }
RES=$ROOT/perf/results/$COLL-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RES"
# shellcheck source=perf/compare_lib.sh
source "$ROOT/perf/compare_lib.sh"
build_peers
MEMCPY=$ROOT/perf/build/memcpy_perf
if [ "$COLL" = allreduce ]; then
  mkdir -p "$ROOT/perf/build"
  cc -O2 -o "$MEMCPY" "$ROOT/perf/memcpy_perf.c" >>"$RES/build.log" 2>&1 || rm -f "$MEMCPY"
fi
# More ranks than cores: MPI's ranks spin and wait for time slices; fewer calls then.
iters() { if [ "$1" -le "$(nproc)" ]; then echo "$N"; else echo $((N / 10 > 20 ? N / 10 : 20)); fi; }

run() { # name np round -> the table in $RES/name-npNP-ROUND.txt; status 0 if it ran right
  local name=$1 np=$2 out=$RES/$1-np$2-$3.txt
  local ARGS=(-t "$COLL" -b "$MINB" -e "$MAXB" -f "$F" -d float -o sum -z 1 -a 1 -n "$(iters "$np")" -w "$W")
  case "$name" in
    zcoll) timeout -k 5 300 "$B/zcoll_run" -np "$np" "$B/zcoll_perf" "${ARGS[@]}" ;;
    zcollm) timeout -k 5 300 "$B/zcoll_run" -np "$np" "$B/zcoll_perf" "${ARGS[@]}" -M 1 ;;
    memcpy) [ -x "$MEMCPY" ] && timeout -k 5 300 "$MEMCPY" -b "$(numfmt --from=iec "$MINB")" \
      -e "$(numfmt --from=iec "$MAXB")" -f "$F" -n "$N" -w "$W" && return 0 ;;
    ompi) [ -x "$OMPI" ] && timeout -k 5 300 mpirun --allow-run-as-root --oversubscribe -np "$np" \
      --mca pml ob1 --mca btl self,vader "$OMPI" "${ARGS[@]}" ;;
    mpich) [ -x "$MPICH" ] && timeout -k 5 300 mpirun.mpich -np "$np" "$MPICH" "${ARGS[@]}" ;;
  esac >"$out" 2>&1 || { rm -f "$out"; return 1; }
  grep -q 'Out of bounds values : 0 OK' "$out" || { echo "coll_compare.sh: wrong elements: $out" >&2; exit 1; }
}

# "size time" per data row of a table (time: column COL)
times_of() { awk -v c="$COL" '!/^#/ && NF >= 10 { print $1, $c }' "$1"; }

NAMES=(zcoll ompi mpich)
[ "$COLL" = allreduce ] && NAMES=(zcoll ompi mpich zcollm memcpy)
{
  printf "# %s: %s rounds of blocking calls, rotating order; median us per call (%s);\n" \
    "$COLL" "$R" "$([ "$COL" = 6 ] && echo out of place || echo in place)"
  printf "# in brackets each MPI's time over zcoll's (above 1: zcoll is faster)\n"
  if [ "$COLL" = allreduce ]; then
    printf "# zcoll -M: buffers from zcoll_mem_alloc; bus/memcpy: busbw over one core's memcpy\n"
    printf "%4s  %10s  %10s  %20s  %20s  %10s  %10s  %10s  %10s\n" np bytes zcoll "Open MPI" \
      MPICH "zcoll -M" memcpy bus/memcpy "-M bus/mc"
  else
    printf "%4s  %10s  %10s  %20s  %20s\n" np bytes zcoll "Open MPI" MPICH
  fi
} | tee "$RES/table.txt"
for np in $NPS; do
  for ((k = 0; k < R; k++)); do
    for ((j = 0; j < ${#NAMES[@]}; j++)); do
      run "${NAMES[(j + k) % ${#NAMES[@]}]}" "$np" "$k" || true
    done
  done
  sizes=$(for f in "$RES"/zcoll-np"$np"-*.txt; do [ -f "$f" ] && times_of "$f"; done | awk '{ print $1 }' | sort -gu)
  for s in $sizes; do
    declare -A M=()
    for n in "${NAMES[@]}"; do
      M[$n]=$(for f in "$RES/$n-np$np"-*.txt; do [ -f "$f" ] && times_of "$f"; done |
        awk -v s="$s" '$1 == s { print $2 }' | median)
    done
    if [ "$COLL" = allreduce ]; then
      # busbw / memcpy's bandwidth = 2(p-1)/p x memcpy's time / the allreduce's time
      bus() { awk -v p="$np" -v m="$1" -v t="$2" \
        'BEGIN { if (m + 0 > 0 && t + 0 > 0) printf "%.2f", 2 * (p - 1) / p * m / t; else print "n/a" }'; }
      printf "%4s  %10s  %10s  %20s  %20s  %10s  %10s  %10s  %10s\n" "$np" "$s" "${M[zcoll]}" \
        "${M[ompi]} ($(ratio "${M[ompi]}" "${M[zcoll]}"))" \
        "${M[mpich]} ($(ratio "${M[mpich]}" "${M[zcoll]}"))" "${M[zcollm]}" "${M[memcpy]}" \
        "$(bus "${M[memcpy]}" "${M[zcoll]}")" "$(bus "${M[memcpy]}" "${M[zcollm]}")"
    else
      printf "%4s  %10s  %10s  %20s  %20s\n" "$np" "$s" "${M[zcoll]}" \
        "${M[ompi]} ($(ratio "${M[ompi]}" "${M[zcoll]}"))" "${M[mpich]} ($(ratio "${M[mpich]}" "${M[zcoll]}"))"
    fi
  done
done | tee -a "$RES/table.txt"
echo "# raw outputs: $RES"
