"""Allgather, reduce-scatter, reduce and the object collectives through the binding on
1-4 ranks (progs/scatter_gather.py checks every element against numpy), and their
argument errors."""
import numpy as np
import pytest
import zcoll

from conftest import rank_lines, run_job


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_every_element(np_):
    job = run_job(np_, "scatter_gather.py", timeout=120)
    assert job.returncode == 0, job.stdout
    for r in range(np_):
        assert any(line.startswith("OK ") for line in rank_lines(job.stdout, r)), job.stdout


def test_solo_shapes(solo):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert solo.allgather(x).shape == (1, 4, 3)
    assert np.array_equal(solo.reduce_scatter(x), x)
    assert np.array_equal(solo.reduce(x, 0), x)
    assert solo.allgather_object([1, "a"]) == [[1, "a"]]
    assert solo.broadcast_object({"k": 2}) == {"k": 2}


def test_argument_errors(solo):
    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="root 1 is not a rank"):
        solo.reduce(x, 1)
    with pytest.raises(ValueError, match="elements"):
        solo.allgather(x, out=np.zeros(5, np.float32))
    with pytest.raises(TypeError, match="dtype"):
        solo.reduce_scatter(x, out=np.zeros(4, np.float64))
    with pytest.raises(ValueError, match="not C-contiguous"):
        solo.allgather(np.zeros((4, 4), np.float32)[:, 1])
    with pytest.raises(ValueError, match="overlap"):
        solo.allgather(x[1:], out=x[:3])


class DLPackOnly:
    """An object that exports its memory through DLPack only (as a torch tensor does):
    no buffer protocol, no ndarray."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_dlpack_objects_are_reduced_where_they_lie(solo):
    base = np.arange(8, dtype=np.float32)
    x = DLPackOnly(base)
    assert np.array_equal(solo.allreduce(x), base)
    with zcoll.premul_sum(2.0) as twice:  # in place: written into the exporter's memory
        res = solo.allreduce(x, out=x, op=twice)
    assert res is x and np.array_equal(base, 2 * np.arange(8, dtype=np.float32))
    out = DLPackOnly(np.zeros(8, np.float32))
    solo.allgather(x, out=out)
    assert np.array_equal(out.a, base)
    assert np.array_equal(solo.reduce_scatter(x), base)
    with pytest.raises(TypeError, match="not in host memory"):
        class OnDevice(DLPackOnly):
            def __dlpack_device__(self):
                return (2, 0)  # kDLCUDA
        solo.allreduce(OnDevice(base))
