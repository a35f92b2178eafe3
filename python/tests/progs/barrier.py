"""Barriers through the binding: 12, blocking, non-blocking waited and non-blocking
beside an allreduce in turn, a different rank late each time. Every rank prints, per
barrier, "B IT RANK ENTER_NS LEAVE_NS" (time.monotonic_ns: one clock for the host), and
the test checks that no rank left before the last one entered.

barrier.py mismatch: rank 0 in a barrier, the others in an allreduce; each prints what
it raised ("E Mismatch ...")."""
import sys
import time

import numpy as np
import zcoll

with zcoll.Comm() as comm:
    r, p = comm.rank, comm.size
    if sys.argv[1:] == ["mismatch"]:
        try:
            comm.barrier() if r == 0 else comm.allreduce(np.zeros(1, np.uint8))
        except zcoll.Error as e:
            print(f"E {type(e).__name__} {e}", flush=True)
        comm.abort()
        sys.exit(0)
    for it in range(12):
        if r == it % p:
            time.sleep(0.0005 + (it * 577 % 2500) * 1e-6)
        t_in = time.monotonic_ns()
        if it % 3 == 0:
            assert comm.barrier() is None
        elif it % 3 == 1:
            assert comm.ibarrier().wait() is None
        else:
            b = comm.ibarrier()
            s = comm.iallreduce(np.array([r], np.int64))
            assert b.wait() is None and s.wait()[0] == p * (p - 1) // 2
        t_out = time.monotonic_ns()
        print(f"B {it} {r} {t_in} {t_out}", flush=True)
