"""The partial allreduce through the binding on four ranks (progs/partial.py), and
compressed averaging (progs/wire.py)."""
import pytest
import zcoll

from conftest import rank_lines, run_job


@pytest.mark.parametrize("progress", ["caller", "thread"])
def test_partial_rounds(progress):
    job = run_job(4, "partial.py", env={"ZCOLL_PROGRESS": progress}, timeout=120)
    assert job.returncode == 0, job.stdout
    for r in range(4):
        assert f"OK {r}" in rank_lines(job.stdout, r), job.stdout


@pytest.mark.parametrize("wire", ["bfloat16", "float16"])
def test_compressed_averaging(wire):
    """Comm(config={"WIRE_DTYPE": ...}): an allreduce and a partial round on three ranks,
    the same bits everywhere, rounded to the wire type, within the documented bound."""
    job = run_job(3, "wire.py", wire, timeout=120)
    assert job.returncode == 0, job.stdout
    for r in range(3):
        assert f"OK {r}" in rank_lines(job.stdout, r), job.stdout


def test_wire_dtype_names_what_it_accepts():
    with pytest.raises(zcoll.InvalidArgument) as e:
        zcoll.Comm(config={"RANK": 0, "SIZE": 1, "WIRE_DTYPE": "int8"})
    assert "WIRE_DTYPE" in str(e.value) and "bfloat16" in str(e.value), e.value
