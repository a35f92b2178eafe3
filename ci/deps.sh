#!/usr/bin/env bash
# Installs the Debian packages zcoll needs that are missing (nothing if all are there).
# Usage: ci/deps.sh [extra packages...]
set -euo pipefail
# python3-numpy and python3-pytest: the Python package (python/) and its ctest;
# dataset-fashion-mnist: the real data set examples/asgd.py trains on (and its test);
# iproute2: the emulated hosts of tests/netns (ip netns, veth, bridge).
# libpmix-dev: PMIx's headers, for launching through PMIx (lib/boot/pmix_client.c loads the
# library itself at run time); Slurm's pmix plugin also needs its libpmix.so.
# help2man and man-db: the tools' man pages are generated from their --help (man/), and
# tests/man_test.sh renders every page. dpkg-dev and file: cpack -G DEB's dependency
# list (dpkg-shlibdeps; CPack finds the ELF files with file), for tests/deb_test.sh.
# clang-format-14 and clang-tidy-14: ci/format.sh and ci/tidy.sh call these exact binaries
# (Debian 12's default version), so formatting and findings do not change with the machine.
need=(gcc make cmake pkg-config libucx-dev libibverbs-dev libcriterion-dev libssl-dev
      libpmix-dev python3-numpy python3-pytest dataset-fashion-mnist iproute2 help2man man-db
      dpkg-dev file clang-format-14 clang-tidy-14 "$@")
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ci/deps.sh: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "ci/deps.sh: missing packages and not root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
