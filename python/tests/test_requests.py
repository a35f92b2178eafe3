"""Request lifetimes on two ranks (progs/requests.py), with the progress thread too."""
import pytest

from conftest import rank_lines, run_job

CHECKS = ["persistent after refusals", "dropped request finished", "with", "five in flight",
          "closed True"]


@pytest.mark.parametrize("progress", ["caller", "thread"])
def test_request_lifetimes(progress):
    job = run_job(2, "requests.py", env={"ZCOLL_PROGRESS": progress})
    assert job.returncode == 0, job.stdout
    for r in range(2):
        ok = [line[3:] for line in rank_lines(job.stdout, r) if line.startswith("OK ")]
        assert [c for c in ok if not c.startswith(("free refused", "close refused"))] == CHECKS
    ok0 = rank_lines(job.stdout, 0)
    assert "OK free refused: zcoll_request_free: the request is still in flight " \
           "(zcoll_wait for it first)" in ok0
    assert any(line.startswith("OK close refused: zcoll_comm_destroy: 1 request is still "
                               "in flight") for line in ok0)
