"""The task-based vector interface: task threads on several ranks, four keys at once
(built-in, premul_sum and created ops), a misuse refused with the library's message
(progs/vec.py); the binding's own checks."""
import numpy as np
import pytest
import zcoll

from conftest import rank_lines, run_job


@pytest.mark.parametrize("np_,progress", [(2, "caller"), (3, "caller"), (3, "thread")])
def test_threads_and_keys(np_, progress):
    job = run_job(np_, "vec.py", 3, env={"ZCOLL_PROGRESS": progress})
    assert job.returncode == 0, job.stdout
    for r in range(np_):
        ok = [s for s in rank_lines(job.stdout, r) if s.startswith(("OK", "MISUSE"))]
        want = ["OK round 0", "OK round 1", "OK round 2", "OK after misuse"]
        if r == 0:
            want.insert(3, "MISUSE InvalidArgument: zcoll_vec_commit: key 'misuse': more "
                           "commits than tasks (all 1 of this rank's are in for round 0, which "
                           "is not done yet)")
        assert ok == want, job.stdout


def test_rounds_ahead_refused(solo):
    with solo.vec("ahead", 1, 2, np.int32) as v:
        for k in range(2):  # rounds 0 and 1 end at once on one rank
            v.commit(np.full(2, k, np.int32))
        with pytest.raises(zcoll.InvalidArgument, match="more commits than tasks \\(rounds 0 "
                                                        "and 1 are done"):
            v.commit(np.zeros(2, np.int32))
        assert v.get().tolist() == [0, 0] and v.get().tolist() == [1, 1]


def test_binding_checks(solo):
    with solo.vec("checks", 2, (2, 3), "float32") as v:
        assert v.shape == (2, 3) and v.size == 6 and "checks" in repr(v)
        with pytest.raises(TypeError, match="x has dtype float64, vector 'checks' has float32"):
            v.commit(np.zeros(6))
        with pytest.raises(ValueError, match="x has 5 elements, vector 'checks' has 6"):
            v.commit(np.zeros(5, np.float32))
        with pytest.raises(ValueError, match="x is not C-contiguous"):
            v.commit(np.zeros((3, 2), np.float32).T)
        v.commit(np.ones((2, 3), np.float32))
        v.commit(memoryview(np.full(6, 2, np.float32)))  # any buffer of the dtype
        out = np.zeros(6, np.float32)
        assert v.get(out) is out and out.tolist() == [3.0] * 6
    assert "freed" in repr(v)
    with pytest.raises(ValueError, match="vector 'checks' was freed"):
        v.commit(np.ones(6, np.float32))
    v.free()  # idempotent
    with pytest.raises(zcoll.InvalidArgument, match="key 'dup' is in use on this rank"):
        with solo.vec("dup", 1, 1, np.int64), solo.vec("dup", 1, 1, np.int64):
            pass
    with pytest.raises(zcoll.InvalidArgument, match="a key has 1 to 63 bytes"):
        solo.vec("k" * 64, 1, 1, np.int64)
    with pytest.raises(zcoll.InvalidArgument, match="0 local tasks"):
        solo.vec("none", 0, 1, np.int64)
