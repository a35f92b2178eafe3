"""The partial (quorum) allreduce's request (Comm.allreduce_partial_init).

Each start() offers this rank's input to the round forming when it arrives; a round is
decided by its quorum-th offer, and wait() returns its result (the same on every member;
AVG divides by the round's offers). .round, .contributors and .mine describe the last
round this request completed. flush() (every rank) ends the run: the forming round is
decided with what it holds and every rank gets the last round's result. free() is
collective too (it flushes first if the request was started since its last flush); the
communicator's close() frees the partial requests still open.
"""
from ctypes import byref, c_int, c_uint64

from ._errors import IN_PROGRESS, error
from ._lib import lib

__all__ = ["PartialRequest"]

_SLICE_MS = 50  # waits return to Python this often, so that Ctrl-C is seen


class PartialRequest:
    """A partial allreduce: start(), test(), wait(), flush(), free(); `with` frees it."""

    __slots__ = ("_comm", "_ptr", "_keep", "_result", "_active", "__weakref__")

    def __init__(self, comm, ptr, keep, result):
        self._comm = comm
        self._ptr = ptr
        self._keep = keep  # the arrays the rounds read and write
        self._result = result
        self._active = False

    def _live(self):
        if self._ptr is None:
            raise ValueError("the partial request was freed")
        return self._comm._live(self._ptr)

    @property
    def result(self):
        """The array (or out buffer) that receives each round's result."""
        return self._result

    def start(self):
        """Offers the input to the forming round (does not block)."""
        st = lib.zcoll_start(self._live())
        if st:
            raise error(st, None)
        self._active = True

    def test(self):
        """True once this start's round has ended (its result is in .result)."""
        st = lib.zcoll_test(self._live())
        if st == IN_PROGRESS:
            return False
        self._active = False
        if st:
            raise error(st, None)
        return True

    def wait(self):
        """Blocks until this start's round has ended; returns the result."""
        ptr = self._live()
        st = IN_PROGRESS
        while st == IN_PROGRESS:  # in slices: Python runs its signal handlers between them
            st = lib.zcoll_wait_timeout(ptr, _SLICE_MS)
        self._active = False
        if st:
            raise error(st, None)
        return self._result

    def flush(self):
        """Collective: ends the run of offers; returns the last round's result (its
        .contributors is 0 if no rank offered since the last flush; .mine says whether
        this rank's offer was in it). The request may be started again afterwards."""
        st = lib.zcoll_partial_flush(self._live())
        if st:
            raise error(st, None)
        return self._result

    def _info(self):
        rnd, n, mine = c_uint64(), c_int(), c_int()
        st = lib.zcoll_request_partial_info(self._live(), byref(rnd), byref(n), byref(mine))
        if st:
            raise error(st, None)
        return rnd.value, n.value, bool(mine.value)

    @property
    def round(self):
        """The number of the last round this request completed (from 0)."""
        return self._info()[0]

    @property
    def contributors(self):
        """How many offers that round held (AVG divided by it)."""
        return self._info()[1]

    @property
    def mine(self):
        """Whether this rank's offer was in that round (always after a start)."""
        return self._info()[2]

    def free(self):
        """Collective: releases the request (flushing it first if it was started since
        its last flush). Refused (InvalidArgument) while a start is in flight."""
        ptr = self._ptr
        if ptr is None:
            return
        if self._comm._ptr is not None:
            st = lib.zcoll_request_free(ptr)
            if st:
                raise error(st, None)
        self._ptr = None
        self._keep = None
        self._comm._partials.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            if self._active:
                self.wait()
            self.free()
