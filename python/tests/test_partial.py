"""The partial allreduce through the binding on four ranks (progs/partial.py)."""
import pytest

from conftest import rank_lines, run_job


@pytest.mark.parametrize("progress", ["caller", "thread"])
def test_partial_rounds(progress):
    job = run_job(4, "partial.py", env={"ZCOLL_PROGRESS": progress}, timeout=120)
    assert job.returncode == 0, job.stdout
    for r in range(4):
        assert f"OK {r}" in rank_lines(job.stdout, r), job.stdout
