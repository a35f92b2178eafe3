#!/usr/bin/env bash
# A real job of 4 ranks launched through PMIx with no ZCOLL_* variable at all: rank,
# size, rank 0's address and the job key must all come from the launcher.
# Usage: launch_pmix.sh srun|mpirun|srun-comms|mpirun-timeout PROG [HAVE_PMIX]
#   srun            srun -n 4 --mpi=pmix (a Slurm up on this host: ci/slurm.sh start)
#   mpirun          Open MPI's mpirun -np 4
#   srun-comms      PROG is tests/progs/comms_nested: 3 communicators per process
#   mpirun-timeout  rank 1 never calls zcoll_comm_init: rank 0 must fail, naming PMIx,
#                   within ZCOLL_TIMEOUT (the one variable set, on rank 0 only)
#   HAVE_PMIX       0 when zcoll was built without PMIx's headers (CMake says)
# Exit 77 (skip) when the launcher is missing, unless CI=true: there nothing may skip.
set -uo pipefail
mode=$1 perf=$2 have_pmix=${3:-1}
np=4

skip() {
  if [ "${CI:-}" = true ]; then echo "FAIL: $* (CI=true: this test must run)"; exit 1; fi
  echo "SKIP: $*"
  exit 77
}
fail() { echo "FAIL ($mode): $*"; echo "---- output"; cat "$out"; exit 1; }

# Nothing of ours may leak in from the caller: the point is that none is needed.
for v in $(compgen -e); do [[ $v == ZCOLL_* ]] && unset "$v"; done
if env | grep -q '^ZCOLL_'; then echo "FAIL: ZCOLL_* still set: $(env | grep '^ZCOLL_')"; exit 1; fi
# libpmix's own allocations that it keeps until exit are not ours to report.
if [ -n "${ASAN_OPTIONS:-}" ]; then
  export LSAN_OPTIONS="suppressions=$(dirname "$0")/lsan_pmix.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
fi

[ "$have_pmix" = 1 ] || skip "zcoll was built without PMIx (libpmix-dev)"
slurm_up() {
  command -v srun >/dev/null || skip "Slurm's srun is not installed (ci/deps.sh)"
  sinfo -h -o %t 2>/dev/null | grep -qE 'idle|mix|alloc' ||
    skip "no Slurm node is up here (ci/slurm.sh start)"
  srun --mpi=list 2>&1 | grep -q pmix || skip "Slurm has no pmix plugin (libpmix-dev)"
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
args=(-c 1 -b 8 -e 1M -f 4 -n 5 -w 2)
t0=$SECONDS
case $mode in
  srun)
    slurm_up
    # -O: 4 ranks on fewer cores; zcoll does not spin when oversubscribed.
    timeout 120 srun -n $np -O --mpi=pmix "$perf" "${args[@]}" >"$out" 2>&1
    ;;
  mpirun)
    command -v mpirun >/dev/null || skip "Open MPI's mpirun is not installed (ci/deps.sh)"
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np $np "$perf" "${args[@]}" \
      >"$out" 2>&1
    ;;
  srun-comms)
    slurm_up
    timeout 120 srun -n 3 -O --mpi=pmix "$perf" >"$out" 2>&1
    rc=$?
    [ $rc -eq 0 ] || fail "exit status $rc"
    [ "$(grep -c '^comms ok via PMIx$' "$out")" -eq 3 ] || fail "not every rank's sums exact"
    echo "OK ($mode): 3 communicators per process, 3 ranks, through PMIx"
    exit 0
    ;;
  mpirun-timeout)
    command -v mpirun >/dev/null || skip "Open MPI's mpirun is not installed (ci/deps.sh)"
    # shellcheck disable=SC2016 # expanded by each rank's shell
    timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 sh -c \
      'if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then ZCOLL_TIMEOUT=2 exec "$0" -b 8 -e 8 -c 1;
       else sleep 12; fi' "$perf" >"$out" 2>&1
    rc=$?
    took=$((SECONDS - t0))
    [ $rc -ne 0 ] || fail "the job succeeded with a rank missing"
    [ $rc -ne 124 ] || fail "hung until timeout(1) killed it"
    grep -q 'PMIx_Fence: not every rank of namespace .* reached zcoll_comm_init within 2 s' \
      "$out" || fail "rank 0's error does not name the PMIx fence"
    [ $took -lt 12 ] || fail "rank 0 gave up after $took s, not within ZCOLL_TIMEOUT=2 s"
    echo "OK ($mode): rank 0 failed after ${took} s naming the fence"
    exit 0
    ;;
  *) echo "usage: $0 srun|mpirun|srun-comms|mpirun-timeout PROG [HAVE_PMIX]"; exit 2 ;;
esac
rc=$?
[ $rc -ne 124 ] || fail "hung: killed after 120 s"
[ $rc -eq 0 ] || fail "exit status $rc"
grep -q "^# zcoll_perf: .*ranks $np,.*launcher PMIx$" "$out" ||
  fail "rank 0 does not say it ran $np ranks launched through PMIx"
grep -q '^# Out of bounds values : 0 OK$' "$out" || fail "wrong elements (-c 1)"
# Every row checked and none wrong: the #wrong columns (out-of-place and in-place).
# NF: a table row, not a count that a sanitizer's summary starts with.
rows=$(awk '$1 ~ /^[0-9]+$/ && NF >= 14 { n++; if ($9 != 0 || $13 != 0) bad++ }
            END { print n + 0, bad + 0 }' "$out")
[ "${rows% *}" -ge 5 ] && [ "${rows#* }" -eq 0 ] || fail "rows, wrong rows: $rows"
! grep -qi 'unauthenticated\|warn' "$out" || fail "a warning (the key should come through PMIx)"
echo "OK ($mode): $np ranks through PMIx, ${rows% *} sizes exact, $((SECONDS - t0)) s"
