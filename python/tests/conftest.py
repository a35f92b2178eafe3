"""Starting multi-rank jobs for the tests.

A job is `zcoll_run -np N python3 helper.py args` (zcoll_run from ZCOLL_TEST_BIN_DIR,
else next to the library the package loaded), its helper script under progs/. Jobs in
which a rank dies on purpose start the ranks by hand instead (spawn_ranks): zcoll_run
would terminate the survivors before they could report the failure.
"""
import os
import socket
import subprocess
import sys

import pytest
import zcoll

HERE = os.path.dirname(os.path.abspath(__file__))
PROGS = os.path.join(HERE, "progs")


def _zcoll_run():
    bin_dir = os.environ.get("ZCOLL_TEST_BIN_DIR")
    lib_dir = os.path.dirname(zcoll._lib.path)
    for cand in ([os.path.join(bin_dir, "zcoll_run")] if bin_dir else
                 [os.path.join(lib_dir, "zcoll_run"), os.path.join(lib_dir, "..", "bin", "zcoll_run")]):
        if os.access(cand, os.X_OK):
            return cand
    raise RuntimeError("zcoll_run not found: set ZCOLL_TEST_BIN_DIR to the build directory")


ZCOLL_RUN = _zcoll_run()


def run_job(np, prog, *args, env=None, timeout=60):
    """Runs progs/<prog> on np ranks under zcoll_run; returns the CompletedProcess
    (stdout and stderr together, every line tagged with its rank)."""
    cmd = [ZCOLL_RUN, "-np", str(np), "--tag-output", "--timeout", str(timeout),
           sys.executable, os.path.join(PROGS, prog), *map(str, args)]
    return subprocess.run(cmd, env=dict(os.environ, **(env or {})), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout + 10)


def spawn_ranks(np, prog, *args, env=None, timeout=60):
    """Starts np ranks of progs/<prog> by hand, as zcoll_run would but letting the others
    run on when one dies; returns [(exit status, output)] per rank."""
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(64)
    port = lsock.getsockname()[1]
    procs = []
    try:
        for r in range(np):
            e = dict(os.environ, ZCOLL_RANK=str(r), ZCOLL_SIZE=str(np),
                     ZCOLL_ROOT=f"127.0.0.1:{port}",
                     ZCOLL_ROOT_FD=str(lsock.fileno()) if r == 0 else "-1", **(env or {}))
            procs.append(subprocess.Popen(
                [sys.executable, os.path.join(PROGS, prog), *map(str, args)], env=e,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                pass_fds=(lsock.fileno(),) if r == 0 else ()))
    finally:
        lsock.close()
    results = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            out += f"\n(killed after {timeout} s)"
        results.append((p.returncode, out))
    return results


def rank_lines(output, rank):
    """The lines zcoll_run --tag-output prefixed with [rank]."""
    tag = f"[{rank}] "
    return [line[len(tag):] for line in output.splitlines() if line.startswith(tag)]


@pytest.fixture(scope="session")
def solo():
    """A one-rank communicator in the test process, for checks that stay in Python or
    need no peer."""
    with zcoll.Comm(config={"RANK": 0, "SIZE": 1}) as comm:
        yield comm


def pytest_collection_modifyitems(config, items):
    """CI's two passes (ZCOLL_TEST_SAMPLE, tests/sample.h) split the cases between them, so
    that each runs once per CI run: the sanitizer pass (=1) runs each test function once,
    with its first parameters -- every binding's path into the library under ASan+UBSan, at
    half of the jobs (each rank a Python process with the sanitizer runtimes preloaded, 2-3
    times slower to start and run) -- and the plain pass (=rest) the other parameters.
    Unset: every case. A module that only the plain pass runs (python_examples) says
    SAMPLE_SPLIT = False: every case of it runs there."""
    sample = os.environ.get("ZCOLL_TEST_SAMPLE")
    if sample not in ("1", "rest"):
        return
    seen, first, others = set(), [], []
    whole = []
    for item in items:
        if not getattr(item.module, "SAMPLE_SPLIT", True):
            whole.append(item)
            continue
        key = item.nodeid.split("[", 1)[0]
        (others if key in seen else first).append(item)
        seen.add(key)
    keep, drop = (first, others) if sample == "1" else (others, first)
    keep = whole + keep
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
