"""zcoll on a Dask cluster: one rank per worker.

    from dask.distributed import Client, LocalCluster
    import zcoll.dask

    def average(comm, n):
        x = np.full(n, comm.rank, np.float32)
        return comm.allreduce(x, op=zcoll.AVG)

    with Client(LocalCluster(n_workers=4)) as client:
        results = zcoll.dask.run(client, average, 1 << 20)   # rank order

run() makes the communicator's unique id on the worker that will be rank 0 (its process
serves the rendezvous, so rank 0 must join from there), hands it to the others through the
scheduler with their tasks, runs fn(comm, *args, **kwargs) once on every worker, each task
pinned to its worker, and destroys the communicators. If a rank fails -- fn raises, or its
worker dies and its peers get zcoll.PeerFailed -- run() raises RunError naming the first
rank that failed, cancels what is still running, and nothing waits for a worker that is
gone. The id carries the rendezvous's secret key, as private as the scheduler's traffic.
"""
import dask.distributed as _dd

from .comm import Comm, get_unique_id


class RunError(RuntimeError):
    """A rank of zcoll.dask.run failed: .rank, .worker and the cause (__cause__)."""

    def __init__(self, rank, worker, cause):
        super().__init__(f"zcoll.dask.run: rank {rank} (worker {worker}) failed: "
                         f"{type(cause).__name__}: {cause}")
        self.rank, self.worker = rank, worker


def _make_id():
    return bytes(get_unique_id())


def _rank(uid, rank, size, fn, args, kwargs):
    with Comm(unique_id=uid, rank=rank, size=size) as comm:
        return fn(comm, *args, **kwargs)


def workers(client):
    """The workers run() uses, in rank order (sorted by address)."""
    return sorted(client.scheduler_info()["workers"])


def run(client, fn, *args, timeout=None, **kwargs):
    """fn(comm, *args, **kwargs) on every worker of client's cluster, as ranks 0..size-1 of
    one communicator; returns the results in rank order. timeout: seconds for the whole
    run (None: no limit beyond zcoll's own ZCOLL_TIMEOUT)."""
    addrs = workers(client)
    if not addrs:
        raise ValueError("zcoll.dask.run: the cluster has no workers")
    size = len(addrs)
    # The id is made where rank 0 will run: its rendezvous lives in that process.
    uid = client.submit(_make_id, workers=[addrs[0]], allow_other_workers=False,
                        pure=False).result(timeout=timeout)
    futures = [client.submit(_rank, uid, r, size, fn, args, kwargs, workers=[a],
                             allow_other_workers=False, pure=False, retries=0)
               for r, a in enumerate(addrs)]
    try:
        pending = set(futures)
        while pending:
            done = _dd.wait(list(pending), timeout=timeout, return_when="FIRST_COMPLETED").done
            pending -= done
            # The first failure in rank order among those ended so far; a dead worker's task
            # may never end, but its peers' do (PeerFailed), so this never waits for it.
            for r, f in enumerate(futures):
                if f in done and f.status == "error":
                    raise RunError(r, addrs[r], f.exception()) from f.exception()
        return [f.result() for f in futures]
    except _dd.TimeoutError as e:
        raise TimeoutError(f"zcoll.dask.run: not done after {timeout} s") from e
    finally:
        client.cancel([f for f in futures if not f.done()])
