#!/usr/bin/env bash
# Builds the Debian packages of this build tree (cpack -G DEB, cmake/packaging.cmake),
# checks what each carries and depends on, installs them on this machine with apt-get,
# then uses them as a user would: an application built outside the tree with nothing but
# `cc app.c $(pkg-config --cflags --libs zcoll)` (and one with find_package(zcoll)) runs
# as 2 ranks under the installed /usr/bin/zcoll_run, every element of every case checked;
# `man -w` finds the pages; the Python package imports from /usr. Finally the packages are
# purged and nothing of them may be left.
# Needs root (it installs into /usr): without, it skips (exit 77), except under CI=true,
# where it fails. It refuses to run if zcoll packages are installed already (they are not
# its to remove), or if another zcoll (/usr/local) would be found before the packages'.
# Usage: deb_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(realpath "$1") src=$(realpath "$2")

skip() {
  if [ "${CI:-}" = true ]; then echo "deb_test: FAIL: $* (CI=true: this test must run)"; exit 1; fi
  echo "deb_test: SKIP: $*"
  exit 77
}
fail() { echo "deb_test: FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || skip "not root: installing packages needs it"
for tool in cpack dpkg-deb dpkg-shlibdeps apt-get pkg-config cc man readelf; do
  command -v "$tool" >/dev/null || skip "no $tool (ci/deps.sh installs what is needed)"
done
soname=$(readelf -d "$build/libzcoll.so" | sed -n 's/.*SONAME.*\[libzcoll\.so\.\([0-9]*\)\].*/\1/p')
[ -n "$soname" ] || fail "$build/libzcoll.so has no libzcoll.so.N soname"
runtime=libzcoll$soname
pkgs=("$runtime" libzcoll-dev zcoll-tools)
[ -d "$build/python/zcoll" ] && pkgs+=(python3-zcoll)
compgen -G "$build/python/zcoll/_zcoll_torch*.so" >/dev/null && pkgs+=(python3-zcoll-torch)
is_installed() { [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == *' installed' ]]; }
for p in "${pkgs[@]}"; do
  if is_installed "$p"; then
    fail "$p is installed already; this test installs and purges the zcoll packages itself:" \
         "remove them first (apt-get purge ${pkgs[*]})"
  fi
done

work=$(mktemp -d)
chmod 755 "$work" # apt's _apt user reads the .debs from here
installed=0
cleanup() {
  if [ $installed = 1 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -q -o DPkg::Lock::Timeout=300 "${pkgs[@]}" \
      >"$work/purge.log" 2>&1 || { echo "deb_test: apt-get purge failed:"; cat "$work/purge.log"; }
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# ---- build the packages
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/debs" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; fail "cpack -G DEB failed"; }
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
[ -n "$version" ] || fail "no CPACK_PACKAGE_VERSION in $build/CPackConfig.cmake"
declare -A deb
for f in "$work"/debs/*.deb; do deb[$(dpkg-deb -f "$f" Package)]=$f; done
[ "${#deb[@]}" = "${#pkgs[@]}" ] || fail "cpack wrote ${!deb[*]}, expected ${pkgs[*]}"
for p in "${pkgs[@]}"; do
  [ -n "${deb[$p]:-}" ] || fail "no $p package among ${!deb[*]}"
  v=$(dpkg-deb -f "${deb[$p]}" Version)
  [[ $v == "$version"-* ]] || fail "$p has version $v, the project is $version"
  echo "deb_test: $p $v: $(dpkg-deb -f "${deb[$p]}" Depends)"
done

# What each carries (and what it must leave to the others).
paths() { dpkg-deb -c "${deb[$1]}" | awk '{print $6}'; }
has() { grep -Eq "$2" <<<"$(paths "$1")" || fail "$1 lacks $2"; }
lacks() { ! grep -Eq "$2" <<<"$(paths "$1")" || fail "$1 has $2"; }
has "$runtime" "^\./usr/lib/(.*/)?libzcoll\.so\.$soname\$"
lacks "$runtime" '^\./usr/(include|bin)/|libzcoll\.so$'
has libzcoll-dev '^\./usr/include/zcoll\.h$'
has libzcoll-dev '/libzcoll\.so$'
has libzcoll-dev '/pkgconfig/zcoll\.pc$'
has libzcoll-dev '/cmake/zcoll/zcollConfig\.cmake$'
lacks libzcoll-dev 'libzcoll\.so\.[0-9]'
for t in zcoll_run zcoll_perf zcoll_info; do has zcoll-tools "^\./usr/bin/$t\$"; done
lacks zcoll-tools '/lib/'
# The man pages this build made must be in the tools' package; CI must have made them all.
pages=()
for page in zcoll_run.1 zcoll_perf.1 zcoll_info.1 zcoll.7; do
  if [ -e "$build/man/$page.gz" ]; then
    pages+=("$page")
    has zcoll-tools "^\./usr/share/man/man${page##*.}/$page\.gz\$"
  elif [ "${CI:-}" = true ]; then
    fail "the build made no $page (help2man missing at configure time?)"
  fi
done
# The functions' pages (section 3, written by hand: always built) beside zcoll.h, a .so link
# for each other name of a page.
for page in zcoll_alltoall zcoll_ialltoallv zcoll_send zcoll_irecv zcoll_group_start; do
  has libzcoll-dev "^\./usr/share/man/man3/$page\.3\.gz\$"
done
lacks zcoll-tools '/man3/'
# Dependencies: the library's from dpkg-shlibdeps, the others' on it at this very version.
[[ $(dpkg-deb -f "${deb[$runtime]}" Depends) == *'libc6 (>='* ]] ||
  fail "$runtime: no libc6 in Depends: dpkg-shlibdeps did not run"
for p in "${pkgs[@]:1}"; do
  [[ $(dpkg-deb -f "${deb[$p]}" Depends) == *"$runtime (= $(dpkg-deb -f "${deb[$runtime]}" Version))"* ]] ||
    fail "$p does not depend on $runtime at its version"
done

# ---- install
files=()
for p in "${pkgs[@]}"; do files+=("${deb[$p]}"); done
installed=1 # from here on, whatever happens, cleanup purges them
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  -o DPkg::Lock::Timeout=300 "${files[@]}" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "apt-get install of the packages failed"; }
owner() { dpkg -S "$1" 2>/dev/null | cut -d: -f1; }
# ---- an application outside the tree, built with pkg-config only
unset PKG_CONFIG_PATH LD_LIBRARY_PATH CPATH LIBRARY_PATH MANPATH PYTHONPATH ZCOLL_LIBRARY
for v in $(compgen -e); do [[ $v == ZCOLL_* ]] && unset "$v"; done
pc=$(pkg-config --variable=pcfiledir zcoll)/zcoll.pc
[ "$(owner "$pc")" = libzcoll-dev ] ||
  fail "pkg-config finds $pc, which libzcoll-dev does not own (another zcoll installed?)"
