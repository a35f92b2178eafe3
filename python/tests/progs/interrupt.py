"""Ctrl-C on one rank blocked in a collective; every rank prints "RESULT ...".

usage: interrupt.py MODE     (allreduce, broadcast, wait, created, close)

Rank 1 sends itself SIGINT 0.5 s into a collective that cannot end (the last rank joins
it only 3 s later; close: into zcoll_comm_destroy's final barrier) and prints "RESULT KeyboardInterrupt after <seconds>". The others
print what their collective raised.
"""
import os
import signal
import sys
import threading
import time

import numpy as np
import zcoll

mode = sys.argv[1]
comm = zcoll.Comm()
comm.barrier()  # the collective below is not the first: that one reads no news at its start
r, p = comm.rank, comm.size
x = np.ones(64, np.float32)
sent = []


def interrupt():
    sent.append(time.monotonic())
    os.kill(os.getpid(), signal.SIGINT)


def add(invec, inout):
    inout += invec


op = zcoll.op_create(add)
if r == p - 1:
    time.sleep(3)
elif r == 1:
    threading.Timer(0.5, interrupt).start()
try:
    if mode == "allreduce":
        comm.allreduce(x)
    elif mode == "broadcast":
        comm.broadcast(x, root=p - 1)  # the late rank: nobody can end it before
    elif mode == "wait":
        comm.iallreduce(x).wait()
    elif mode == "created":
        comm.allreduce(x, op=op)
    elif mode == "close":
        op.free()
        comm.close()
    print("RESULT ok", flush=True)
except KeyboardInterrupt:
    print(f"RESULT KeyboardInterrupt after {time.monotonic() - sent[0]:.3f}", flush=True)
except zcoll.Error as e:
    print(f"RESULT {type(e).__name__}: {e}", flush=True)
comm.abort()
