"""zcoll.dask.run on a 3-worker LocalCluster(processes=True): results checked element by
element, a rank's exception, and a worker killed in the middle of a run (the call raises
naming a rank, and returns; nothing hangs). Skipped without Debian's python3-distributed,
unless CI=true or ZCOLL_TEST_REQUIRE_DASK=1.
"""
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

REQUIRED = os.environ.get("CI") == "true" or os.environ.get("ZCOLL_TEST_REQUIRE_DASK") == "1"
try:
    from dask.distributed import Client, LocalCluster
    import zcoll.dask
    MISSING = None
except ImportError as e:
    MISSING = str(e)
if MISSING and REQUIRED:
    raise RuntimeError(f"Dask is required here: {MISSING}")
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"no Dask: {MISSING}")

import zcoll  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=3, threads_per_worker=2, processes=True,
                           dashboard_address=None, silence_logs=40)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def average_and_gather(comm, n):
    x = np.arange(n, dtype=np.float64) * (comm.rank + 1)
    avg = comm.allreduce(x, op=zcoll.AVG)
    who = comm.allgather(np.array([comm.rank, comm.size], np.int32))
    return comm.rank, avg, who


def test_run_returns_in_rank_order(client):
    n = 100_003
    res = zcoll.dask.run(client, average_and_gather, n)
    assert [r for r, _, _ in res] == [0, 1, 2]
    want = np.arange(n, dtype=np.float64) * (1 + 2 + 3) / 3
    for _, avg, who in res:
        np.testing.assert_array_equal(avg, want)
        np.testing.assert_array_equal(who, [[0, 3], [1, 3], [2, 3]])
    # The workers are reusable: a second run forms a new communicator.
    assert [r for r, _, _ in zcoll.dask.run(client, average_and_gather, 5)] == [0, 1, 2]


def raise_on_one(comm):
    if comm.rank == 1:
        raise ValueError("rank 1's own error")
    comm.barrier()


def test_an_exception_names_its_rank(client):
    t0 = time.monotonic()
    with pytest.raises(zcoll.dask.RunError) as e:
        zcoll.dask.run(client, raise_on_one)
    # The rank that raised, not one that got PeerFailed when its Comm aborted.
    assert e.value.rank == 1 and isinstance(e.value.__cause__, ValueError), str(e.value)
    assert "rank 1's own error" in str(e.value)
    assert time.monotonic() - t0 < 60


def die_on_two(comm):
    x = np.ones(1 << 16, np.float32)
    for step in range(1000):
        if comm.rank == 2 and step == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        comm.allreduce(x, out=x)
        x /= comm.size
    return "finished"


def test_a_worker_killed_mid_run(client):
    t0 = time.monotonic()
    with pytest.raises(zcoll.dask.RunError) as e:
        zcoll.dask.run(client, die_on_two)
    msg = str(e.value)
    # The dead rank, not a survivor that reported it (its PeerFailed is the cause).
    assert e.value.rank == 2, msg
    assert isinstance(e.value.__cause__, zcoll.PeerFailed), msg
    assert "its worker died" in msg and "PeerFailed" in msg, msg
    assert time.monotonic() - t0 < 60, msg
    # The nanny restarts the dead worker; once it is back the cluster runs again.
    client.wait_for_workers(3, timeout=60)
    assert [r for r, _, _ in zcoll.dask.run(client, average_and_gather, 7)] == [0, 1, 2]


def test_the_readme_example():
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "dask_average.py")
    r = subprocess.run([sys.executable, example], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    assert r.returncode == 0 and "every rank's average: [1.0, 1.0, 1.0]" in r.stdout, r.stdout


def test_kmeans_example():
    """examples/dask_kmeans.py: mini-batch k-means over a persisted Dask array's chunks,
    within 5 % of scikit-learn's KMeans on all the points, the same centers everywhere."""
    if not REQUIRED:
        pytest.importorskip("sklearn", reason="python3-sklearn")
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "dask_kmeans.py")
    r = subprocess.run([sys.executable, example], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=180)
    assert r.returncode == 0, r.stdout
    m = re.search(r"ratio ([0-9.]+)\); the same centers on every rank: (\w+)", r.stdout)
    assert m and float(m.group(1)) <= 1.05 and m.group(2) == "True", r.stdout
