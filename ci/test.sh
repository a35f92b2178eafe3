#!/usr/bin/env bash
# Builds zcoll and runs the whole test suite: warnings as errors, then the suite again
# under ASan+UBSan, then zcoll_perf with every element checked on 4 ranks.
# Usage: ci/test.sh          (from anywhere; installs missing Debian packages as root)
set -euo pipefail
cd "$(dirname "$0")/.."
# mpirun and a one-host Slurm: the launcher tests start jobs with them (tests/launch_pmix.sh)
# clang-14 and its runtime: the libFuzzer targets (ci/fuzz.sh), built in the background below,
# where no package may be installed.
# clang-format-14 and clang-tidy-14: the formatting check and clang-tidy (ci/format.sh, ci/tidy.sh).
# python3-mpi4py: examples/mpi4py_init.py, a zcoll job started from a unique id inside an MPI
# job (python/tests/test_unique_id.py).
# python3-torch, libtorch-dev, pybind11-dev, python3-dev: zcoll.torch's C++ backend, built with
# -DZCOLL_TORCH=ON below, and its tests (python_torch); python3-distributed: zcoll.dask
# (python_dask); python3-sklearn: examples/mpi4py_sgd.py (python/tests/test_unique_id.py).
ci/deps.sh openmpi-bin python3-mpi4py slurmctld slurmd slurm-client munge clang-14 libclang-rt-14-dev \
  clang-format-14 clang-tidy-14 python3-torch libtorch-dev pybind11-dev python3-dev python3-distributed \
  python3-sklearn
jobs=$(nproc)
t0=$SECONDS
# Each stage says when it starts, so a slow CI run shows where its time went.
stage() { echo "== $* [$((SECONDS - t0)) s]"; }

stage "formatting: clang-format --dry-run -Werror on every C file (ci/format.sh check)"
ci/format.sh check
stage "build (warnings are errors)"
# zcoll.torch's backend (ZCOLL_TORCH_LATER): built in the background below, not here.
cmake -S . -B build/ci -DZCOLL_WERROR=ON -DZCOLL_TORCH=ON -DZCOLL_TORCH_LATER=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/ci -j"$jobs"
stage "layers: includes by layer (ci/layers.py), circles of calls (ci/cycles.py)"
ci/layers.py
ci/readmes.py
ci/cycles.py build/ci 3
stage "one-host Slurm for the srun tests (ci/slurm.sh)"
ci/slurm.sh start
bg= faults=
trap 'ci/slurm.sh stop; for g in $bg $faults; do kill -- -"$g" 2>/dev/null || true; done' EXIT

# zcoll.torch's C++ backend (half of the plain build's time: torch's headers), the sanitizer,
# ThreadSanitizer and fuzzer builds and clang-tidy take ~10 of CI's minutes on 2 cores but
# need nothing from the suite: they run beside it, at idle priority (SCHED_IDLE), so they take
# only the cores the suite leaves idle while its ranks sleep, and do not slow it. The three
# tests that need the backend run after them. Their log is build/background.log; CI waits
# for them after the suite.
stage "background: torch backend, ASan+UBSan, TSan, fuzz builds, clang-tidy at idle priority (build/background.log)"
set -m # its own process group, so that the trap can stop all of it
chrt --idle 0 nice -n 19 sh -c '
  set -e
  cmake --build build/ci -j'"$jobs"' --target zcoll_torch
  cmake -S . -B build/asan -DZCOLL_WERROR=ON -DZCOLL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
  cmake --build build/asan -j'"$jobs"'
  cmake -S . -B build/tsan -DZCOLL_WERROR=ON -DZCOLL_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/tsan -j'"$jobs"' --target requests_tsan
  ci/fuzz.sh 0 build/fuzz --build-only
  ci/tidy.sh build/tidy' >build/background.log 2>&1 &
bg=$!
set +m

stage "test suite"
# It includes tests/netns (ctest -L netns): jobs over several hosts made of namespaces, which
# needs root; under CI=true it fails rather than skip. So does deb_install (in the stage after the background builds): the .debs of
# this build (cpack -G DEB) installed on this machine, used with pkg-config, and purged.
# ZCOLL_TEST_SAMPLE=rest (tests/sample.h): the large matrices run the cases the sanitizer
# pass below does not, so each case runs once per CI run.
# The fault matrix (test_faults) runs later, beside the soft-RoCE guest; the tests of the
# torch backend and of installing it after the background builds.
after_torch='install_and_link|deb_install|python_torch'
ZCOLL_TEST_SAMPLE=rest ctest --test-dir build/ci --output-on-failure --timeout 1200 \
  -E "^(test_faults|$after_torch)\$"

