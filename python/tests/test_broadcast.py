"""Broadcast through the binding: every root on 1-4 ranks, every dtype, blocking,
non-blocking and persistent, in place (progs/broadcast.py checks every element)."""
import numpy as np
import pytest
import zcoll

from conftest import rank_lines, run_job


@pytest.mark.parametrize("np_,count,algo", [(1, 1037, "auto"), (2, 1, "auto"),
                                            (3, 4099, "tree"), (4, 0, "auto"),
                                            (4, 1037, "chain"), (4, 70000, "auto")])
def test_every_root_and_dtype(np_, count, algo):
    # The large count under ASan+UBSan (an unoptimized build) takes ~30 s on a quiet
    # machine, ~50 s on a busy one: its hang detector is 120 s.
    job = run_job(np_, "broadcast.py", count, env={"ZCOLL_BCAST_ALGO": algo},
                  timeout=120 if count > 4099 else 60)
    assert job.returncode == 0, job.stdout
    # 13 dtypes (6 above 4099 elements) x (blocking, non-blocking, 3 persistent starts) + a
    # bytearray, per root
    ndtypes = 13 if count <= 4099 else 6
    for r in range(np_):
        assert rank_lines(job.stdout, r) == [f"OK {np_ * (ndtypes * 5 + 1)}"], job.stdout


def test_buffer_rules(solo):
    x = np.arange(6.0)
    assert solo.broadcast(x) is x and x.tolist() == list(range(6))
    with pytest.raises(ValueError, match=r"x is not C-contiguous \(shape \(3,\)"):
        solo.broadcast(x[::2])
    ro = np.zeros(4)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="x is read-only: a broadcast writes it in place"):
        solo.broadcast(ro)
    with pytest.raises(TypeError, match="holds Python objects"):
        solo.broadcast(np.array([None, 1], object))
    with pytest.raises(TypeError, match="buffer protocol, not list"):
        solo.ibroadcast([1, 2])


def test_bad_root_is_the_library_error():
    with zcoll.Comm(config={"RANK": 0, "SIZE": 1}) as comm:
        with pytest.raises(zcoll.InvalidArgument, match="root 3"):
            comm.broadcast(np.zeros(4), root=3)
