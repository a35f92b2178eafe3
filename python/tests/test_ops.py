"""Created ops: a Python function (maxloc over a structured dtype, a non-commutative
2x2 matrix product), premul_sum weighted averages, checked against numpy; their
lifetime rules; an exception raised inside the function."""
import sys

import numpy as np
import pytest
import zcoll

from conftest import PROGS, rank_lines, run_job

sys.path.insert(0, PROGS)
import ops as progs_ops  # noqa: E402  (only its input functions: main() needs argv)


@pytest.mark.parametrize("np_,count,progress", [(2, 1037, "caller"), (3, 1037, "caller"),
                                                (4, 333, "thread")])
def test_against_numpy(tmp_path, np_, count, progress):
    job = run_job(np_, "ops.py", "check", tmp_path, count, env={"ZCOLL_PROGRESS": progress})
    assert job.returncode == 0, job.stdout
    P = progs_ops
    # maxloc: the largest value, the lowest rank among equals.
    want_ml = {}
    for key, step in (("maxloc", 0), ("maxloc_i", 1), ("maxloc_p2", 2), ("maxloc_p3", 3)):
        allp = np.stack([P.pairs(r, count, step) for r in range(np_)])
        best = np.lexsort((allp["i"], -allp["v"]), axis=0)[0]
        want_ml[key] = allp[best, np.arange(count)]
    # Matrices in rank order: M0 @ M1 @ ... (not the reverse, for some element).
    mats = [P.matrices(r, count) for r in range(np_)]
    prod, rev = mats[0], mats[-1]
    for r in range(1, np_):
        prod, rev = prod @ mats[r], rev @ mats[np_ - 1 - r]
    assert not np.array_equal(prod, rev)
    total = np_ * (np_ + 1) / 2
    for r in range(np_):
        got = np.load(tmp_path / f"rank{r}.npz")
        for key, want in want_ml.items():
            assert got[key].dtype == P.PAIR and np.array_equal(got[key], want), (r, key)
        for key in ("matmul", "matmul_i"):
            assert got[key].shape == (count, 2, 2) and np.array_equal(got[key], prod), (r, key)
        for dtype, rtol in (("float16", 2e-3), ("float32", 1e-6), ("float64", 1e-12)):
            want = sum((q + 1) / total * P.values(q, count, "float64") for q in range(np_))
            for key in (f"wavg-{dtype}", f"wavg_p-{dtype}"):
                assert got[key].dtype == np.dtype(dtype)
                np.testing.assert_allclose(got[key], want, rtol=rtol, atol=rtol * 8,
                                           err_msg=f"rank {r} {key}")


def test_exception_in_function_surfaces():
    job = run_job(2, "ops.py", "raise")
    assert job.returncode == 0, job.stdout
    res1 = [s for s in rank_lines(job.stdout, 1) if s.startswith("RESULT ")]
    assert res1[0].startswith("RESULT ValueError: boom on rank 1 | zcoll: raised by op "
                              "main.boom (<zcoll.CreatedOp 64 user main.boom"), job.stdout
    assert "during allreduce; the collective failed and the communicator is broken" \
        in res1[0]
    # The library was told (zcoll_op_fail): the collective failed on rank 1 with the
    # function's exception, and its next call finds the communicator broken.
    assert res1[1].startswith("RESULT InvalidArgument: the communicator is unusable"), \
        job.stdout
    assert "op main.boom raised ValueError: boom on rank 1" in res1[1], job.stdout
    # Rank 0 fails in that same collective (the agreement that ends it), and after.
    res0 = [s for s in rank_lines(job.stdout, 0) if s.startswith("RESULT ")]
    assert len(res0) == 2, job.stdout
    for line in res0:
        assert line.startswith("RESULT PeerFailed: "), job.stdout
        assert "rank 1 aborted: rank 1: op main.boom raised ValueError: boom on rank 1" \
            in line, job.stdout


@pytest.mark.parametrize("count,bad,how,form", [
    (4, 2, "raise", "blocking"), (4096, 1, "raise", "blocking"), (4, 3, "return", "blocking"),
    (1, 0, "raise", "blocking"), (4, 1, "raise", "request"), (4096, 2, "raise", "request"),
    (4, 1, "raise", "thread")])
