#!/usr/bin/env bash
# Calibration data for the scale model: zcoll_perf over shm on this host, every
# algorithm at p = 2, 4, 8 (and p = 1, where no piece moves), blocking calls timed on the slowest rank (-z 1 -a 3), so
# that one row is one allreduce's latency, which is what the simulator predicts.
# Rounds interleave the algorithms so that a busy spell of the (shared) host smears over
# all of them instead of spoiling one; fit.py takes the median over rounds.
# 20 warmups, not 5: the first size of a run (8 B) came out 1.5-3x slower than the
# next with 5 (in every round of the 25 Nov data: butterfly, tree), which the fit then
# chased.
# Where the ranks fit the cores (p = 2 here) each rank is bound to its own core, as
# Open MPI's mpirun binds by default for np <= 2 (and as the model assumes there): left
# unbound, a p = 2 run sometimes put both ranks on one core while something else held
# the other, and the rounds split into two modes 5-40x apart (see README, Validation).
# p = 4, 8 outnumber the cores and run unbound, as mpirun runs them (bound to the socket).
# With "onehost" after ROUNDS: the one-host term's data instead (fit_onehost.py):
# zcoll_perf's default path at 8..512 B -- the mailboxes (lib/core/onehost.h), which the
# forced algorithms above never take -- at p = 2, 4, 8, timed and bound the same way,
# under "## round R np P algo onehost" headers.
# Usage: perf/sim/measure.sh BUILD_DIR OUT_FILE [ROUNDS [onehost]]
set -euo pipefail
build=$1 out=$2 rounds=${3:-7} what=${4:-schedules}
cores=$(nproc)
pin=(sh -c 'exec taskset -c "$ZCOLL_RANK" "$@"' pin)
: >"$out"
if [ "$what" = onehost ]; then
  for round in $(seq 1 "$rounds"); do
    for np in 2 4 8; do
      bind=()
      [ "$np" -le "$cores" ] && bind=("${pin[@]}")
      echo "## round $round np $np algo onehost" >>"$out"
      ZCOLL_TRANSPORT=shm "$build/zcoll_run" -np "$np" "${bind[@]}" "$build/zcoll_perf" \
        -b 8 -e 512 -f 2 -n 200 -w 50 -z 1 -a 3 -c 0 2>&1 | grep -v '^#' >>"$out"
    done
  done
  exit 0
fi
for round in $(seq 1 "$rounds"); do
  for np in 1 2 4 8; do
    bind=()
    [ "$np" -le "$cores" ] && bind=("${pin[@]}")
    algos="ring butterfly rhd tree hier"
    [ "$np" = 1 ] && algos=ring # p = 1 moves nothing: a call's own cost (fit.py's call_us)
    for algo in $algos; do
      echo "## round $round np $np algo $algo" >>"$out"
      ZCOLL_TRANSPORT=shm "$build/zcoll_run" -np "$np" "${bind[@]}" "$build/zcoll_perf" \
        -b 8 -e 16M -f 4 -n 20 -w 20 -z 1 -a 3 -c 0 -A "$algo" 2>&1 | grep -v '^#' >>"$out"
    done
  done
done
