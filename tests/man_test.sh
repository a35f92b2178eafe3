#!/usr/bin/env bash
# The man pages the build generated (man/CMakeLists.txt): all of them are there --
# zcoll(7) and the section 3 pages always, the tools' section 1 pages when help2man was
# found (under CI=true it must have been) -- each renders with no groff warning, and
# zcoll(7) names every variable `zcoll_info -c` lists. Section 3: every function of the rest
# of MPI's set has a page (its own or a .so link to its family's), each page's NAME lists
# exactly the functions its SYNOPSIS declares, and each declaration is the one in
# include/zcoll.h, whitespace aside.
# Usage: man_test.sh BUILD_DIR HAVE_HELP2MAN(0|1)
set -euo pipefail
build=$1 have_help2man=$2
dir=$build/man
header=$(dirname "$0")/../include/zcoll.h
# The functions that must have a page (issue 40's calls; the older ones have none yet).
man3_required="zcoll_alltoall zcoll_ialltoall zcoll_alltoallv zcoll_ialltoallv
  zcoll_allgatherv zcoll_iallgatherv zcoll_gather zcoll_igather zcoll_gatherv zcoll_igatherv
  zcoll_scatter zcoll_iscatter zcoll_scatterv zcoll_iscatterv
  zcoll_send zcoll_recv zcoll_isend zcoll_irecv zcoll_group_start zcoll_group_end"
pages=(zcoll.7)
for f in "$dir"/man3/*.3; do
  [ -e "$f" ] || continue
  grep -q '^\.so ' "$f" || pages+=("man3/${f##*/}")
done
[ ${#pages[@]} -gt 1 ] || { echo "man_test: no section 3 page in $dir/man3" >&2; exit 1; }
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

# ---- section 3
# One declaration per line, "name<TAB>declaration", whitespace collapsed: from zcoll.h
# (ZCOLL_API ... ; ) or from a rendered SYNOPSIS (its text up to each ';').
normalize() { tr -s ' \t\n' ' ' | sed -e 's/( /(/g; s/ )/)/g; s/^ //; s/ *;/;\n/g' | sed -n \
  's/^ *\(.*[^a-z_]\)\{0,1\}\(zcoll_[a-z0-9_]*\)(\(.*\);$/\2\t\1\2(\3;/p'; }
declared=$(awk '/^ZCOLL_API /{d=1} d{print} d && /;/{d=0}' "$header" | sed 's/^ZCOLL_API //' |
  normalize)
[ -n "$declared" ] || { echo "man_test: no declaration read from $header" >&2; exit 1; }
documented=" " rendered_link=
for p in "${pages[@]}"; do
  [ "${p%%/*}" = man3 ] || continue
  text=$(cd "$dir" && LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$p" 2>/dev/null)
  synopsis=$(awk '/^SYNOPSIS/{s=1; next} /^[A-Z]/{s=0} s && !/#include/' <<<"$text" | normalize)
  names=$(awk '/^NAME/{getline; print; exit}' <<<"$text" | sed 's/ [-‐] .*//; s/,/ /g')
  own=$(cut -f1 <<<"$synopsis" | tr '\n' ' ')
  [ "$(tr ' ' '\n' <<<"$names" | grep . | sort | tr '\n' ' ')" = \
    "$(tr ' ' '\n' <<<"$own" | grep . | sort | tr '\n' ' ')" ] ||
    { echo "man_test: $p: NAME lists '$names', SYNOPSIS declares '$own'" >&2; status=1; }
  while IFS=$'\t' read -r fn decl; do
    [ -n "$fn" ] || continue
    documented+="$fn "
    want=$(awk -F'\t' -v f="$fn" '$1 == f {print $2}' <<<"$declared")
    if [ -z "$want" ]; then
      echo "man_test: $p: $fn is not declared in zcoll.h" >&2
      status=1
    elif [ "$want" != "$decl" ]; then
      printf 'man_test: %s: %s differs from zcoll.h:\n  page:     %s\n  zcoll.h:  %s\n' \
        "$p" "$fn" "$decl" "$want" >&2
      status=1
    fi
    # The other names reach the page through a .so link, plain and compressed; the first
    # link is rendered too (man takes most of a second to start: not every one).
    if [ "man3/$fn.3" != "$p" ]; then
      for f in "$dir/man3/$fn.3" "$dir/man3/$fn.3.gz"; do
        [ "$(zcat -f "$f" 2>/dev/null)" = ".so $p" ] ||
          { echo "man_test: $f is not a .so link to $p" >&2; status=1; }
      done
      if [ -z "${rendered_link:-}" ]; then
        rendered_link=$fn
        [ "$(cd "$dir" && LC_ALL=C.UTF-8 MANWIDTH=200 man -l "man3/$fn.3.gz" 2>/dev/null)" = \
          "$text" ] || { echo "man_test: man3/$fn.3.gz does not render as $p" >&2; status=1; }
      fi
    fi
  done <<<"$synopsis"
done
for fn in $man3_required; do
  [[ "$documented" == *" $fn "* ]] || { echo "man_test: $fn has no section 3 page" >&2; status=1; }
done
[ $status = 0 ] && echo "man_test: ${pages[*]} render cleanly; zcoll(7) has all $(wc -w <<<"$vars") variables; section 3 matches zcoll.h"
exit $status
