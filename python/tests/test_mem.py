"""comm.empty: arrays in zcoll_mem_alloc memory -- collectives take them, their memory goes
back when the last view dies, and one that outlives its communicator stays valid."""
import gc

import numpy as np
import pytest
import zcoll

from conftest import run_job


def test_empty_is_zeroed_and_usable(solo):
    a = solo.empty((3, 5), np.float64)
    assert a.shape == (3, 5) and a.dtype == np.float64 and a.flags.c_contiguous
    assert not a.any()
    a[:] = np.arange(15.0).reshape(3, 5)
    out = solo.allreduce(a)
    assert (out == np.arange(15.0).reshape(3, 5)).all()
    solo.allreduce(a, out=a)
    assert (a == np.arange(15.0).reshape(3, 5)).all()
    assert solo.empty(0).shape == (0,) and solo.empty(7, "int32").dtype == np.int32


def test_empty_memory_goes_back_and_outlives_close():
    solo = zcoll.Comm(config={"RANK": 0, "SIZE": 1})  # closed here: not the shared fixture's
    views = []
    for _ in range(200):  # 200 pages back and forth: freed, or the count of maps grows
        a = solo.empty(4096, np.uint8)
        a[:] = 1
    gc.collect()
    with open("/proc/self/maps") as f:
        zmaps = sum("/memfd:zcoll-" in line for line in f)
    assert zmaps < 50, zmaps
    with pytest.raises(ValueError, match="negative"):
        solo.empty((2, -1))
    kept = solo.empty(16, np.int64)
    kept[:] = 7
    views.append(kept[::2])
    solo.close()
    assert (kept == 7).all() and (views[0] == 7).all()  # still ordinary memory
    kept[:] = 8
    with pytest.raises(ValueError, match="closed"):
        solo.empty(4)


def test_empty_between_processes():
    r = run_job(3, "mem_empty.py")
    assert r.returncode == 0, r.stdout
    assert r.stdout.count("mem_empty ok") == 3, r.stdout


def test_ranks_meet_from_any_thread_and_empty_is_read_in_place():
    # Even ranks call from the main thread, odd ones from another: 20 allreduces each, of
    # which the 8 MiB ones in comm.empty memory (in and out of place) read it where it lies.
    for np_ in (2, 3):
        r = run_job(np_, "threads.py")
        assert r.returncode == 0, r.stdout
        assert r.stdout.count("threads ok") == np_, r.stdout
        assert r.stdout.count(": 2 mapped") == np_, r.stdout


def test_abort_from_another_thread_while_one_waits():
    r = run_job(2, "threads.py", "abort")
    assert r.returncode == 0, r.stdout
    assert "abort ok rank 0: ['PeerFailed']" in r.stdout and "abort ok rank 1" in r.stdout, \
        r.stdout
