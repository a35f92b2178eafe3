"""Waiting on the main thread so that Ctrl-C works.

A ctypes call cannot be interrupted: a SIGINT that arrives while the main thread is
inside zcoll_allreduce becomes a KeyboardInterrupt only when the call returns, i.e. when
the peers come or ZCOLL_TIMEOUT has passed. So a call that waits for the peers, made on
the main thread (the only one Python runs signal handlers on), waits in slices instead:

- a built-in collective is issued in its non-blocking form and tested for up to 2 ms
  (Python runs the handlers between two tests; a small collective ends within them:
  that is the fast path, no thread involved);
- then zcoll_wait (or a call that cannot be split, e.g. an allreduce with a created op,
  whose agreement step only the blocking form has) runs on a waiter thread, while the
  main thread waits for it in 50 ms slices, between which Python runs its handlers.

An exception from a handler (Ctrl-C's KeyboardInterrupt) revokes the communicator, so
that the peers fail the collective with PeerFailed instead of waiting for this rank,
waits for the call to leave (within ~10 ms of the revoke), and propagates. Calls made on
other threads go to the library directly.
"""
import os
import queue
import threading
from time import monotonic as _clock

from ._errors import IN_PROGRESS, _text
from ._lib import lib

__all__ = ["MAIN", "end", "call"]

#: The thread Python delivers signals to.
MAIN = threading.main_thread().ident
SPINS = 64  # zcoll_test calls between two looks at the clock
SPIN_SECONDS = 0.002  # then the wait moves to the waiter thread (a hand-over costs ~50 us)
SLICE = 0.05  # seconds between two looks at the signals

_test = lib.zcoll_test
_wait = lib.zcoll_wait
_revoke = lib.zcoll_comm_revoke


class _Job:
    __slots__ = ("fn", "args", "done", "status", "detail")

    def __init__(self, fn, args):
        self.fn = fn
        self.args = args
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
            job.done.set()


def _after_fork():
    global _waiter, _jobs, _lock
    _waiter, _jobs, _lock = None, queue.SimpleQueue(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _run(fn, args):
    global _waiter
    if _waiter is None:
        with _lock:
            if _waiter is None:
                t = threading.Thread(target=_serve, name="zcoll-wait", daemon=True)
                t.start()
                _waiter = t
    job = _Job(fn, args)
    _jobs.put(job)
    return job


def _finish(comm_ptr, job):
    """After an exception on the main thread: revoke, then let the call leave."""
    _revoke(comm_ptr)
    while True:
        try:
            if job is None or job.done.wait(SLICE):
                return
        except BaseException:  # noqa: a second Ctrl-C; the call leaves within ~10 ms
            pass


def _join(job):
    while not job.done.wait(SLICE):
        pass
    return job.status, job.detail


def end(comm_ptr, req):
    """Waits for request req (in flight on comm_ptr) to end, on the main thread; returns
    (status, message or None: this thread's last error has it)."""
    job = None
    try:
        for _ in range(SPINS):
            st = _test(req)
            if st != IN_PROGRESS:
                return st, None
        until = _clock() + SPIN_SECONDS
        while _clock() < until:
            for _ in range(SPINS):
                st = _test(req)
                if st != IN_PROGRESS:
                    return st, None
        job = _run(_wait, (req,))
        return _join(job)
    except BaseException:
        if job is None:
            _revoke(comm_ptr)
            _wait(req)  # returns at once: the revoke ended the request
        else:
            _finish(comm_ptr, job)
        raise


def call(comm_ptr, fn, *args):
    """fn(*args), a call on comm_ptr that may wait for the peers, run on the waiter
    thread while the main thread looks at its signals; returns (status, message)."""
    job = _run(fn, args)
    try:
        return _join(job)
    except BaseException:
        _finish(comm_ptr, job)
        raise
