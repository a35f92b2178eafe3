#!/usr/bin/env bash
# Builds zcoll (Release) and runs zcoll_perf across local ranks on the default
# transport, printing its table. Every element is checked (-c 1).
# Usage: ci/perf.sh [-np N] [zcoll_perf flags...]     default: -np 4 -b 8 -e 64M -f 2 -c 1
set -euo pipefail
cd "$(dirname "$0")/.."
np=4
if [ "${1:-}" = "-np" ]; then np=$2; shift 2; fi
ci/deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DZCOLL_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j"$(nproc)" >/dev/null
if [ $# -eq 0 ]; then set -- -b 8 -e 64M -f 2 -c 1; fi
exec build/release/zcoll_run -np "$np" build/release/zcoll_perf "$@"
