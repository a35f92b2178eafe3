"""Errors: what the binding refuses before calling the library (with a message that
says what to change), and the library's statuses as exceptions carrying its message."""
import array
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import zcoll
from zcoll import _dtypes

from conftest import rank_lines, run_job, spawn_ranks


def test_non_contiguous_rejected(solo):
    x = np.arange(20.0)[::2]
    with pytest.raises(ValueError, match=r"x is not C-contiguous \(shape \(10,\), strides \(16,\)\)"):
        solo.allreduce(x)
    with pytest.raises(ValueError, match="x is not C-contiguous"):
        solo.allreduce(np.zeros((4, 4), np.float32).T)
    with pytest.raises(ValueError, match="x is not C-contiguous"):
        solo.allreduce(memoryview(bytearray(16))[::2])
    with pytest.raises(ValueError, match="out is not C-contiguous"):
        solo.allreduce(np.zeros(5), out=np.zeros(10)[::2])


def test_out_checked(solo):
    x = np.zeros(8, np.float32)
    with pytest.raises(TypeError, match="out has dtype float64, x has float32"):
        solo.allreduce(x, out=np.zeros(8))
    with pytest.raises(ValueError, match="out has 7 elements, x has 8"):
        solo.allreduce(x, out=np.zeros(7, np.float32))
    ro = np.zeros(8, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        solo.allreduce(x, out=ro)
    with pytest.raises(ValueError, match="x is read-only"):
        solo.allreduce(ro, out=ro)
    buf = np.zeros(12, np.float32)
    with pytest.raises(ValueError, match="overlap"):
        solo.allreduce(buf[:8], out=buf[4:])
    # The same memory through another object is in place, not an overlap.
    buf[:] = 3
    assert solo.allreduce(buf, out=memoryview(buf)).tolist() == [3.0] * 12


@pytest.mark.parametrize("dtype", ["complex128", "int16", "bool", "float128", "U3"])
def test_unsupported_dtype(solo, dtype):
    with pytest.raises(TypeError, match=f"cannot reduce dtype '{np.dtype(dtype).name}'"):
        solo.allreduce(np.zeros(4, dtype))


def test_other_types_rejected(solo):
    with pytest.raises(TypeError, match="buffer protocol, not list"):
        solo.allreduce([1.0, 2.0])
    with pytest.raises(TypeError, match="byte order"):
        solo.allreduce(np.zeros(4, ">f4"))
    with pytest.raises(TypeError, match="cannot reduce dtype 'int16'"):
        solo.allreduce(array.array("h", [1, 2]))


def test_read_only_input(solo):
    x = np.arange(6, dtype=np.int32)
    x.flags.writeable = False
    assert solo.allreduce(x, op=zcoll.MAX).tolist() == list(range(6))


def test_dtype_codes():
    """The codes zcoll.h gives, including bfloat16 by name (ml_dtypes' type, which
    Debian does not package: a stand-in with its attributes)."""
    assert [_dtypes.code_of(np.dtype(t)) for t in
            ("int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
             "float64")] == [0, 1, 2, 3, 4, 5, 6, 8, 9]
    assert _dtypes.code_of(np.dtype("longlong")) == _dtypes.code_of(np.dtype("int64"))

    class Bfloat16:  # what ml_dtypes.bfloat16's dtype answers
        name, itemsize, kind, isnative, str = "bfloat16", 2, "V", True, "<V2"

    assert _dtypes.code_of(Bfloat16()) == zcoll.DType.BFLOAT16 == 7
    assert zcoll._lib.lib.zcoll_dtype_name(7) == b"bfloat16"


def test_library_error_carries_message():
    with zcoll.Comm(config={"RANK": 0, "SIZE": 1}) as comm:
        with pytest.raises(zcoll.InvalidArgument, match="unknown op 42") as e:
            comm.allreduce(np.zeros(3), op=42)
        assert e.value.status == 1 and isinstance(e.value, ValueError)
        # The communicator is broken for good: later calls fail too.
        with pytest.raises(zcoll.Error):
            comm.allreduce(np.zeros(3))


def test_config_error():
    with pytest.raises(zcoll.InvalidArgument, match="ALGO") as e:
        zcoll.Comm(config={"RANK": 0, "SIZE": 1, "ALGO": "no-such-algorithm"})
    assert "no-such-algorithm" in str(e.value)


def test_torchrun_variables_without_a_zcoll_launcher(monkeypatch):
    """Under torchrun (RANK, WORLD_SIZE, MASTER_ADDR/PORT, no zcoll rendezvous) Comm() was a
    job of one, each rank averaging only itself: now an error naming what it found and what
    to do instead."""
    for v in ("ZCOLL_RANK", "ZCOLL_SIZE", "ZCOLL_ROOT", "PMIX_NAMESPACE", "PMIX_RANK",
              "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        monkeypatch.delenv(v, raising=False)
    for k, v in dict(RANK="1", LOCAL_RANK="1", WORLD_SIZE="3", MASTER_ADDR="127.0.0.1",
                     MASTER_PORT="29500").items():
        monkeypatch.setenv(k, v)
    with pytest.raises(zcoll.InvalidArgument, match="WORLD_SIZE=3") as e:
        zcoll.Comm()
    assert "zcoll_run" in str(e.value) and "zcoll.Comm(unique_id=" in str(e.value)
    monkeypatch.setenv("WORLD_SIZE", "1")  # torchrun --nproc_per_node=1: a job of one
    monkeypatch.setenv("RANK", "0")
    with zcoll.Comm() as comm:
        assert comm.size == 1


def test_context_manager_destroys():
    with zcoll.Comm(config={"RANK": 0, "SIZE": 1, "ALGO": "ring"}) as comm:
        assert comm.rank == 0 and comm.size == 1 and not comm.closed
        # a job of one opens the transport a peer on this host would get: shm, no device
        assert (comm.transport, comm.device) == ("shm", "-")
        assert comm.algorithm(np.zeros(100)) == "ring"
        assert comm.stats()["collectives"] == 0
        comm.allreduce(np.zeros(4))
        st = comm.stats()
        assert st["collectives"] == 1
        # every field of zcoll_comm_stats_t, the rails' as a list; nothing mapped alone
        assert st["rail_bytes"] == [0, 0, 0, 0] and st["mapped_collectives"] == 0, st
        assert st["bytes_sent_same_host"] == st["bytes_sent_other_hosts"] == 0, st
    assert comm.closed
    with pytest.raises(ValueError, match="communicator is closed"):
        comm.allreduce(np.zeros(4))
    comm.close()  # idempotent


def _results(output, rank):
    return [line[len("RESULT "):] for line in rank_lines(output, rank)
            if line.startswith("RESULT ")]


def test_mismatch_names_rank():
    job = run_job(2, "faults.py", "mismatch")
    assert job.returncode == 0, job.stdout
    for r in range(2):
        (res,) = _results(job.stdout, r)
        assert res.startswith("Mismatch: ") and "differs between ranks" in res, job.stdout
        assert "count 1000" in res and "count 1001" in res
    assert "rank 1" in _results(job.stdout, 0)[0]


def test_relayed_message_cut_at_a_word():
    """A mismatch's text, relayed to another rank through the rendezvous, is longer than
    an abort carries: it arrives whole or cut after a word, ending in "\u2026". On a
    ring of 3 where rank 2's op differs, rank 1 (fed by rank 0) only hears of it."""
    job = run_job(3, "faults.py", "mismatch-long", env={"ZCOLL_ALGO": "ring"})
    assert job.returncode == 0, job.stdout
    (relayed,) = _results(job.stdout, 1)
    assert relayed.startswith("Mismatch: rank "), job.stdout
    origin, text = relayed[len("Mismatch: rank "):].split(" aborted: ", 1)
    (original,) = _results(job.stdout, int(origin))
    original = original[len("Mismatch: "):]
    assert len(original) > 200 and text != original, job.stdout  # long enough to be cut
    assert text.endswith("\u2026"), job.stdout
    kept = text[:-1]
    assert original.startswith(kept) and original[len(kept)] in " ,", (kept, original)


def test_invalid_argument_on_one_rank():
    job = run_job(2, "faults.py", "bad-op")
    assert job.returncode == 0, job.stdout
    assert _results(job.stdout, 1) == ["InvalidArgument: allreduce: unknown op 77"]
    (res,) = _results(job.stdout, 0)
    assert res.startswith("Mismatch: rank 1 ") and "unknown op 77" in res, job.stdout


def test_exception_in_with_aborts():
    job = run_job(2, "faults.py", "raise-in-with")
    assert job.returncode == 0, job.stdout
    assert _results(job.stdout, 1) == ["closed=True"]
    assert _results(job.stdout, 0)[-1].startswith("PeerFailed: rank 1 aborted"), job.stdout


@pytest.mark.parametrize("np_", [2, 3])
def test_peer_killed(np_):
    ranks = spawn_ranks(np_, "faults.py", "kill", env={"ZCOLL_TIMEOUT": "20"}, timeout=40)
    victim = np_ - 1
    assert ranks[victim][0] == -signal.SIGKILL, ranks[victim][1]
    for r, (status, out) in enumerate(ranks[:victim]):
        assert status == 0, out
        res = [line[len("RESULT "):] for line in out.splitlines() if line.startswith("RESULT ")]
        assert len(res) == 3, out
        failed = [line for line in res if line != "ok"]
        assert res[-2:] == failed[-2:] and len(failed) >= 2, out
        assert all(line.startswith("PeerFailed: ") for line in failed), out
        assert f"rank {victim}" in failed[0], out


def test_uncaught_exception_aborts_at_exit():
    t0 = time.monotonic()
    ranks = spawn_ranks(2, "faults.py", "uncaught", env={"ZCOLL_TIMEOUT": "20"}, timeout=40)
    assert ranks[1][0] == 1 and "RuntimeError: the application failed" in ranks[1][1]
    status, out = ranks[0]
    assert status == 0, out
    res = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert res[-1].startswith("RESULT PeerFailed: rank 1 "), out
    assert time.monotonic() - t0 < 10  # told, not left to time out


def test_exit_with_request_in_flight():
    """A communicator never closed, a request never waited for: the exit finishes both,
    and nothing touches the freed request afterwards."""
    script = ("import numpy as np, zcoll\n"
              "c = zcoll.Comm(config={'RANK': 0, 'SIZE': 1})\n"
              "r = c.iallreduce(np.ones(4))\n"
              "p = c.allreduce_init(np.ones(4))\n"
              "print('exiting')\n")
    job = subprocess.run([sys.executable, "-c", script], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60)
    assert job.returncode == 0 and job.stdout.strip().endswith("exiting"), job.stdout


@pytest.mark.parametrize("mode", ["allreduce", "broadcast", "wait", "created", "close"])
def test_ctrl_c_in_a_collective(mode):
    """SIGINT to a rank blocked in a collective (or in close, the destroy's final
    barrier) raises KeyboardInterrupt there at once, not when the collective ends (3 s
    later), and the ranks waiting in it with that rank get PeerFailed -- the late rank too,
    though the interrupted rank's data reached it before the interrupt: that rank never got
    its result (a collective starting 10 ms or more after the last reads the job's news).
    The late rank's close may complete."""
    job = run_job(4, "interrupt.py", mode, env={"ZCOLL_TIMEOUT": "30"})
    assert job.returncode == 0, job.stdout
    (res1,) = _results(job.stdout, 1)
    assert res1.startswith("KeyboardInterrupt after "), job.stdout
    assert float(res1.split()[-1]) < 1.0, job.stdout  # ~100 ms documented; 3 s if deferred
    for r in (0, 2):
        (res,) = _results(job.stdout, r)
        why = ("zcoll_comm_revoke or zcoll_comm_abort was called during zcoll_comm_destroy"
               if mode == "close" else "rank 1's communicator was revoked")
        assert res.startswith(f"PeerFailed: rank 1 aborted: {why}"), job.stdout
    (res3,) = _results(job.stdout, 3)
    if mode == "close":
        assert res3 == "ok" or res3.startswith("PeerFailed: rank 1 aborted"), job.stdout
    else:
        assert res3.startswith("PeerFailed: rank 1 aborted"), job.stdout
