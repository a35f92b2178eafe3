"""Non-blocking and persistent requests (allreduce and broadcast).

A request owns references to the arrays its collective reads and writes, so the garbage
collector cannot free memory the library is still using. zcoll_request_free refuses a
request in flight; so a request dropped in flight is handed to its communicator, which
finishes and frees it later (at its next non-blocking call, or at close) while still
holding its buffers, and a ResourceWarning says so (shown where warnings of that class
are: python3 -X dev, -W default, pytest).
"""
import warnings
from threading import get_ident

from . import _wait as _sliced
from ._errors import IN_PROGRESS, PeerFailed, error
from ._lib import lib
from .op import raise_failed

__all__ = ["Request", "PersistentRequest"]

_test = lib.zcoll_test
_wait = lib.zcoll_wait
_start = lib.zcoll_start
_free = lib.zcoll_request_free
_MAIN = _sliced.MAIN
_INVALID_ARG = 1


class Request:
    """A collective in flight (Comm.iallreduce, Comm.ibroadcast).

    test() and wait() end it; once it has ended its C request is freed and its buffers
    released, and both keep giving the same answer. `with comm.iallreduce(x) as r:`
    waits for it at the end of the block. Do not read the result or write the input
    before it has ended.
    """

    __slots__ = ("_comm", "_ptr", "_keep", "_result", "_error", "_op", "_group", "__weakref__")

    def __init__(self, comm, ptr, keep, result, op=None):
        self._comm = comm
        self._ptr = ptr
        self._keep = keep  # the arrays (and a created op) the collective uses
        self._result = result
        self._error = None
        self._op = op  # a CreatedOp whose function's exceptions the end raises
        self._group = comm._group  # made in an open group: it ends with the group (group.py)

    @property
    def result(self):
        """The array (or out buffer) that receives the result."""
        return self._result

    def test(self):
        """True once the collective has ended; raises its error if it failed."""
        ptr = self._ptr
        if ptr is None:
            return self._ended()
        self._comm._check_not_in_group(self._group)
        st = _test(self._comm._live(ptr))
        if st == IN_PROGRESS:
            return False
        self._end(st)
        return True

    def wait(self):
        """Blocks until the collective ends; returns the result or raises its error."""
        ptr = self._ptr
        if ptr is None:
            self._ended()
            return self._result
        self._comm._check_not_in_group(self._group)
        if get_ident() != _MAIN:
            self._end(_wait(self._comm._live(ptr)))
        else:
            self._wait_sliced(ptr, self._end)
        return self._result

    def _wait_sliced(self, ptr, finish):
        """wait() on the main thread, in slices (_wait.py); finish(st, detail) ends it."""
        comm = self._comm
        try:
            st, detail = _sliced.end(comm._live(comm._ptr), ptr, (self, self._keep))
        except BaseException:  # Ctrl-C: end() revoked and disposed of the C request
            self._ptr = None
            self._keep = None
            if isinstance(self, PersistentRequest):
                self._active = False
            if self._op is not None:
                self._op._take_error()
            self._error = PeerFailed("the wait was interrupted: the communicator was "
                                     "revoked")
            raise
        finish(st, detail)

    def _ended(self):
        if self._error is not None:
            raise self._error
        return True

    def _end(self, st, detail=None):
        """The request has ended with st: free it, then raise st's error if any."""
        exc = error(st, self._comm._ptr, detail) if st else None
        _free(self._ptr)
        self._ptr = None
        self._keep = None
        if self._op is not None:
            try:
                raise_failed(self._op, self._comm, self._what())
            except BaseException as e:
                exc = e
        if exc is not None:
            self._error = exc
            raise exc

    def _what(self):
        return "a non-blocking collective"

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.wait()
        # On an exception the request may still be in flight: __del__ hands it over.

    def __del__(self):
        ptr = self._ptr
        if ptr is None:
            return
        try:
            comm = self._comm
            if comm._ptr is None:  # destroyed or aborted: the library freed the request
                return
            st = _test(ptr)
            if st == IN_PROGRESS or st == _INVALID_ARG or _free(ptr):
                comm._orphans.append((ptr, self._keep))
                if st == IN_PROGRESS:
                    warnings.warn(f"{type(self).__name__} dropped in flight: its collective "
                                  "goes on, the communicator waits for it at its next call "
                                  "(wait() for it, or use `with`)", ResourceWarning,
                                  source=self)
        except Exception:  # interpreter shutdown: nothing left to hand over to
            pass


class PersistentRequest(Request):
    """A planned collective (Comm.allreduce_init, Comm.broadcast_init) that each start() issues anew with
    whatever the buffers hold then. Ending does not free it: free() does (or the with
    block's end, or the communicator's close)."""

    __slots__ = ("_active",)

    def __init__(self, comm, ptr, keep, result, op=None):
        super().__init__(comm, ptr, keep, result, op)
        self._group = None  # made, not issued: its starts are not the group's
        self._active = False

    def _what(self):
        return "a persistent collective"

    def _finish(self, st, detail=None):
        self._active = False
        if self._op is not None:
            raise_failed(self._op, self._comm, self._what())
        if st:
            raise error(st, self._comm._ptr, detail)

    def start(self):
        """Issues the collective; every rank must start it in the same order as its other
        collectives."""
        ptr = self._ptr
        if ptr is None:
            raise ValueError("the persistent request was freed")
        st = _start(self._comm._live(ptr))
        if st:
            raise error(st, self._comm._ptr)
        self._active = True

    def test(self):
        ptr = self._ptr
        if ptr is None:
            raise ValueError("the persistent request was freed")
        st = _test(self._comm._live(ptr))
        if st == IN_PROGRESS:
            return False
        self._finish(st)
        return True

    def wait(self):
        ptr = self._ptr
        if ptr is None:
            raise ValueError("the persistent request was freed")
        if get_ident() != _MAIN:
            self._finish(_wait(self._comm._live(ptr)))
        else:
            self._wait_sliced(ptr, self._finish)
        return self._result

    def free(self):
        """Frees the request; refused (InvalidArgument) while a start is in flight."""
        ptr = self._ptr
        if ptr is None:
            return
        if self._comm._ptr is not None:
            st = _free(ptr)
            if st:
                raise error(st, self._comm._ptr)
        self._ptr = None
        self._keep = None

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            if self._active:
                self.wait()
            self.free()
