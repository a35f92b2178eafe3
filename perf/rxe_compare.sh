#!/usr/bin/env bash
# zcoll_perf over verbs beside perftest's ib_write_bw / ib_write_lat, on the same soft-RoCE
# devices in the same guest (ci/rxe.sh): the ratio to the raw link, two rails against one,
# in one command; ZCOLL_RXE_BENCH_BASE=DIR also sets this build against another one's
# zcoll_perf (e.g. the commit before a change, built with -DZCOLL_BUILD_TESTS=OFF).
# Usage: [ZCOLL_RXE_BENCH_BASE=DIR] perf/rxe_compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ci/deps.sh perftest
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DZCOLL_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j"$(nproc)" >/dev/null
exec ci/rxe.sh -- perf/rxe_bench.sh build/release
