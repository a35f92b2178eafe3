"""Broadcast from every root, every dtype the binding takes (the reduced ones, and
others as bytes), blocking, non-blocking and persistent (three starts with new data
each), all in place; every rank checks every element against the root's input, a
function of (root, step, index) only. Prints "OK <checks>"; exits 1 on a wrong element.

usage: broadcast.py COUNT   (above 4099: six dtypes, not all)
"""
import sys

import numpy as np
import zcoll
from inputs import DTYPES, poll

EXTRA = ["complex128", "bool", ">i4", [("v", "<f4"), ("i", "<i4")]]


def value(root, n, dtype, step=0):
    dt = np.dtype(dtype)
    v = (np.arange(n, dtype=np.int64) * 7 + root * 13 + step * 5) % 11 + 1
    if dt.names:
        out = np.empty(n, dt)
        out["v"], out["i"] = v * 0.5, -v
        return out
    return v.astype(dt)


def garbage(n, dtype):
    """What non-root ranks hold before: differs from every root's value."""
    dt = np.dtype(dtype)
    return np.zeros(n, dt) if dt.names else np.full(n, 0, dt)


n = int(sys.argv[1])
checks = 0
# Every dtype at the counts that fit a few pieces; a large count (many pieces, pipelined)
# moves bytes whatever their type: one dtype of each element size and a structured one, so
# that the 4-rank job stays short on a busy machine (all 13 took over 60 s there).
dtypes = DTYPES + EXTRA if n <= 4099 else ["uint8", "float16", "float32", "float64",
                                           "complex128", EXTRA[-1]]


def check(got, root, dtype, what, step=0):
    global checks
    want = value(root, n, dtype, step)
    if not np.array_equal(got, want):
        bad = np.flatnonzero(got != want)
        print(f"rank {comm.rank} {what} root {root} dtype {np.dtype(dtype)} step {step}: "
              f"{bad.size} of {n} wrong, first at {bad[0]}: {got[bad[0]]} != {want[bad[0]]}")
        sys.exit(1)
    checks += 1


with zcoll.Comm() as comm:
    for root in range(comm.size):
        mine = comm.rank == root
        for dtype in dtypes:
            x = value(root, n, dtype) if mine else garbage(n, dtype)
            assert comm.broadcast(x, root=root) is x
            check(x, root, dtype, "broadcast")

            x = value(root, n, dtype) if mine else garbage(n, dtype)
            req = comm.ibroadcast(x, root)
            poll(req)
            assert req.wait() is x
            check(x, root, dtype, "ibroadcast")

            x = garbage(n, dtype)
            with comm.broadcast_init(x, root=root) as p:
                for step in range(3):
                    if mine:
                        x[:] = value(root, n, dtype, step)
                    else:
                        x[:] = garbage(n, dtype)
                    p.start()
                    assert p.wait() is x
                    check(x, root, dtype, "persistent", step)
        # A buffer-protocol object, in place.
        b = bytearray(value(root, n, "uint8").tobytes()) if mine else bytearray(n)
        assert comm.broadcast(b, root) is b
        check(np.frombuffer(b, np.uint8), root, "uint8", "bytearray")
print("OK", checks, flush=True)
