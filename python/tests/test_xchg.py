"""Alltoall(v), allgatherv, gather(v) and scatter(v) through the binding on 1-4 ranks
(progs/xchg.py checks every element against numpy, every root, uneven and zero counts,
gaps left untouched, in place), counts two ranks disagree on (Mismatch on both), and the
argument errors raised before the C call."""
import numpy as np
import pytest

from conftest import rank_lines, run_job


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_every_element(np_):
    job = run_job(np_, "xchg.py", timeout=120)
    assert job.returncode == 0, job.stdout
    for r in range(np_):
        assert any(line.startswith("OK ") for line in rank_lines(job.stdout, r)), job.stdout


@pytest.mark.parametrize("np_", [2, 3])
def test_counts_disagreeing_are_a_mismatch_on_both(np_):
    job = run_job(np_, "xchg.py", "mismatch")
    assert job.returncode == 0, job.stdout
    for r in (0, 1):  # the pair that disagrees; a third rank may end either way
        said = [s for s in rank_lines(job.stdout, r) if s.startswith("E ")]
        assert len(said) == 1 and said[0].startswith("E Mismatch "), job.stdout


def test_solo_shapes(solo):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert np.array_equal(solo.alltoall(x), x) and solo.alltoall(x).shape == (4, 3)
    assert np.array_equal(solo.alltoallv(x, [5], [5]), x.ravel()[:5])
    assert np.array_equal(solo.allgatherv(x, [12]), x.ravel())
    assert np.array_equal(solo.gather(x), x[None])
    assert np.array_equal(solo.gatherv(x, [12]), x.ravel())
    assert np.array_equal(solo.scatter(x), x)
    assert np.array_equal(solo.scatterv(x, [7], displs=[2]), x.ravel()[2:9])
    assert np.array_equal(solo.ialltoall(x).wait(), x)
    got = solo.alltoallv(x, [2], [2], rdispls=[3])  # a gap of 3 zeros before the block
    assert np.array_equal(got, [0, 0, 0, 0, 1]), got


def test_argument_errors(solo):
    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="root 1 is not a rank"):
        solo.gather(x, 1)
    with pytest.raises(ValueError, match="root -1 is not a rank"):
        solo.scatterv(x, [4], root=-1)
    with pytest.raises(ValueError, match="elements"):
        solo.alltoall(x, out=np.zeros(5, np.float32))
    with pytest.raises(TypeError, match="dtype"):
        solo.gather(x, out=np.zeros(4, np.float64))
    with pytest.raises(ValueError, match="not C-contiguous"):
        solo.alltoall(np.zeros((4, 4), np.float32)[:, 1])
    with pytest.raises(ValueError, match="overlap"):
        solo.alltoall(x[1:], out=x[:3])
    with pytest.raises(ValueError, match="sendcounts has 2 entries, the communicator 1"):
        solo.alltoallv(x, [1, 1], [1])
    with pytest.raises(ValueError, match="negative"):
        solo.alltoallv(x, [-1], [1])
    with pytest.raises(ValueError, match="non-integer"):
        solo.allgatherv(x, [4.5])
    with pytest.raises(TypeError, match="integers"):
        solo.allgatherv(x, 4)
    with pytest.raises(ValueError, match="ends past its 4 elements"):
        solo.alltoallv(x, [3], [3], sdispls=[2])
    with pytest.raises(ValueError, match="counts.0. is 3, but x"):
        solo.allgatherv(x, [3])
    with pytest.raises(ValueError, match="at least 4"):
        solo.allgatherv(x, [4], out=np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="in place"):
        solo.alltoallv(x, [1], [2], out=x)
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros(4, np.float32)
        ro.flags.writeable = False
        solo.alltoall(x, out=ro)
    with pytest.raises(ValueError, match="the root needs"):
        solo.scatter(None)
    with pytest.raises(ValueError, match="the root needs counts"):
        solo.gatherv(x, None)
    with pytest.raises(TypeError, match="Python objects"):
        solo.alltoall(np.array([None] * 4, object))


def test_dtype_without_a_code_goes_as_bytes(solo):
    x = np.arange(6) + 1j * np.arange(6)
    assert np.array_equal(solo.alltoallv(x, [4], [4], sdispls=[1]), x[1:5])
    assert np.array_equal(solo.scatter(x), x)


def test_dlpack_objects_are_moved_where_they_lie(solo):
    from test_scatter_gather import DLPackOnly
    base = np.arange(6, dtype=np.int64)
    out = DLPackOnly(np.zeros(6, np.int64))
    solo.alltoall(DLPackOnly(base), out=out)
    assert np.array_equal(out.a, base)
    out = DLPackOnly(np.zeros(3, np.int64))
    solo.scatterv(DLPackOnly(base), [3], out=out, displs=[2])
    assert np.array_equal(out.a, base[2:5])
