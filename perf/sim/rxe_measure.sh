#!/usr/bin/env bash
# Verbs calibration data for the scale model, run inside the soft-RoCE guest:
#   flock /tmp/rxe.lock ci/rxe.sh -- perf/sim/rxe_measure.sh BUILD_DIR OUT_FILE
# (OUT_FILE under $ZCOLL_RXE_OUT or a --rw directory: the host's root is read-only there).
# perftest's raw RDMA WRITE bandwidth and latency between rxe0 and rxe1, then zcoll_perf
# over verbs at p = 2 (one rank per device: every byte crosses the veth), blocking calls
# on the slower rank, as measure.sh times shm.
set -euo pipefail
build=$1 out=$2
read -r addr0 _ <<<"${ZCOLL_RXE_ADDRS:-10.77.0.1 10.77.0.2}"
pair() { # tool size extra...: server on rxe0, client on rxe1
  local tool=$1 size=$2; shift 2
  "$tool" -d rxe0 -x 1 -F -s "$size" "$@" >/dev/null 2>&1 &
  local srv=$! o=""
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    if o=$("$tool" -d rxe1 -x 1 -F -s "$size" "$@" "$addr0" 2>&1); then break; fi
    sleep 0.5
  done
  wait "$srv" || true
  printf '%s\n' "$o"
}
{
  for size in 65536 1048576 4194304; do
    echo "## ib_write_bw $size (bytes, iters, peak MiB/s, average MiB/s, Mpps)"
    pair ib_write_bw "$size" -n 100 | awk -v s="$size" '$1 == s'
  done
  echo "## ib_write_lat 8 (bytes, iters, min, max, typical, avg us)"
  pair ib_write_lat 8 -n 1000 | awk '$1 == 8'
  for algo in ring butterfly; do
    echo "## zcoll_perf verbs np 2 algo $algo"
    ZCOLL_TRANSPORT=verbs "$build/zcoll_run" -np 2 "$build/zcoll_perf" -b 8 -e 4M -f 8 \
      -n 10 -w 2 -z 1 -a 3 -c 0 -A "$algo" 2>&1 | grep -v '^#'
  done
} >"$out"
