"""Each rank's input, a function of (rank, step, index) only, so that a test can
recompute every rank's input and reduce them with numpy, independently of zcoll.

Values are small integers (powers of two for PROD), exact in every dtype and never
overflowing, so results must match element for element, AVG included (it is divided in
the precision zcoll reduces in: float32 for float16).
"""
import time

import numpy as np

DTYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
          "float64"]
OPS = ["SUM", "PROD", "MIN", "MAX", "AVG"]


def make(rank, n, dtype, op, step=0):
    dt = np.dtype(dtype)
    i = np.arange(n, dtype=np.int64) + 3 * step
    if op == "PROD":
        table = [1, 2, 4, 2, 1] if dt.kind == "u" else ([1, -2, 4, -1, 2] if dt.kind == "i"
                                                           else [1, 2, 0.5, -1, 4])
        return np.array(table, dt)[(i + rank) % 5]
    v = (i * 7 + rank * 13) % 11  # 0..10
    if dt.kind != "u":
        v = v - 5  # negative values too: AVG truncates toward zero
    return v.astype(dt)


def reference(p, n, dtype, op, step=0):
    """The reduction over p ranks, computed with numpy in a wide type, then narrowed the
    way zcoll defines it."""
    dt = np.dtype(dtype)
    xs = [make(r, n, dtype, op, step) for r in range(p)]
    if dt.kind == "f":
        wide = np.stack([x.astype(np.float64) for x in xs])
        if op == "AVG":  # divided in the reduction's precision: float32 for float16
            s = wide.sum(axis=0).astype(np.float32 if dt.itemsize <= 4 else np.float64)
            return (s / s.dtype.type(p)).astype(dt)
    else:
        wide = np.stack([x.astype(np.int64) for x in xs])
        if op == "AVG":
            s = wide.sum(axis=0)
            return (np.sign(s) * (np.abs(s) // p)).astype(dt)
    red = {"SUM": np.sum, "PROD": np.prod, "MIN": np.min, "MAX": np.max}[op](wide, axis=0)
    return red.astype(dt)


def poll(req):
    """Tests req until it has ended, giving the core away between tests: the ranks of a
    job oversubscribe the cores, and a rank that only spins keeps the one it waits for from
    running (a busy CI machine made a 4-rank job of these take over 60 s, not 7)."""
    while not req.test():
        time.sleep(0.0001)
