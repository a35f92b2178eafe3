#!/usr/bin/env bash
# Builds every libFuzzer target in tests/fuzz/ with clang and runs each for a bounded
# time; exits non-zero if any target finds a crash (its reproducer is left in the
# build folder's fuzz/ directory, named after the target).
# Usage: ci/fuzz.sh [seconds per target, default 60] [build dir, default build/fuzz] [--build-only]
# (--build-only: build the targets and stop; CI builds them while other stages run)
set -euo pipefail
cd "$(dirname "$0")/.."
ci/deps.sh clang-14 libclang-rt-14-dev # libFuzzer's runtime is in the -rt package
secs=${1:-60}
build=${2:-build/fuzz}
build_only=${3:-}
cc=${FUZZ_CC:-$(command -v clang-14 || command -v clang)}
cmake -S . -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DZCOLL_FUZZ=ON -DZCOLL_BUILD_TESTS=OFF >/dev/null
targets=()
for src in tests/fuzz/fuzz_*.c; do
  [ -e "$src" ] || continue
  targets+=("$(basename "$src" .c)")
done
if ((${#targets[@]} == 0)); then
  echo "ci/fuzz.sh: no fuzz targets in tests/fuzz" >&2
  exit 1
fi
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
[ "$build_only" = --build-only ] && exit 0
out="$build/fuzz"
mkdir -p "$out"
# The targets run side by side, one per core: each is one process.
pids=()
for t in "${targets[@]}"; do
  corpus="$out/$t.corpus"
  mkdir -p "$corpus"
  echo "ci/fuzz.sh: $t for ${secs}s" >&2
  "$build/tests/fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$out/$t-" -print_final_stats=1 "$corpus" >"$out/$t.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  if ! wait "${pids[$i]}"; then
    echo "ci/fuzz.sh: $t FAILED; see $out/$t.log and $out/$t-*" >&2
    tail -40 "$out/$t.log" >&2
    status=1
  fi
done
exit $status