def test_failed_function_fails_the_collective_everywhere(count, bad, how, form):
    """One rank of four fails in its function: no rank gets a result from that allreduce
    (issue 20 #8: butterfly's ranks had theirs before the failing rank's news came), in
    any form of the call."""
    job = run_job(4, "ops.py", "raise", count, bad, how, form)
    assert job.returncode == 0, job.stdout
    if how == "raise":
        why = f"op main.boom raised ValueError: boom on rank {bad}"
    else:
        why = ("op main.boom raised TypeError: op main.boom returned a ndarray: an op writes "
               "its result into inoutvec (in place) and returns None")
    for r in range(4):
        res = [s for s in rank_lines(job.stdout, r) if s.startswith("RESULT ")]
        assert len(res) == 2, job.stdout
        if r == bad:
            exc = "ValueError: boom" if how == "raise" else "TypeError: op main.boom returned"
            assert res[0].startswith(f"RESULT {exc}"), (r, job.stdout)
            assert why in res[1], (r, job.stdout)
        else:
            for line in res:
                assert line.startswith("RESULT PeerFailed: "), (r, job.stdout)
                assert f"rank {bad} aborted: rank {bad}: {why}" in line, (r, job.stdout)


def test_exception_in_vec_commit():
    def bad(invec, inout):
        raise ZeroDivisionError("in the op")

    with zcoll.Comm(config={"RANK": 0, "SIZE": 1}) as comm, zcoll.op_create(bad) as op:
        with comm.vec("k", 2, 3, np.float64, op) as v:
            v.commit(np.ones(3))  # the first commit copies: fn is not called
            with pytest.raises(ZeroDivisionError, match="in the op") as e:
                v.commit(np.ones(3))
            assert "communicator is broken" in e.value.__notes__[0]
            with pytest.raises(zcoll.PeerFailed, match="revoked"):
                comm.allreduce(np.zeros(2))
            comm.abort()


def test_function_views_and_dtype():
    """The function gets numpy views of the collective's dtype (or of the op's),
    invec read-only, and its result lands in the output."""
    seen = []

    def fn(invec, inout):
        seen.append((invec.dtype, inout.dtype, invec.flags.writeable, inout.flags.writeable,
                     invec.shape))
        inout *= invec

    with zcoll.Comm(config={"RANK": 0, "SIZE": 1}) as comm, zcoll.op_create(fn) as op:
        with comm.vec("v", 2, 4, np.int32, op) as v:
            v.commit(np.arange(4, dtype=np.int32))
            v.commit(np.full(4, 3, np.int32))
            assert v.get().tolist() == [0, 3, 6, 9]
    assert seen == [(np.dtype(np.int32), np.dtype(np.int32), False, True, (4,))]


def test_create_checks_and_lifetime():
    with pytest.raises(TypeError, match="fn must be callable"):
        zcoll.op_create(3)
    with pytest.raises(ValueError, match="is 12 bytes: an op's element must be a power of two"):
        zcoll.op_create(lambda a, b: None, dtype=[("a", "<f4"), ("b", "<f4"), ("c", "<f4")])
    with pytest.raises(zcoll.InvalidArgument, match="elem_bytes 24 is not 0 or a power of two"):
        zcoll.op_create(lambda a, b: None, elem_bytes=24)
    with pytest.raises(zcoll.InvalidArgument, match="scalar inf is not finite"):
        zcoll.premul_sum(float("inf"))
    op = zcoll.op_create(lambda a, b: None, commutative=False, elem_bytes=16)
    assert op.name == "user" and not op.commutative and op.elem_bytes == 16
    assert zcoll._lib.lib.zcoll_op_name(int(op)) == b"user"
    with zcoll.premul_sum(0.25) as pm:
        assert pm.name == "premul_sum" and pm.scalar == 0.25 and "scalar 0.25" in repr(pm)
    assert pm.freed and "freed" in repr(pm)
    with pytest.raises(ValueError, match="the op was freed"):
        int(pm)
    with zcoll.Comm(config={"RANK": 0, "SIZE": 1}) as comm:
        x = np.ones(8)
        req = comm.allreduce_init(x, op=op)
        with pytest.raises(zcoll.InvalidArgument, match=r"op \d+ is in use by 1 request"):
            op.free()
        req.free()
        op.free()
        op.free()  # idempotent
        with pytest.raises(ValueError, match="the op was freed"):
            comm.allreduce(x, op=op)
    lib = zcoll._lib.lib
    assert lib.zcoll_op_free(zcoll.SUM) == 1 and b"is a built-in op" in lib.zcoll_last_error()


def test_premul_sum_needs_floats():
    with zcoll.Comm(config={"RANK": 0, "SIZE": 1}) as comm, zcoll.premul_sum(2.0) as op:
        assert comm.allreduce(np.arange(4, dtype=np.float32), op=op).tolist() == [0, 2, 4, 6]
        with pytest.raises(zcoll.InvalidArgument, match="premul sum needs a floating-point "
                                                        "dtype, not int32"):
            comm.allreduce(np.arange(4, dtype=np.int32), op=op)
        comm.abort()  # an argument error breaks the communicator
