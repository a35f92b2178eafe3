#!/usr/bin/env bash
# clang-tidy 14 (Debian 12's, installed by ci/deps.sh) with the repository's .clang-tidy
# over the library: lib/, transports/ and algorithms/, each file compiled as the build
# compiles it (compile_commands.json, which CMakeLists.txt always writes). Any finding fails;
# fix it, or keep it with a NOLINT(check) comment saying why (.clang-tidy says how).
# Usage: ci/tidy.sh [build dir, default build/tidy] [file regex, default the three folders]
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_TIDY=${CLANG_TIDY:-clang-tidy-14}
RUN_CLANG_TIDY=${RUN_CLANG_TIDY:-run-clang-tidy-14}
build=${1:-build/tidy}
files=${2:-"$PWD/(lib|transports|algorithms)/"}
for t in "$CLANG_TIDY" "$RUN_CLANG_TIDY"; do
  command -v "$t" >/dev/null ||
    { echo "ci/tidy.sh: $t not found (ci/deps.sh clang-tidy-14 installs it)" >&2; exit 2; }
done
if [ ! -f "$build/compile_commands.json" ]; then
  # Configuring is enough: clang-tidy compiles the sources itself; nothing is generated.
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZCOLL_BUILD_TESTS=OFF >/dev/null
fi
t0=$SECONDS
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
"$RUN_CLANG_TIDY" -clang-tidy-binary "$(command -v "$CLANG_TIDY")" -j "$(nproc)" -quiet \
  -p "$build" "$files" >"$log" 2>&1 || rc=$?
sed -i 's/\x1b\[[0-9;]*m//g' "$log" # it colours its output even into a file
# run-clang-tidy prints each finding with its notes; the summary counts findings by check.
findings=$(grep -E '^/.*: (warning|error): ' "$log" | sort -u || true)
if [ "$rc" -ne 0 ] || [ -n "$findings" ]; then
  noise='^([^ ]*clang-tidy|[0-9]+ warnings? (and [0-9]+ errors? )?generated|Suppressed|Use -header)'
  grep -vE "$noise" "$log" || true
  echo "ci/tidy.sh: $(printf '%s\n' "$findings" | grep -c . || true) findings by check:" >&2
  printf '%s\n' "$findings" | grep -oE '\[[^]]+\]$' | sed 's/,-warnings-as-errors//' |
    sort | uniq -c | sort -rn >&2 || true
  echo "ci/tidy.sh: failed after $((SECONDS - t0)) s" >&2
  exit 1
fi
echo "ci/tidy.sh: clean ($((SECONDS - t0)) s)"
