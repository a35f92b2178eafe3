#!/usr/bin/python3
"""Time allreduce through the Python binding, to compare with zcoll_perf -z 1.

    zcoll_run -np 4 /usr/bin/python3 perf/py_allreduce_perf.py -b 8 -e 1M -f 131072 -n 2000
    zcoll_run -np 4 build/ci/zcoll_perf -b 8 -e 1M -f 131072 -n 2000 -z 1 -c 0

The same flags mean the same things as zcoll_perf's: per size, -w warmup then -n timed
blocking calls, out of place (into a preallocated array) and in place; the time is each
rank's mean per call, averaged over ranks (zcoll_perf's -a 1). A third column times
iallreduce + wait, the same call non-blocking. What the binding costs is the difference
from zcoll_perf's column at the same size, run in the same minute (the machine is
shared and noisy: alternate runs). The package comes from PYTHONPATH (build/ci/python)
or the installed one.
"""
import argparse
import sys
import time

import numpy as np
import zcoll


def size_arg(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(text[:-1] if mult > 1 else text) * mult


def buffer(count, dtype, align):
    """count elements of dtype; aligned to align bytes if align (zcoll_perf's buffers are
    page-aligned; numpy's large arrays start 16 bytes into a page)."""
    if not align:
        return np.ones(count, dtype)
    raw = np.empty(count * dtype.itemsize + align, np.uint8)
    skip = -raw.ctypes.data % align
    a = raw[skip:skip + count * dtype.itemsize].view(dtype)
    a[:] = 1
    return a


def timed(fn, n, w):
    for _ in range(w):
        fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-b", "--minbytes", type=size_arg, default=8)
    ap.add_argument("-e", "--maxbytes", type=size_arg, default=1 << 20)
    ap.add_argument("-f", "--stepfactor", type=int, default=2)
    ap.add_argument("-n", "--iters", type=int, default=1000)
    ap.add_argument("-w", "--warmup_iters", type=int, default=100)
    ap.add_argument("-d", "--datatype", default="float32")
    ap.add_argument("-o", "--op", default="sum")
    ap.add_argument("-A", "--align", type=int, default=0,
                    help="align the buffers to this many bytes (4096: as zcoll_perf's); "
                         "default: where numpy puts them")
    args = ap.parse_args()
    op = zcoll.Op[args.op.upper()]
    dtype = np.dtype(args.datatype)

    with zcoll.Comm() as comm:
        if comm.rank == 0:
            print(f"# py_allreduce_perf: transport {comm.transport}, ranks {comm.size}, "
                  f"zcoll {zcoll.__version__}, python {sys.version.split()[0]}, "
                  f"numpy {np.__version__}")
            print(f"# iters {args.iters} warmup {args.warmup_iters}, buffers aligned to "
                  f"{args.align or 'numpy default'}; time: mean per call (us), averaged "
                  "over ranks")
            print(f"#{'size(B)':>11} {'count':>10} {'type':>8} {'op':>5} {'out-of-place':>13} "
                  f"{'in-place':>10} {'iallreduce+wait':>16}  algorithm")
        size = args.minbytes
        while size <= args.maxbytes:
            count = max(size // dtype.itemsize, 1)
            x = buffer(count, dtype, args.align)
            out = buffer(count, dtype, args.align)
            times = np.array([
                timed(lambda: comm.allreduce(x, out=out, op=op), args.iters, args.warmup_iters),
                timed(lambda: comm.allreduce(x, out=x, op=op), args.iters, args.warmup_iters),
                timed(lambda: comm.iallreduce(x, out=out, op=op).wait(), args.iters,
                      args.warmup_iters),
            ])
            comm.allreduce(times, out=times, op=zcoll.AVG)
            if comm.rank == 0:
                print(f"{count * dtype.itemsize:>12} {count:>10} {dtype.name:>8} "
                      f"{op.name.lower():>5} {times[0]:>13.2f} {times[1]:>10.2f} "
                      f"{times[2]:>16.2f}  {comm.algorithm(x, op)}", flush=True)
            size *= args.stepfactor


if __name__ == "__main__":
    main()
