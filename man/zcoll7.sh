#!/bin/sh
# Writes zcoll(7) from `zcoll_info -c` (man/zcoll7.awk says how), so the page lists
# exactly the variables of the library it ships with.
# Usage: zcoll7.sh ZCOLL_INFO VERSION OUTPUT
set -eu
info=$1 version=$2 out=$3
# A clean environment: the page documents the defaults, not this shell's ZCOLL_* values
# (and a sanitized build's leak report is not the page's business).
env -i ASAN_OPTIONS=detect_leaks=0 "$info" -c >"$out.in"
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}" +%Y-%m-%d)
awk -v version="$version" -v date="$date" -f "$(dirname "$0")/zcoll7.awk" "$out.in" >"$out.tmp"
rm -f "$out.in"
mv "$out.tmp" "$out"
