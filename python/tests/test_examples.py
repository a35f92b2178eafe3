"""examples/asgd.py and examples/tasks.py as a user runs them, in short versions."""
import os
import re
import subprocess
import sys

import pytest

from conftest import ZCOLL_RUN, rank_lines

# Run by python_examples, in CI's plain pass only: every case there (conftest.py).
SAMPLE_SPLIT = False

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
ASGD = os.path.join(EXAMPLES, "asgd.py")
DATA = "/usr/share/datasets/fashion-mnist"
SHORT = ["--train", "6000", "--test", "2000", "--epochs", "3"]


def run(cmd, timeout=120):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)


def launched(np_, script, *args):
    return run([ZCOLL_RUN, "-np", str(np_), "--tag-output", "--timeout", "100", sys.executable,
                script, *args])


def accuracy(out):
    """(test, train) accuracy of asgd.py's summary line."""
    m = re.search(r"test accuracy ([0-9.]+) \(train ([0-9.]+)\)", out)
    assert m, out
    return float(m.group(1)), float(m.group(2))


# CI installs it (ci/deps.sh): a missing data set fails there rather than skip.
@pytest.mark.skipif(not os.path.isdir(DATA) and not os.environ.get("CI"),
                    reason="no Fashion-MNIST: apt-get install dataset-fashion-mnist")
def test_asgd_two_ranks_match_one():
    alone = run([sys.executable, ASGD, *SHORT])  # no launcher: a one-rank job
    assert alone.returncode == 0, alone.stdout
    assert len(re.findall(r"^epoch \d train accuracy", alone.stdout, re.M)) == 3, alone.stdout
    assert "asgd.py: ranks 1 fashion-mnist 6000 train / 2000 test, non-blocking" in alone.stdout
    one = accuracy(alone.stdout)
    for mode in ([], ["--blocking"]):
        job = launched(2, ASGD, *SHORT, *mode)
        assert job.returncode == 0, job.stdout
        out = "\n".join(rank_lines(job.stdout, 0))
        assert "ranks 2 fashion-mnist 6000 train" in out and "blocked in " in out, out
        two = accuracy(out)
        # A short run on a tenth of the data: a loose bound (the full run's is 1 point).
        assert one[0] > 0.72 and abs(two[0] - one[0]) < 0.03, (one, two, job.stdout)


def test_asgd_without_data():
    job = run([sys.executable, ASGD, "--data", "/nonexistent"])
    assert job.returncode == 2 and "apt-get install dataset-fashion-mnist" in job.stdout


def test_tasks_three_ranks():
    job = launched(3, os.path.join(EXAMPLES, "tasks.py"), "--rounds", "4", "--count", "5000")
    assert job.returncode == 0, job.stdout
    lines = rank_lines(job.stdout, 0)
    assert [s for s in lines if s.startswith("tasks: round")] == [
        f"tasks: round {k}: 7 tasks on 3 ranks saw {775 + 7 * k} samples; grad[0..2] = "
        f"{g}" for k, g in enumerate(["5.2857 6.2857 5.4286", "6.7143 5.8571 6.8571",
                                       "6.2857 5.4286 4.5714", "5.8571 6.8571 6.0000"])], lines
    assert lines[-1] == "tasks: 4 rounds, every element of both keys as expected on every rank"
