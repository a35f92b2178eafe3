# compare_lib.sh -- what perf/barrier_compare.sh and perf/coll_compare.sh share: building the
# MPI peers (perf/CMakeLists.txt, with the harness they link) where their compilers are, and
# the median and ratio of the tables. Sourced, with ROOT and RES set.

# build_peer DIR [cmake args]: DIR/mpi_allreduce_perf, or none after a failed build (n/a)
build_peer() {
  local dir=$1
  shift
  { cmake -S "$ROOT/perf" -B "$dir" "$@" && cmake --build "$dir" --target mpi_allreduce_perf; } \
    >>"$RES/build.log" 2>&1 || rm -f "$dir/mpi_allreduce_perf"
}

# Open MPI's (perf/build: libopenmpi-dev) and MPICH's (perf/build-mpich: mpicc.mpich) peers.
build_peers() {
  OMPI=$ROOT/perf/build/mpi_allreduce_perf MPICH=$ROOT/perf/build-mpich/mpi_allreduce_perf
  if command -v mpicc >/dev/null; then build_peer "$ROOT/perf/build"; fi
  if command -v mpicc.mpich >/dev/null; then build_peer "$ROOT/perf/build-mpich" -DMPICC=mpicc.mpich; fi
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "n/a" }'; }