stage "waiting for the background builds and clang-tidy"
if ! wait "$bg"; then
  bg=
  tail -60 build/background.log
  echo "== a background build failed: build/background.log"
  exit 1
fi
bg=

stage "the torch backend's tests, installing and packaging (they need the backend)"
ZCOLL_TEST_SAMPLE=rest ctest --test-dir build/ci --output-on-failure --timeout 1200 \
  -R "^($after_torch)\$"

# The sanitizers' options, for the ASan+UBSan steps below (not the guest's plain build, not
# the fuzzers, which run as before without them).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/ci/lsan.supp

# The fault matrix mostly waits (for timeouts, for stopped and killed ranks: 70-90% of the
# cores idle while it runs) and the emulated guest mostly computes, so they run side by
# side: the matrix (plain, then under ASan+UBSan) in the background, the guest at nice 10,
# so that a fault's rank that wakes gets a core at once and its time bounds hold.
stage "fault matrix, plain then ASan+UBSan (tests/comm/test_faults.c), beside the guest below"
set -m
{ ZCOLL_TEST_SAMPLE=rest ctest --test-dir build/ci -R '^test_faults$' --output-on-failure \
    --timeout 1200 &&
  ZCOLL_TEST_SAMPLE=1 ctest --test-dir build/asan -R '^test_faults$' --output-on-failure \
    --timeout 2400; } >build/faults.log 2>&1 &
faults=$!
set +m

