"""Send, recv, isend and irecv through the binding on 1-4 ranks (progs/p2p.py checks every
element: a ring blocking and not, eager and rendezvous sizes, tags out of order, a send to
oneself), counts two ranks disagree on (Mismatch on both), and the errors raised at once."""
import numpy as np
import pytest
import zcoll

from conftest import rank_lines, run_job
from test_scatter_gather import DLPackOnly


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_every_element(np_):
    job = run_job(np_, "p2p.py", timeout=120)
    assert job.returncode == 0, job.stdout
    for r in range(np_):
        assert any(line.startswith("OK ") for line in rank_lines(job.stdout, r)), job.stdout


def test_count_mismatch_raises_on_both_sides():
    job = run_job(2, "p2p.py", "mismatch")
    assert job.returncode == 0, job.stdout
    for r in (0, 1):
        said = [s for s in rank_lines(job.stdout, r) if s.startswith("E ")]
        assert len(said) == 1 and said[0].startswith("E Mismatch "), job.stdout


def test_to_oneself(solo):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.zeros((2, 3), np.float32)
    rq = solo.irecv(out, 0, tag=3)
    assert solo.send(x, 0, tag=3) is None
    assert rq.wait() is out and np.array_equal(out, x)
    y = np.arange(4) + 1j  # complex: no zcoll code, moved as bytes
    got = np.zeros(4, complex)
    rq = solo.irecv(got, 0)
    solo.isend(y, 0).wait()
    assert np.array_equal(rq.wait(), y)
    # DLPack exporters, moved where they lie
    out = DLPackOnly(np.zeros(5, np.int64))
    rq = solo.irecv(out, 0, tag=1)
    solo.send(DLPackOnly(np.arange(5, dtype=np.int64)), 0, tag=1)
    assert rq.wait() is out and np.array_equal(out.a, np.arange(5))


def test_errors_raised_at_once(solo):
    x = np.zeros(4, np.int32)
    with pytest.raises(zcoll.InvalidArgument, match="peer 1 is not a rank"):
        solo.send(x, 1)
    with pytest.raises(zcoll.InvalidArgument, match="peer -1 is not a rank"):
        solo.irecv(x, -1)
    with pytest.raises(zcoll.InvalidArgument, match="tag -2 is negative"):
        solo.isend(x, 0, tag=-2)
    with pytest.raises(zcoll.InvalidArgument, match="tag -1 is negative"):
        solo.recv(x, 0, tag=-1)
    with pytest.raises(zcoll.InvalidArgument, match="no receive posted"):
        solo.send(x, 0)  # to oneself, nothing posted: refused, not a wait for ever
    with pytest.raises(ValueError, match="does not fit a C int"):
        solo.send(x, 0, tag=2**32)  # ctypes would wrap it to tag 0
    with pytest.raises(TypeError, match="peer must be an integer"):
        solo.send(x, 0.0)
    with pytest.raises(ValueError, match="not C-contiguous"):
        solo.irecv(np.zeros((4, 4), np.int32)[:, 1], 0)
    ro = np.zeros(4, np.int32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        solo.recv(ro, 0)
    with pytest.raises(TypeError, match="Python objects"):
        solo.isend(np.array([None] * 4, object), 0)
    # none of these broke the communicator
    rq = solo.irecv(ro.copy(), 0)
    solo.send(np.arange(4, dtype=np.int32), 0)
    assert np.array_equal(rq.wait(), np.arange(4))
