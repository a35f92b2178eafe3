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
worker dies and its peers get zcoll.PeerFailed -- run() raises RunError naming that rank
(not a peer that only heard of it), cancels what is still running, and nothing waits for a
worker that is gone. The id carries the rendezvous's secret key, as private as the
scheduler's traffic.
"""
import time as _time

import dask.distributed as _dd

from ._errors import PeerFailed
from .comm import Comm, get_unique_id

# A PeerFailed is news of a failure elsewhere: how long run() looks for the rank that failed
# (its own error, or its worker gone from the scheduler) before it names the first rank that
# heard, and how often it looks.
_CULPRIT_WAIT = 10.0
_CULPRIT_POLL = 0.1


class RunError(RuntimeError):
    """A rank of zcoll.dask.run failed: .rank, .worker and the cause (__cause__): the rank's
    own exception, or, when its worker died, the PeerFailed a surviving rank got."""

    def __init__(self, rank, worker, cause, died_seen_by=None):
        what = f"{type(cause).__name__}: {cause}"
        if died_seen_by is not None:
            what = f"its worker died (rank {died_seen_by} got {what})"
        super().__init__(f"zcoll.dask.run: rank {rank} (worker {worker}) failed: {what}")
        self.rank, self.worker = rank, worker


def _make_id():
    return bytes(get_unique_id())


def _rank(uid, rank, size, fn, args, kwargs):
    with Comm(unique_id=uid, rank=rank, size=size) as comm:
        return fn(comm, *args, **kwargs)


def workers(client):
    """The workers run() uses, in rank order (sorted by address)."""
    return sorted(client.scheduler_info()["workers"])


def _dead_rank(client, futures, addrs, pending):
    """The first rank whose task has not ended on a worker that has left the cluster: a dead
    worker's task never ends (it waits for its worker), and a nanny restarts it elsewhere
    (another port), not at its old address."""
    alive = set(client.scheduler_info()["workers"])
    return next((r for r, f in enumerate(futures) if f in pending and addrs[r] not in alive),
                None)


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
    end = None if timeout is None else _time.monotonic() + timeout
    try:
        pending = set(futures)
        heard = None  # (rank, PeerFailed, deadline): the first rank told of a failure
        while pending:
            step = None if end is None else end - _time.monotonic()
            if heard is not None:
                step = _CULPRIT_POLL if step is None else min(step, _CULPRIT_POLL)
            try:
                pending -= _dd.wait(list(pending), timeout=step,
                                    return_when="FIRST_COMPLETED").done
            except _dd.TimeoutError:
                if heard is None or (end is not None and _time.monotonic() >= end):
                    raise
            failed = [(r, f.exception()) for r, f in enumerate(futures)
                      if f not in pending and f.status == "error"]
            # A rank's own error, first in rank order, is the cause of the others' PeerFailed.
            for r, e in failed:
                if not isinstance(e, PeerFailed):
                    raise RunError(r, addrs[r], e) from e
            if failed and heard is None:
                heard = failed[0] + (_time.monotonic() + _CULPRIT_WAIT,)
            if heard is None:
                continue
            dead = _dead_rank(client, futures, addrs, pending)
            if dead is not None:
                raise RunError(dead, addrs[dead], heard[1], died_seen_by=heard[0]) from heard[1]
            if not pending or _time.monotonic() >= heard[2]:
                raise RunError(heard[0], addrs[heard[0]], heard[1]) from heard[1]
        return [f.result() for f in futures]
    except _dd.TimeoutError as e:
        raise TimeoutError(f"zcoll.dask.run: not done after {timeout} s") from e
    finally:
        client.cancel([f for f in futures if not f.done()])
