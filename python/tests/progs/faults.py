"""One rank misbehaves; every rank prints what it got as "RESULT <class>: <message>".

usage: faults.py CASE
  mismatch     rank 1 passes another count
  mismatch-long  rank 2's op differs: a message longer than an abort carries (on a ring
               of 3, rank 1 only learns it from the others)
  threads      two threads of rank 0 call at once (one blocked waiting for rank 1, either
               the main thread or another): the second is refused, nothing else changes
  vec-timeout  rank 1 never commits: rank 0's get times out (ZCOLL_TIMEOUT=1), then it
               frees the key, and another in a with block
  bad-op       rank 1 passes an op zcoll does not know (its call fails in the library)
  raise-in-with  rank 1 raises inside `with Comm()`: the block aborts the communicator
  kill         the last rank SIGKILLs itself before the collective (started by hand)
  uncaught     rank 1 ends with an uncaught exception, its Comm never closed: the exit
               aborts it (started by hand, as zcoll_run would terminate rank 0 first)
"""
import os
import signal
import sys
import threading
import time

import numpy as np
import zcoll

case = sys.argv[1]


def report(fn):
    try:
        fn()
        print("RESULT ok", flush=True)
    except zcoll.Error as e:
        assert e.status == type(e).status
        print(f"RESULT {type(e).__name__}: {e}", flush=True)


comm = zcoll.Comm()
x = np.ones(1 << 16, np.float32)
if case == "mismatch":
    report(lambda: comm.allreduce(x[: 1000 + (comm.rank == 1)]))
elif case == "mismatch-long":
    op = zcoll.op_create(lambda a, b: None, elem_bytes=16 if comm.rank == 2 else 8)
    report(lambda: comm.allreduce(x.view(np.uint8)[:8192], op=op))
elif case == "threads":
    for main_blocked in (False, True):
        if comm.rank == 1:
            time.sleep(1)
            report(lambda: comm.allreduce(x))
            continue
        second = threading.Thread(target=lambda: (time.sleep(0.3),
                                                  report(lambda: comm.allreduce(x))))
        if main_blocked:
            second.start()
            report(lambda: comm.allreduce(x))
        else:
            first = threading.Thread(target=lambda: report(lambda: comm.allreduce(x)))
            first.start()
            second.run()  # on the main thread
            first.join()
        second.join() if main_blocked else None
    report(lambda: comm.allreduce(x))  # the ranks are still in step
elif case == "vec-timeout":
    if comm.rank == 0:
        v = comm.vec("k", 1, 4, np.float64)
        v.commit(np.ones(4))
        report(v.get)
        report(v.free)
        def with_block():
            with comm.vec("k2", 1, 4, np.float64) as v2:
                v2.commit(np.ones(4))
                report(v2.get)
        report(with_block)
    else:
        time.sleep(2.5)
    comm.abort()
elif case == "bad-op":
    report(lambda: comm.allreduce(x, op=77 if comm.rank == 1 else zcoll.SUM))
elif case == "raise-in-with":
    if comm.rank == 1:
        try:
            with comm:
                comm.allreduce(x)
                raise RuntimeError("the application failed")
        except RuntimeError:
            print(f"RESULT closed={comm.closed}", flush=True)
    else:
        report(lambda: comm.allreduce(x))
        report(lambda: comm.allreduce(x))
elif case == "kill":
    # The victim ends its first collective before dying; the others may still be in
    # theirs then (and fail it, or complete it if they already had its data).
    if comm.rank == comm.size - 1:
        comm.allreduce(x)
        os.kill(os.getpid(), signal.SIGKILL)
    report(lambda: comm.allreduce(x))
    report(lambda: comm.allreduce(x))
    # The first error broke the communicator for good: later calls say so at once.
    report(lambda: comm.allreduce(x))
elif case == "uncaught":
    if comm.rank == 1:
        comm.allreduce(x)
        raise RuntimeError("the application failed")
    report(lambda: comm.allreduce(x))
    report(lambda: comm.allreduce(x))
comm.close() if not comm.closed else None