stage "verbs transport on soft-RoCE: rxe devices, real RDMA writes (ci/rxe.sh)"
# Inside the harness a missing device is a failure, not a skip.
# --verbose: the log shows, per test, the devices and the transport each job ran on.
# First the transport contract over verbs (tests/transports/test_transport_conformance.c, seconds).
# Then the verbs tests; their algorithm x rank count matrix pairwise, 10 of 20 (ZCOLL_TEST_SAMPLE,
# tests/transports/test_verbs.c: each algorithm at an even and an odd p). Not those the ASan+UBSan guest
# below runs (verbs/[rbap]*: registered buffers, rcache, requests, device errors, peer
# death): each runs once per CI run, as the samples do.
# Then a sample of the rest of MPI's set and of point-to-point over verbs at p = 3
# (tests/progs/xchg_check.c, counts up to 2000, and p2p_check.c's quick cases, messages up
# to 16 KiB), 4 KiB slots so that the larger ones go in pieces and by rendezvous: 15-30 s.
# Then the fault matrix over verbs, in the same guest: under TCG a job takes 10-20 s, so
# CI samples 12 of the 24 faults, one per phase and kind (all 24: drop ZCOLL_FAULTS_ONLY).
# This guest's rxe netdevs have IPv6 addresses only (--family 6): connections are made out
# of band, over GIDs of fd77::/64 (verbs/no_ipv4_needed checks it); the ASan+UBSan guest
# below runs over IPv4-mapped GIDs.
(unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
 exec nice -n 10 ci/rxe.sh --family 6 --rw build/ci --timeout 1800 -- sh -c 'env ZCOLL_TEST_REQUIRE_RDMA=1 \
  ZCOLL_TEST_TRANSPORTS=verbs build/ci/tests/test_transport_conformance --jobs=1 -S --verbose=1 &&
  env ZCOLL_TEST_REQUIRE_RDMA=1 ZCOLL_TEST_SAMPLE=rest \
  build/ci/tests/test_verbs --jobs=1 -S --verbose=1 --filter="verbs/[!rbap]*" &&
  env ZCOLL_TEST_REQUIRE_RDMA=1 build/ci/tests/test_info --jobs=1 -S --filter="info/rdma*" &&
  for prog in "xchg_check 2000" "p2p_check quick"; do \
    env ZCOLL_TRANSPORT=verbs ZCOLL_CHUNK_BYTES=4096 build/ci/zcoll_run -np 3 build/ci/tests/$prog \
      >/tmp/rxe_sample.log 2>&1; s=$?; cat /tmp/rxe_sample.log; \
    [ $s = 0 ] && grep -q " over verbs" /tmp/rxe_sample.log || exit 1; \
  done &&
  rm -f build/ci/fault_matrix_verbs.md &&
  env ZCOLL_FAULTS_TL=verbs ZCOLL_FAULTS_MD=build/ci/fault_matrix_verbs.md \
  ZCOLL_FAULTS_ONLY=kill-init,kill-mid,mismatch-op,invalid-arg,abort-thread,revoke-signal,sigstop,exit-idle,fork,cycles,abort-destroy,leave-early \
  build/ci/tests/test_faults --jobs=1 -S')

stage "verbs under ASan+UBSan on soft-RoCE (registered-buffer matrix, device errors, peer death)"
# Still beside the fault matrix, whose two passes (~200 s each here) outlast the plain guest
# (~250 s): run after the suite under ASan+UBSan, this guest added its ~80-110 s to the
# critical path; here it takes cores the matrix leaves idle. At nice 10 like the guest above.
# The whole verbs matrix under the sanitizers in an emulated guest takes ~11 min; this
# subset covers every dtype x op over verbs (p = 3) and the error paths in ~1 min.
nice -n 10 ci/rxe.sh --rw build/asan --timeout 900 --env ASAN_OPTIONS --env UBSAN_OPTIONS -- \
  env ZCOLL_TEST_REQUIRE_RDMA=1 build/asan/tests/test_verbs --jobs=1 -S --verbose=1 \
  --filter 'verbs/[rbap]*'

stage "waiting for the fault matrix (build/faults.log)"
status=0
wait "$faults" || status=$?
faults=
cat build/faults.log
[ "$status" -eq 0 ] || { echo "== the fault matrix failed"; exit 1; }

stage "zcoll_perf -c 1 on 4 ranks"
build/ci/zcoll_run -np 4 build/ci/zcoll_perf -b 8 -e 16M -f 4 -n 5 -w 2 -c 1

stage "test suite under ASan+UBSan"
# ZCOLL_TEST_SAMPLE=1 (tests/sample.h): the big matrices run a documented subset, the pass
# above the rest -- the process matrices (test_allreduce_{shm,ucx}) 5 of 45 cases, p = 1..5,
# every algorithm once (tests/transports/allreduce_matrix.c; the pass above covers the rest pairwise over
# transport x algorithm x rank count); the loopback algorithm matrix 24 of 84
# (tests/algorithms/test_algorithms.c); the 3 MiB loopback matrix 3 of 11 (test_allreduce_loopback.c);
# broadcast 6 of 18 and every 3rd rank count between processes; ops 8 of 17; zcoll_info's
# selection against real jobs at p = 2, 3 of 2..8 (tests/tools/test_info.c); the kernels'
# 65537-element case on one instruction set per dtype (tests/kernels/test_reduce.c); the Python
# tests each function once, with its first parameters, the plain pass the others
# (python/tests/conftest.py).
# The fault matrix ran above. Not here: the checks of the source tree, docs, packaging and
# scripts (install_and_link, readme, readmes, layers, tune, man_pages, commit_msg_hook), which ran in
# the plain pass; the library paths they reach (2-rank example programs, the tools' option
# parsing) run here under test_examples, test_perf_cli and test_zcoll_run. Nor zcoll.dask
# (python_dask: Python over the same calls the python test makes here), the Python examples
# (python_examples, ~50 s here: whole training runs and mpirun launches over those same
# calls; the unique-id init they start from runs here in test_unique_id) or zcoll.torch (not
# built: torch is not sanitized).
ZCOLL_TEST_SAMPLE=1 ctest --test-dir build/asan --output-on-failure --timeout 2400 \
  -E '^(test_faults|install_and_link|readme|readmes|layers|tune|man_pages|commit_msg_hook|python_dask|python_examples)$'

stage "ThreadSanitizer: requests and progress threads over rank threads (requests_tsan)"
# Criterion's runner cannot run under TSan (Snaipe/Criterion#274): a plain program runs the
# request tests' scenarios with ZCOLL_PROGRESS=thread and caller.
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build/tsan/tests/requests_tsan

stage "libFuzzer: rendezvous frames and wire placement, 45 s each, side by side (ci/fuzz.sh)"
env -u ASAN_OPTIONS -u UBSAN_OPTIONS -u LSAN_OPTIONS ci/fuzz.sh 45 build/fuzz

echo "== all passed in $((SECONDS - t0)) s"
