"""Mini-batch k-means over a Dask array's chunks, the workers' partial sums averaged by zcoll.

The points are a Dask array persisted on the cluster, chunk by chunk. zcoll.dask.run starts
one rank per worker; each rank finds the chunks its worker holds (no data moves), and in
every round draws a mini-batch from them, assigns each point to its nearest center and
sums the points and counts per center; one zcoll allreduce of those sums gives every rank
the same new centers (Sculley's mini-batch k-means with per-center learning rates, the sums
of all ranks' batches at once). The result is scored against scikit-learn's KMeans on all
the points (inertia: the sum of squared distances to the nearest center).

    PYTHONPATH=build/python /usr/bin/python3 examples/dask_kmeans.py [--workers 3]

Debian's python3-distributed and python3-sklearn.
"""
import argparse

import dask.array as da
import numpy as np
import zcoll
import zcoll.dask
from dask.distributed import Client, LocalCluster, get_worker, wait


def local_chunks(keys_by_worker):
    """The chunks of the persisted array that this task's worker holds, as numpy arrays."""
    w = get_worker()
    return [w.data[k] for k in keys_by_worker.get(w.address, [])]


def kmeans(comm, keys_by_worker, centers, rounds, batch, seed):
    points = np.concatenate(local_chunks(keys_by_worker))
    rng = np.random.default_rng(seed + comm.rank)
    k, d = centers.shape
    seen = np.zeros(k)                             # points each center has absorbed so far
    sums = np.empty((k, d + 1))                    # per center: sum of points, then count
    for _ in range(rounds):
        x = points[rng.integers(0, len(points), batch)]
        nearest = ((x[:, None, :] - centers[None]) ** 2).sum(-1).argmin(1)
        sums.fill(0)
        np.add.at(sums[:, :d], nearest, x)
        np.add.at(sums[:, d], nearest, 1)
        comm.allreduce(sums, out=sums)             # every rank's batch at once
        n = sums[:, d]
        moved = n > 0
        seen[moved] += n[moved]
        rate = n[moved] / seen[moved]              # per-center learning rate
        centers[moved] += rate[:, None] * (sums[moved, :d] / n[moved, None] - centers[moved])
    return centers


def inertia(X, centers):
    return float(((X[:, None, :] - centers[None]) ** 2).sum(-1).min(1).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--points", type=int, default=60_000)
    ap.add_argument("--clusters", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--batch", type=int, default=256, help="points per rank per round")
    args = ap.parse_args()
    from sklearn.cluster import KMeans, kmeans_plusplus
    from sklearn.datasets import make_blobs

    X_np, _ = make_blobs(args.points, n_features=4, centers=args.clusters, cluster_std=1.5,
                         random_state=0)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        X = da.from_array(X_np, chunks=(args.points // (2 * args.workers), 4)).persist()
        parts = [f for f in client.futures_of(X)]
        wait(parts)
        keys_by_worker = {}
        for key, holders in client.who_has(parts).items():
            keys_by_worker.setdefault(holders[0], []).append(key)
        # k-means++ seeding on a sample of the points, as MiniBatchKMeans does
        sample = X_np[np.random.default_rng(1).choice(args.points, 3000, replace=False)]
        start, _ = kmeans_plusplus(sample, args.clusters, random_state=1)
        results = zcoll.dask.run(client, kmeans, keys_by_worker, start.copy(), args.rounds,
                                 args.batch, 7)
    same = all(np.array_equal(results[0], r) for r in results)
    ours = inertia(X_np, results[0])
    ref = KMeans(args.clusters, n_init=10, random_state=0).fit(X_np)
    print(f"{args.workers} ranks, {args.rounds} rounds of {args.batch} points each: inertia "
          f"{ours:.0f} (scikit-learn's KMeans on all the points: {ref.inertia_:.0f}, "
          f"ratio {ours / ref.inertia_:.3f}); the same centers on every rank: {same}")


if __name__ == "__main__":
    main()
