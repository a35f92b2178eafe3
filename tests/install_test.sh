#!/usr/bin/env bash
# Installs zcoll into a scratch prefix, builds tests/progs/allreduce_check.c with
# nothing but `cc app.c $(pkg-config --cflags --libs zcoll)`, builds a CMake project
# with find_package(zcoll), and runs the application with the installed zcoll_run for
# P = 2, 3, 5: every element of every case must be exact. Then imports the installed
# Python package (only the scratch prefix on PYTHONPATH) and runs a 2-rank allreduce
# through the installed library.
set -euo pipefail
build=$1 src=$2 extra_cflags=${3:-} # the sanitizers, when the library was built with them
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
pc=$(dirname "$(find "$work/prefix" -name zcoll.pc | head -1)")
libdir=$(dirname "$(find "$work/prefix" -name 'libzcoll.so' | head -1)")
export PKG_CONFIG_PATH=$pc
test -x "$work/prefix/bin/zcoll_run" && test -x "$work/prefix/bin/zcoll_perf"
echo "pkg-config: $(pkg-config --cflags --libs zcoll)"
readelf -d "$libdir/libzcoll.so" | grep -q 'SONAME.*libzcoll.so.0' || { echo "no soname"; exit 1; }

# The application is one file that includes its reference header by relative path.
cp "$src/tests/progs/allreduce_check.c" "$work/app.c"
mkdir -p "$work/progs" && cp "$src/tests/check_common.h" "$src/tests/check_matrix.h" "$work/"
# shellcheck disable=SC2086 # extra_cflags is a list of flags
cc -std=c11 -Wall -Wextra -Werror $extra_cflags "$work/app.c" $(pkg-config --cflags --libs zcoll) -o "$work/app" \
  -I"$work" 2>&1 || { echo "pkg-config build failed"; exit 1; }

mkdir -p "$work/cm"
cat >"$work/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(zcoll_consumer C)
find_package(zcoll 0.1 REQUIRED)
add_executable(app_cmake ../app.c)
target_include_directories(app_cmake PRIVATE ..)
target_link_libraries(app_cmake zcoll::zcoll)
CM
cmake -S "$work/cm" -B "$work/cm/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_C_FLAGS="$extra_cflags" -DCMAKE_EXE_LINKER_FLAGS="$extra_cflags" >/dev/null
cmake --build "$work/cm/build" >/dev/null

export LD_LIBRARY_PATH=$libdir
for p in 2 3 5; do
  "$work/prefix/bin/zcoll_run" -np $p "$work/app" $((1 << 20))
  "$work/prefix/bin/zcoll_run" -np $p "$work/cm/build/app_cmake" 4096
done

# The Python package, as installed: it must load the installed library, found from
# where the package lies, with no ZCOLL_LIBRARY and no build tree in sight.
pkg=$(find "$work/prefix" -path '*/zcoll/_libpath.py' | head -1)
if [ -z "$pkg" ]; then
  echo "install_and_link: no Python package installed (ZCOLL_PYTHON=OFF); not checked"
else
  python=${ZCOLL_TEST_PYTHON:-/usr/bin/python3}
  sanitizer_env=()
  if [ -n "$extra_cflags" ]; then # a sanitized library in an unsanitized python3
    sanitizer_env=(LD_PRELOAD="$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
                   ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
  fi
  (cd "$work" && env -u ZCOLL_LIBRARY PYTHONPATH="$(dirname "$(dirname "$pkg")")" \
    "${sanitizer_env[@]}" "$work/prefix/bin/zcoll_run" -np 2 "$python" "$src/tests/installed_allreduce.py" \
    "$work/prefix")
fi
echo "install_and_link: OK"
