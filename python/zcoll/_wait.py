"""Waiting on the main thread so that Ctrl-C works.

A ctypes call cannot be interrupted: a SIGINT that arrives while the main thread is
inside zcoll_allreduce becomes a KeyboardInterrupt only when the call returns, i.e. when
the peers come or ZCOLL_TIMEOUT has passed. So a call that waits for the peers, made on
the main thread (the only one Python runs signal handlers on), waits in slices instead:

- a built-in collective is issued in its non-blocking form and waited for with
  zcoll_wait_timeout in 50 ms slices (the library's own waiting: spin, then sleep),
  between which Python runs its handlers;
- a call that cannot be split (Vec.get, Comm.close's zcoll_comm_destroy) runs on a
  waiter thread, while the main thread waits for it in 50 ms slices.

An exception from a handler (Ctrl-C's KeyboardInterrupt) revokes the communicator, so
that the peers fail the collective with PeerFailed instead of waiting for this rank,
gives the call 50 ms to leave, and propagates. A call that takes longer (UCX stops its
endpoints for up to a second when a peer does not answer) finishes on the waiter thread,
which holds the call's buffers until then; its request is left to the communicator's
abort (or destroy), which waits for the call. Calls made on other threads go to the
library directly.
"""
import os
import queue
import threading

from ._errors import IN_PROGRESS, _text
from ._lib import lib

__all__ = ["MAIN", "end", "call", "destroy"]

#: The thread Python delivers signals to.
MAIN = threading.main_thread().ident
SLICE = 0.05  # seconds between two looks at the signals
SLICE_MS = 50
GRACE = 0.05  # seconds a revoked call has to leave before the exception propagates

_wait = lib.zcoll_wait
_wait_for = lib.zcoll_wait_timeout
_revoke = lib.zcoll_comm_revoke


class _Job:
    __slots__ = ("fn", "args", "keep", "done", "status", "detail")

    def __init__(self, fn, args, keep):
        self.fn = fn
        self.args = args
        self.keep = keep  # what the call reads and writes: alive until it has left
        self.done = threading.Event()
        self.status = None
        self.detail = None  # the failing call's message, from the waiter's thread


_jobs = queue.SimpleQueue()
_waiter = None
_lock = threading.Lock()


def _serve():
    while True:
        job = _jobs.get()
        try:
            st = job.fn(*job.args)
            job.detail = _text(lib.zcoll_last_error()) if st else None
            job.status = st
        finally:
            job.keep = None
            job.done.set()


def _after_fork():
    global _waiter, _jobs, _lock
    _waiter, _jobs, _lock = None, queue.SimpleQueue(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _run(fn, args, keep):
    global _waiter
    if _waiter is None:
        with _lock:
            if _waiter is None:
                t = threading.Thread(target=_serve, name="zcoll-wait", daemon=True)
                t.start()
                _waiter = t
    job = _Job(fn, args, keep)
    _jobs.put(job)
    return job


def _left(comm_ptr, job):
    """After an exception on the main thread: revokes, and says whether the call left
    within GRACE (else it goes on, on the waiter thread, holding its buffers)."""
    _revoke(comm_ptr)
    try:
        return job.done.wait(GRACE)
    except BaseException:  # noqa: a second Ctrl-C
        return job.done.is_set()


def _join(job):
    while not job.done.wait(SLICE):
        pass
    return job.status, job.detail


def end(comm_ptr, req, keep):
    """Waits for request req (in flight on comm_ptr, using the buffers in keep) to end,
    on the main thread; returns (status, message or None: this thread's last error has
    it). The caller frees req. On an exception, req is freed here if the call left in
    time, else left to the communicator: the caller must not touch it."""
    try:
        while True:
            st = _wait_for(req, SLICE_MS)
            if st != IN_PROGRESS:
                return st, None
    except BaseException:
        job = _run(_wait, (req,), keep)
        if _left(comm_ptr, job):
            lib.zcoll_request_free(req)
        raise


def call(comm_ptr, keep, fn, *args):
    """fn(*args), a call on comm_ptr that may wait for the peers (keep: the buffers it
    uses), run on the waiter thread while the main thread looks at its signals; returns
    (status, message)."""
    job = _run(fn, args, keep)
    try:
        return _join(job)
    except BaseException:
        _left(comm_ptr, job)
        raise


def destroy(comm_ptr, fn, refused, freed):
    """fn(comm_ptr) -- zcoll_comm_destroy, which waits for every rank -- on the main
    thread, as call() runs a call; returns (status, message). On an exception (Ctrl-C)
    the communicator is revoked, so that destroy ends at once with PeerFailed, here and
    at the peers; freed() is called before the exception goes on, unless destroy refused
    (status `refused`: nothing was destroyed). A destroy that has not left within GRACE
    frees the communicator on the waiter thread."""
    job = _run(fn, (comm_ptr,), ())
    try:
        return _join(job)
    except BaseException:
        if not (_left(comm_ptr, job) and job.status == refused):
            freed()
        raise
