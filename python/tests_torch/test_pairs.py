"""Two-rank torch.distributed jobs on the zcoll backend (pair_check.py), started by hand
through env:// -- quicker than torchrun, a few seconds each: dtype agreement of the calls that
move bytes, Ctrl-C in a wait, collectives started and waited from a future's callback, and
DDP's PowerSGD hooks against Gloo (issue 38, bugs 2, 6 and 7).
"""
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from test_torch import MISSING

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "pair_check.py")
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"no torch backend: {MISSING}")


def pair(parts, timeout=60):
    """pair_check.py's parts on ranks 0 and 1: [(exit status, output)] of each, a hang
    killed."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    procs = [subprocess.Popen([sys.executable, CHECK] + parts, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT,
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r),
                                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)))
             for r in range(2)]
    end, outs = time.monotonic() + timeout, []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=max(1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            out = p.communicate()[0] + f"\n(killed after {timeout} s: a hang)"
        outs.append((p.returncode, out))
    return outs


def passed(outs, part):
    for r, (rc, out) in enumerate(outs):
        assert f"pair {r}: {part} passed" in out, outs


@pytest.fixture(scope="module")
def shared_job():
    """The parts that leave the group usable, in one job (its start costs most of its time)."""
    return pair(["mismatch", "callback", "powersgd"])


def test_calls_that_move_bytes_agree_on_dtype(shared_job):
    passed(shared_job, "mismatch")


def test_a_callback_starts_and_waits_collectives(shared_job):
    passed(shared_job, "callback")


def test_powersgd_hooks_give_gloos_parameters(shared_job):
    passed(shared_job, "powersgd")
    for r, (rc, out) in enumerate(shared_job):
        assert rc == 0 and re.search(rf"pair {r}: \d+ checks passed", out), shared_job


def test_ctrl_c_in_a_wait_raises_at_once_and_fails_the_peer():
    outs = pair(["interrupt"], timeout=30)
    passed(outs, "interrupt")
    assert re.search(r"pair 0: KeyboardInterrupt \d+ ms after SIGINT", outs[0][1]), outs
