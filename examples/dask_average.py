"""zcoll on a Dask cluster: every worker a rank, an average computed by zcoll.

    PYTHONPATH=build/python /usr/bin/python3 examples/dask_average.py
"""
import numpy as np
import zcoll
import zcoll.dask
from dask.distributed import Client, LocalCluster


def average(comm, n):                          # once on every worker, as rank comm.rank
    x = np.full(n, comm.rank, np.float32)
    return comm.allreduce(x, op=zcoll.AVG)


if __name__ == "__main__":
    with LocalCluster(n_workers=3, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        results = zcoll.dask.run(client, average, 1 << 20)   # in rank order
        print("every rank's average:", [float(r[0]) for r in results])   # 1.0 each
