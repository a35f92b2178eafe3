#!/usr/bin/env bash
# The man pages the build generated (man/CMakeLists.txt): all of them are there --
# zcoll(7) always, the tools' section 1 pages when help2man was found (under CI=true it
# must have been) -- each renders with no groff warning, and zcoll(7) names every
# variable `zcoll_info -c` lists.
# Usage: man_test.sh BUILD_DIR HAVE_HELP2MAN(0|1)
set -euo pipefail
build=$1 have_help2man=$2
dir=$build/man
pages=(zcoll.7)
if [ "$have_help2man" = 1 ]; then
  pages+=(zcoll_run.1 zcoll_perf.1 zcoll_info.1)
elif [ "${CI:-}" = true ]; then
  echo "man_test: help2man was not found at configure time; CI must build every page" >&2
  exit 1
else
  echo "man_test: no help2man at configure time: section 1 pages not checked" >&2
fi
command -v man >/dev/null || { echo "man_test: no man (Debian: man-db)" >&2; exit 1; }
status=0
for p in "${pages[@]}"; do
  for f in "$dir/$p" "$dir/$p.gz"; do
    [ -s "$f" ] || { echo "man_test: $f missing or empty" >&2; status=1; continue; }
    warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$f" 2>&1 >/dev/null)
    if [ -n "$warnings" ]; then
      echo "man_test: $f: $warnings" >&2
      status=1
    fi
  done
  text=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$dir/$p" 2>/dev/null)
  grep -q '^NAME' <<<"$text" || { echo "man_test: $p has no NAME section" >&2; status=1; }
  if [ "${p##*.}" = 1 ]; then
    grep -q '^SYNOPSIS' <<<"$text" || { echo "man_test: $p has no SYNOPSIS (no Usage line?)" >&2; status=1; }
  fi
done
vars=$(env -i ASAN_OPTIONS=detect_leaks=0 "$build/zcoll_info" -c | sed -n 's/^\(ZCOLL_[A-Z0-9_]*\)=.*/\1/p')
[ -n "$vars" ] || { echo "man_test: zcoll_info -c listed no variable" >&2; exit 1; }
page=$(LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$dir/zcoll.7" 2>/dev/null)
for v in $vars; do
  grep -q "^ *$v\$" <<<"$page" || { echo "man_test: zcoll(7) lacks $v" >&2; status=1; }
done
[ $status = 0 ] && echo "man_test: ${pages[*]} render cleanly; zcoll(7) has all $(wc -w <<<"$vars") variables"
exit $status
