"""`with comm.group():` through the binding on 1-4 ranks (progs/group.py checks every
element: a ring where every rank sends first, 50 fused allreduces of dropped temporaries,
a mix with i-forms and a nested block), a mismatch inside a group (Mismatch on both sides
at the block's end), an exception inside the block (the communicator revoked: the peers
fail instead of waiting), and what one rank can check alone."""
import gc

import numpy as np
import pytest
import zcoll

from conftest import rank_lines, run_job


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_every_element(np_):
    job = run_job(np_, "group.py", timeout=120)
    assert job.returncode == 0, job.stdout
    for r in range(np_):
        assert any(line.startswith("OK ") for line in rank_lines(job.stdout, r)), job.stdout


def _errors(job, r):
    return [s for s in rank_lines(job.stdout, r) if s.startswith("E ")]


def test_mismatch_raised_at_the_end_on_both_sides():
    job = run_job(2, "group.py", "mismatch")
    assert job.returncode == 0, job.stdout
    for r in (0, 1):
        said = _errors(job, r)
        assert len(said) == 1 and said[0].startswith("E Mismatch "), job.stdout


def test_an_exception_in_the_block_revokes():
    job = run_job(3, "group.py", "raise", env={"ZCOLL_TIMEOUT": "60"}, timeout=50)
    assert job.returncode == 0, job.stdout
    assert _errors(job, 0) == ["E RuntimeError the block failed"], job.stdout
    for r in (1, 2):  # failed by the revoke, long before the 60 s timeout
        said = _errors(job, r)
        assert len(said) == 1 and said[0].startswith("E PeerFailed "), job.stdout


def test_alone(solo):
    x = np.arange(4, dtype=np.float32)
    with solo.group() as c:
        assert c is solo
        out = solo.allreduce(x * 2)  # a temporary only the group holds
        rq = solo.iallreduce(x)
        with pytest.raises(zcoll.InvalidArgument, match="group still open"):
            rq.test()
        dropped = solo.iallreduce(x)  # dropped in the block: the communicator keeps it
        del dropped
        gc.collect()
    assert np.array_equal(out, x * 2) and np.array_equal(rq.wait(), x)
    # a send to oneself inside a group waits for nothing: its receive is in the group
    got = np.zeros(4, np.float32)
    with solo.group():
        solo.send(x + 1, 0, tag=2)
        solo.recv(got, 0, tag=2)
    assert np.array_equal(got, x + 1)


def test_refused_at_the_call_then_revoked():
    """An argument the library refuses alone fails the call at once, inside the block too;
    the exception leaves the block, which revokes the communicator (its own: the shared
    one-rank fixture must stay usable)."""
    x = np.arange(4, dtype=np.float32)
    with zcoll.Comm(config={"RANK": 0, "SIZE": 1}) as comm:
        with pytest.raises(zcoll.InvalidArgument, match="peer 1 is not a rank"):
            with comm.group():
                comm.send(x, 1)
        with pytest.raises(zcoll.PeerFailed, match="revoked"):
            comm.allreduce(x)


def test_closed_inside_the_block():
    comm = zcoll.Comm(config={"RANK": 0, "SIZE": 1})
    with comm.group():
        comm.allreduce(np.ones(3))
        comm.close()  # drops what was queued
    assert comm.closed
