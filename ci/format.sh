#!/usr/bin/env bash
# One formatter for the tree: clang-format 14 (Debian 12's, installed by ci/deps.sh) with
# the repository's .clang-format, over every tracked .c, .h, .cc, .cpp and .hpp file except those that
# .clang-format-ignore lists. The exact binary is pinned: another version lays some lines
# out differently, and the check would flap between machines.
# Usage: ci/format.sh check [files...]   fails (exit 1) listing the files it would change
#        ci/format.sh fix [files...]     rewrites them in place
#        ci/format.sh diff [files...]    shows what fix would change
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format-14}
mode=${1:-}
case "$mode" in
check | fix | diff) shift ;;
*) echo "usage: ci/format.sh check|fix|diff [files...]" >&2; exit 2 ;;
esac
if ! command -v "$CLANG_FORMAT" >/dev/null; then
  echo "ci/format.sh: $CLANG_FORMAT not found (ci/deps.sh clang-format-14 installs it)" >&2
  exit 2
fi

ignore=()
if [ -f .clang-format-ignore ]; then
  while IFS= read -r pat; do
    pat=${pat%%#*}
    pat=${pat%"${pat##*[![:space:]]}"}
    [ -n "$pat" ] && ignore+=("$pat")
  done <.clang-format-ignore
fi
files=()
while IFS= read -r -d '' f; do
  for pat in "${ignore[@]+"${ignore[@]}"}"; do
    # shellcheck disable=SC2053 # the pattern is a glob on purpose
    [[ $f == $pat ]] && continue 2
  done
  files+=("$f")
done < <(if (($#)); then printf '%s\0' "$@"; else git ls-files -z -- '*.c' '*.h' '*.cc' '*.cpp' '*.hpp'; fi)
((${#files[@]})) || exit 0

jobs=$(nproc)
case "$mode" in
fix)
  printf '%s\0' "${files[@]}" | xargs -0 -n 16 -P "$jobs" "$CLANG_FORMAT" -i
  ;;
diff)
  for f in "${files[@]}"; do
    "$CLANG_FORMAT" "$f" | diff -u --label "a/$f" --label "b/$f" "$f" - || true
  done
  ;;
check)
  # One line per file that is not formatted (the warnings themselves would be thousands).
  bad=$(printf '%s\0' "${files[@]}" | xargs -0 -n 16 -P "$jobs" sh -c '
    for f; do "$0" --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"; done' "$CLANG_FORMAT" |
    sort)
  if [ -n "$bad" ]; then
    echo "$bad"
    echo "ci/format.sh: $(echo "$bad" | wc -l) of ${#files[@]} files are not formatted" \
      "($CLANG_FORMAT); ci/format.sh diff shows how, ci/format.sh fix applies it" >&2
    exit 1
  fi
  echo "ci/format.sh: ${#files[@]} files formatted ($CLANG_FORMAT)"
  ;;
esac
