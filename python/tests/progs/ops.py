"""Created ops on several ranks: maxloc over a structured dtype (commutative), the
product of 2x2 matrices (non-commutative: rank order), a weighted average with a
premul_sum; blocking, non-blocking and persistent. Each rank saves its results to
<outdir>/rank<r>.npz for the test to check against numpy.

usage: ops.py check OUTDIR COUNT
       ops.py raise [COUNT BAD raise|return]  (the function fails on rank BAD, 1 by default:
              it raises, or returns its result; prints "RESULT ..." per call)
"""
import os
import sys
import threading

import numpy as np
import zcoll

PAIR = np.dtype([("v", "<f4"), ("i", "<i4")])
MAT = np.dtype((np.float64, (2, 2)))


def pairs(rank, n, step=0):
    a = np.empty(n, PAIR)
    a["v"] = (np.arange(n) * 7 + rank * 13 + step) % 11
    a["i"] = rank
    return a


def matrices(rank, n):
    k = np.arange(n)
    m = np.empty((n, 2, 2))
    m[:, 0, 0], m[:, 0, 1] = 1, (rank + k) % 3
    m[:, 1, 0], m[:, 1, 1] = (rank * k + 1) % 2, 1
    return m


def values(rank, n, dtype):
    return (((np.arange(n) * 5 + rank * 3) % 17) - 8).astype(dtype)


def maxloc(invec, inout):
    take = (invec["v"] > inout["v"]) | ((invec["v"] == inout["v"]) & (invec["i"] < inout["i"]))
    inout[take] = invec[take]


def matmul(invec, inout):
    inout[...] = invec @ inout  # inout = in (op) inout, in from the lower ranks


def main():
    mode = sys.argv[1]
    with zcoll.Comm() as comm:
        r, p = comm.rank, comm.size
        if mode == "raise":
            # count (4096), the rank whose function fails (1), how: "raise" or "return",
            # the call: "blocking" (on the main thread: in slices), "thread" (blocking on
            # another thread: the C call itself) or "request" (iallreduce, then wait)
            count, bad, how = (int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]) \
                if len(sys.argv) > 2 else (4096, 1, "raise")
            form = sys.argv[5] if len(sys.argv) > 5 else "blocking"

            def boom(invec, inout):
                if r == bad and how == "raise":
                    raise ValueError(f"boom on rank {r}")
                if r == bad:
                    return inout + invec  # the mistake: a result returned, not written
                inout += invec

            op = zcoll.op_create(boom)
            x = np.ones(count, np.float32)
            def call():
                if form == "request":
                    comm.iallreduce(x, op=op).wait()
                elif form == "thread":
                    err = []

                    def body():
                        try:
                            comm.allreduce(x, op=op)
                        except Exception as e:  # noqa: handed to the main thread
                            err.append(e)
                    t = threading.Thread(target=body)
                    t.start()
                    t.join()
                    if err:
                        raise err[0]
                else:
                    comm.allreduce(x, op=op)

            for _ in range(2):
                try:
                    call()
                    print("RESULT ok", flush=True)
                except Exception as e:
                    notes = " | ".join(getattr(e, "__notes__", []))
                    print(f"RESULT {type(e).__name__}: {e} | {notes}", flush=True)
            comm.abort()
            return
        outdir, n = sys.argv[2], int(sys.argv[3])
        res = {}
        with zcoll.op_create(maxloc, dtype=PAIR) as op:
            assert op.elem_bytes == 8 and op.commutative
            res["maxloc"] = comm.allreduce(pairs(r, n), op=op)
            res["maxloc_i"] = comm.iallreduce(pairs(r, n, 1), op=op).wait()
            x = np.empty(n, PAIR)
            with comm.allreduce_init(x, out=x, op=op) as req:
                for step in range(2, 4):
                    x[:] = pairs(r, n, step)
                    req.start()
                    res[f"maxloc_p{step}"] = req.wait().copy()
        with zcoll.Op.create(matmul, commutative=False, dtype=MAT) as op:
            assert op.elem_bytes == 32
            m = matrices(r, n)
            res["matmul"] = comm.allreduce(m, op=op)
            res["matmul_i"] = comm.iallreduce(m, op=op).wait()
        w = r + 1  # "shard sizes": 1..p
        for dtype in ("float16", "float32", "float64"):
            with zcoll.premul_sum(w / (p * (p + 1) / 2)) as op:
                x = values(r, n, dtype)
                res[f"wavg-{dtype}"] = comm.allreduce(x, op=op)
                y = np.empty(n, dtype)
                with comm.allreduce_init(x, out=y, op=op) as req:
                    req.start()
                    res[f"wavg_p-{dtype}"] = req.wait().copy()
    np.savez(os.path.join(outdir, f"rank{r}.npz"), **res)
    print("done")


if __name__ == "__main__":
    main()