[ "$(pkg-config --modversion zcoll)" = "$version" ] ||
  fail "pkg-config says zcoll $(pkg-config --modversion zcoll), the project is $version"
echo "deb_test: pkg-config: $pc: $(pkg-config --cflags --libs zcoll)"
mkdir "$work/app"
cp "$src/tests/progs/allreduce_check.c" "$src/tests/check_common.h" "$src/tests/check_matrix.h" \
  "$work/app/"
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
cc -std=c11 -Wall -Wextra -Werror "$work/app/allreduce_check.c" $(pkg-config --cflags --libs zcoll) \
  -o "$work/app/app" || fail "the application does not build with pkg-config"
lib=$(ldd "$work/app/app" | awk '$1 ~ /^libzcoll\.so/ {print $3}')
[ "$(owner "$(realpath "$lib")")" = "$runtime" ] ||
  fail "the application loads '$lib', not $runtime's library"
(cd "$work/app" && /usr/bin/zcoll_run -np 2 ./app $((1 << 20))) ||
  fail "the application failed under /usr/bin/zcoll_run -np 2"

# ... and with find_package(zcoll), with no hint where zcoll is.
mkdir "$work/cm"
cat >"$work/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(zcoll_consumer C)
find_package(zcoll REQUIRED)
message(STATUS "zcoll_DIR=${zcoll_DIR}")
add_executable(app_cmake ../app/allreduce_check.c)
target_link_libraries(app_cmake zcoll::zcoll)
CM
cmake -S "$work/cm" -B "$work/cm/build" >"$work/cm.log" 2>&1 || { cat "$work/cm.log"; fail "find_package(zcoll)"; }
zdir=$(sed -n 's/^-- zcoll_DIR=//p' "$work/cm.log")
[ "$(owner "$zdir/zcollConfig.cmake")" = libzcoll-dev ] || fail "find_package found zcoll in $zdir"
cmake --build "$work/cm/build" >"$work/cm.log" 2>&1 || { cat "$work/cm.log"; fail "the CMake consumer"; }
/usr/bin/zcoll_run -np 2 "$work/cm/build/app_cmake" 4096 || fail "the CMake consumer failed"

# ---- the man pages, where man looks
for page in "${pages[@]}"; do
  path=$(man -w "${page##*.}" "${page%.*}") || fail "man -w ${page##*.} ${page%.*} finds nothing"
  [ "$(owner "$path")" = zcoll-tools ] || fail "man -w ${page%.*} finds $path, not zcoll-tools'"
  echo "deb_test: man ${page##*.} ${page%.*}: $path"
done
for page in zcoll_alltoall zcoll_irecv; do
  path=$(man -w 3 "$page") || fail "man -w 3 $page finds nothing"
  [ "$(owner "$path")" = libzcoll-dev ] || fail "man -w 3 $page finds $path, not libzcoll-dev's"
done

# ---- the Python package, from /usr and nowhere else
if [ -n "${deb[python3-zcoll]:-}" ]; then
  (cd "$work" && /usr/bin/zcoll_run -np 2 /usr/bin/python3 "$src/tests/installed_allreduce.py" /usr) ||
    fail "the installed Python package failed"
fi

# ---- zcoll.torch's backend: its own package, python3-zcoll without torch's libraries
if [ -n "${deb[python3-zcoll-torch]:-}" ]; then
  has python3-zcoll-torch '/zcoll/_zcoll_torch[^/]*\.so$'
  lacks python3-zcoll '_zcoll_torch'
  [[ $(dpkg-deb -f "${deb[python3-zcoll]}" Depends) != *torch* ]] ||
    fail "python3-zcoll depends on torch: $(dpkg-deb -f "${deb[python3-zcoll]}" Depends)"
  (cd "$work" && /usr/bin/python3 -c "import zcoll.torch, torch.distributed as d; assert 'ZCOLL' in d.Backend._plugins") ||
    fail "the installed zcoll.torch does not register its backend"
fi

# ---- remove them: nothing of theirs may remain
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q -o DPkg::Lock::Timeout=300 "${pkgs[@]}" \
  >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "apt-get purge failed"; }
installed=0
for p in "${pkgs[@]}"; do
  ! is_installed "$p" || fail "$p still installed"
done
for f in /usr/bin/zcoll_run /usr/include/zcoll.h "$pc" "$(realpath "$lib")"; do
  [ ! -e "$f" ] || fail "$f is left after the purge"
done
echo "deb_test: OK: ${pkgs[*]} built, installed, used and purged"
