"""Allreduce through the binding on 1-4 ranks, every element against numpy."""
import sys

import numpy as np
import pytest

from conftest import PROGS, run_job

sys.path.insert(0, PROGS)
from inputs import reference  # noqa: E402


@pytest.mark.parametrize("np_,count", [(1, 1037), (2, 1037), (3, 1), (3, 4099), (4, 0),
                                       (4, 1037)])
def test_matrix(tmp_path, np_, count):
    job = run_job(np_, "matrix.py", tmp_path, count)
    assert job.returncode == 0, job.stdout
    for r in range(np_):
        got = np.load(tmp_path / f"rank{r}.npz")
        assert len(got.files) == 9 * 5 * 11 + 11  # dtypes x ops x modes, buffers
        for key in got.files:
            mode, dtype, op = key.split("-")
            step = int(mode[-1]) if mode[-1].isdigit() else 0
            want = reference(np_, count, dtype, op, step)
            have = got[key]
            assert have.dtype == want.dtype, (r, key)
            bad = np.flatnonzero(have != want)
            assert bad.size == 0, (f"rank {r} {key}: {bad.size} of {count} wrong, first at "
                                   f"{bad[0]}: {have[bad[0]]} != {want[bad[0]]}")
