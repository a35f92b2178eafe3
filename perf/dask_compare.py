#!/usr/bin/python3
"""perf/dask_compare.py -- averaging a vector across Dask workers: through Dask itself
(reduce, then broadcast, through the scheduler) and through zcoll.dask.run's allreduce, in
one run, on a LocalCluster of this host.

    PYTHONPATH=build/python /usr/bin/python3 perf/dask_compare.py [--workers 4] [-r 5]

Each worker holds its own float32 vector (10^4 .. 10^7 elements). Dask's way is the
reduce-broadcast the seed's slides start from: a binary tree of np.add tasks over the
workers' arrays, the sum divided by the number of workers, and the result sent back to
every worker (a task pinned to each that takes it as input), timed from the first
submit until every worker has the average. zcoll's way: one rank per worker
(zcoll.dask.run), an allreduce AVG on the vector where it lies, timed inside the ranks
(the slowest rank's time). Both are checked against the expected average. Per size: the
median of -r repetitions of each, and Dask's time over zcoll's. Separately, one
zcoll.dask.run call's own cost (making the communicator, running a trivial fn).
"""
import argparse
import statistics
import time

import numpy as np
import zcoll
import zcoll.dask
from dask.distributed import Client, LocalCluster, wait


def vector(n, seed):
    return np.full(n, float(seed + 1), np.float32)


def dask_average(client, parts, workers):
    """The tree reduce, the division, and the result on every worker: seconds."""
    t0 = time.perf_counter()
    level = list(parts)
    while len(level) > 1:
        nxt = [client.submit(np.add, level[i], level[i + 1], pure=False)
               for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    avg = client.submit(np.divide, level[0], len(parts), pure=False)
    back = [client.submit(lambda a: a[:1].copy(), avg, workers=[w], allow_other_workers=False,
                          pure=False) for w in workers]
    wait(back)
    dt = time.perf_counter() - t0
    first = client.gather(back)
    return dt, avg, first


def zcoll_timings(comm, sizes, reps):
    """On every rank: per size, reps allreduce AVG timings (the slowest rank's)."""
    out = {}
    for n in sizes:
        x = vector(n, comm.rank)
        comm.allreduce(x, out=x, op=zcoll.AVG)  # warm-up
        want = (comm.size + 1) / 2
        times = []
        for _ in range(reps):
            x[:] = comm.rank + 1
            comm.barrier()
            t0 = time.perf_counter()
            comm.allreduce(x, out=x, op=zcoll.AVG)
            t = np.array([time.perf_counter() - t0])
            comm.allreduce(t, out=t, op=zcoll.MAX)
            times.append(float(t[0]))
            if x[0] != want or x[-1] != want:
                raise AssertionError(f"rank {comm.rank}: wrong average at {n} elements")
        out[n] = times
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("-r", type=int, default=5, help="repetitions per size (default 5)")
    ap.add_argument("--sizes", default="10000,100000,1000000,10000000",
                    help="elements, comma separated")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        workers = zcoll.dask.workers(client)
        t0 = time.perf_counter()
        zcoll.dask.run(client, lambda comm: comm.rank)
        run_cost = time.perf_counter() - t0
        zc = zcoll.dask.run(client, zcoll_timings, sizes, args.r)[0]
        rows = []
        for n in sizes:
            parts = [client.submit(vector, n, i, workers=[w], allow_other_workers=False,
                                   pure=False) for i, w in enumerate(workers)]
            wait(parts)
            dask_average(client, parts, workers)  # warm-up
            times = []
            for _ in range(args.r):
                dt, avg, first = dask_average(client, parts, workers)
                want = (len(workers) + 1) / 2
                if any(f[0] != want for f in first):
                    raise SystemExit(f"dask: wrong average at {n} elements")
                times.append(dt)
            del parts, avg
            rows.append((n, statistics.median(times), statistics.median(zc[n])))
    print(f"## averaging a float32 vector across {args.workers} Dask workers (LocalCluster, "
          f"processes), median of {args.r}")
    print("| elements | Dask reduce + broadcast | zcoll allreduce | Dask / zcoll |")
    print("|---|---|---|---|")
    for n, d, z in rows:
        print(f"| {n:,} | {d * 1e3:.2f} ms | {z * 1e3:.3f} ms | **{d / z:.0f}x** |")
    print(f"\nOne zcoll.dask.run call (communicator made and destroyed, a trivial fn): "
          f"{run_cost * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
