"""A communicator from zcoll.get_unique_id(): moved through a file (progs/uid.py), and
through MPI inside an mpirun job (examples/mpi4py_init.py, Debian's python3-mpi4py);
and the misuse that must raise. Communicators from a split (progs/split.py)."""
import os
import shutil
import subprocess
import sys

import pytest
import zcoll

from conftest import HERE, rank_lines, run_job

# Run by python_examples, in CI's plain pass only: every case there (conftest.py).
SAMPLE_SPLIT = False

EXAMPLE = os.path.join(HERE, "..", "..", "examples", "mpi4py_init.py")


@pytest.mark.parametrize("size", [1, 3])
def test_from_a_file(tmp_path, size):
    env = dict(os.environ, ZCOLL_RANK="5", ZCOLL_SIZE="9")  # not this job's: ignored
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "progs", "uid.py"),
                               str(tmp_path), str(r), str(size)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(size)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    for r, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0 and f"OK {r} {size}" in out, out


def _mpirun(np, example, *args, timeout=120):
    """examples/<example> on np ranks under Open MPI's mpirun (ob1, self+vader), with this
    zcoll package on PYTHONPATH; skips where mpi4py or mpirun is missing."""
    pytest.importorskip("mpi4py", reason="python3-mpi4py (ci/deps.sh installs it)")
    mpirun = shutil.which("mpirun")
    if not mpirun:
        pytest.skip("no mpirun (openmpi-bin)")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(zcoll.__file__)))
    return subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(np),
                           "--mca", "pml", "ob1", "--mca", "btl", "self,vader", sys.executable,
                           os.path.join(os.path.dirname(EXAMPLE), example), *args], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)


def test_under_mpirun_with_mpi4py():
    job = _mpirun(3, os.path.basename(EXAMPLE), "--elements", "50000", "--iters", "3")
    assert job.returncode == 0, job.stdout
    for r in range(3):
        assert f"rank {r} of 3: zcoll's average equals MPI's" in job.stdout, job.stdout
    # The README's short one (From mpi4py): the average of ranks 0 and 1 on both.
    job = _mpirun(2, "mpi4py_average.py")
    assert job.returncode == 0, job.stdout
    for r in range(2):
        assert f"rank {r}: 0.5 (MPI rank {r}, over " in job.stdout, job.stdout


def test_misuse():
    with pytest.raises(ValueError, match="go with unique_id"):
        zcoll.Comm(rank=0, size=1)
    with pytest.raises(TypeError, match="128 bytes"):
        zcoll.Comm(unique_id=b"short", rank=0, size=1)
    with pytest.raises(zcoll.InvalidArgument, match="not a unique id"):
        zcoll.Comm(unique_id=bytes(128), rank=0, size=2)
    uid = zcoll.get_unique_id()
    assert isinstance(uid, bytes) and len(uid) == 128 and uid != zcoll.get_unique_id()
    with zcoll.Comm(unique_id=uid, rank=0, size=1) as comm:
        assert comm.size == 1
    with pytest.raises(zcoll.InvalidArgument, match="used already"):
        zcoll.Comm(unique_id=uid, rank=0, size=1)


@pytest.mark.parametrize("np_", [1, 3, 4])
def test_split(np_):
    job = run_job(np_, "split.py")
    assert job.returncode == 0, job.stdout
    for r in range(np_):
        assert f"OK {r}" in rank_lines(job.stdout, r), job.stdout


def test_mpi4py_sgd_example_matches_one_process():
    """examples/mpi4py_sgd.py: scikit-learn's SGDClassifier on 4 shards, averaged by zcoll
    every 2 mini-batches, ends within 1 % of one process on all the data (test accuracy).
    Not in CI's sanitizer pass (ZCOLL_TEST_SAMPLE=1): 15 s of scikit-learn over the same
    calls test_under_mpirun_with_mpi4py makes there."""
    if os.environ.get("ZCOLL_TEST_SAMPLE") == "1":
        pytest.skip("the sanitizer pass's sample leaves it to the plain pass")
    if os.environ.get("CI") != "true":
        pytest.importorskip("sklearn", reason="python3-sklearn (ci/test.sh installs it)")
    job = _mpirun(4, "mpi4py_sgd.py", timeout=180)
    assert job.returncode == 0, job.stdout
    assert "test accuracy: 4 ranks averaged by zcoll" in job.stdout, job.stdout
    assert ": within 1%" in job.stdout, job.stdout
