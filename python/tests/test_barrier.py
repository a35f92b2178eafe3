"""Barrier through the binding: on 1-4 ranks no rank leaves before the last one entered
(progs/barrier.py's entry and exit times); a barrier against an allreduce is a
Mismatch."""
import pytest

from conftest import rank_lines, run_job


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_no_rank_leaves_early(np_):
    job = run_job(np_, "barrier.py")
    assert job.returncode == 0, job.stdout
    times = {}
    for r in range(np_):
        for line in rank_lines(job.stdout, r):
            _, it, rank, t_in, t_out = line.split()
            assert int(rank) == r, job.stdout
            times.setdefault(int(it), []).append((int(t_in), int(t_out)))
    assert sorted(times) == list(range(12)), job.stdout
    for it, ts in times.items():
        assert len(ts) == np_, job.stdout
        assert max(t for t, _ in ts) < min(t for _, t in ts), (it, job.stdout)


def test_solo(solo):
    assert solo.barrier() is None
    assert solo.ibarrier().wait() is None


def test_barrier_against_allreduce_is_a_mismatch():
    job = run_job(2, "barrier.py", "mismatch")
    assert job.returncode == 0, job.stdout
    said = [[s for s in rank_lines(job.stdout, r) if s.startswith("E ")] for r in range(2)]
    assert all(len(x) == 1 for x in said), job.stdout  # each rank raised
    assert any("Mismatch" in x[0] and "barrier" in x[0] for x in said), job.stdout
