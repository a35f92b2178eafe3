"""A rank of test_mem.py's job: the same allreduces called from the main thread on even
ranks and from another thread on odd ones -- small (the mailboxes' sizes), middling, and
large in numpy's memory and in comm.empty's, in place and out -- every element checked.
Ranks must meet whatever thread they call from. Prints the count of allreduces that read
the vectors where they lie (zcoll_comm_stats), which must be the 8 MiB comm.empty ones.
"threads.py abort": an abort from the main thread while another thread waits."""
import sys
import threading

import numpy as np
import zcoll


def calls(comm):
    r, p = comm.rank, comm.size
    for n in (2, 64, 1024, 1 << 18, 1 << 21):  # float32: 8 B .. 8 MiB, the blocking call's
        for where in ("numpy", "empty"):
            for in_place in (False, True):
                x = np.empty(n, np.float32) if where == "numpy" else comm.empty(n, np.float32)
                x[:] = np.arange(n, dtype=np.float32) % 11 + r
                want = (np.arange(n, dtype=np.float32) % 11) * p + p * (p - 1) / 2
                out = x if in_place else (np.empty(n, np.float32) if where == "numpy"
                                          else comm.empty(n, np.float32))
                comm.allreduce(x, out=out)
                if not (out == want).all():
                    sys.exit(f"rank {r}: {n} floats in {where}, in place {in_place}: wrong")


def abort_from_another_thread():
    """Rank 0 aborts from its main thread while another of its threads waits in a small
    allreduce that rank 1 never joins (a busy third thread holding the GIL in turns, so
    that the waiter is slow to free its request): the waiter gets PeerFailed, nothing
    crashes (the request went with the communicator, and is not freed twice)."""
    import time
    comm = zcoll.Comm()
    if comm.rank == 0:
        got, stop = [], []

        def call():
            try:
                comm.allreduce(np.ones(16, np.float32))
                got.append("returned")
            except zcoll.Error as e:
                got.append(type(e).__name__)

        def spin():
            while not stop:
                pass

        waiter = threading.Thread(target=call)
        waiter.start()
        time.sleep(0.5)
        sys.setswitchinterval(0.2)
        spinner = threading.Thread(target=spin)
        spinner.start()
        comm.abort()
        waiter.join()
        stop.append(1)
        spinner.join()
        print(f"abort ok rank 0: {got}", flush=True)
    else:
        time.sleep(2)
        try:
            comm.abort()
        except zcoll.Error:
            pass
        print("abort ok rank 1", flush=True)


if sys.argv[1:] == ["abort"]:
    abort_from_another_thread()
    sys.exit(0)

with zcoll.Comm() as comm:
    if comm.rank % 2 == 0:
        calls(comm)
    else:
        t = threading.Thread(target=calls, args=(comm,))
        t.start()
        t.join()
    print(f"threads ok rank {comm.rank}: {comm.stats()['mapped_collectives']} mapped",
          flush=True)
