"""`with comm.group():` -- zcoll_group_start / zcoll_group_end (zcoll.h's "groups") for Comm.

Between start and end the library queues every collective and point-to-point call on the
communicator and issues them together at the end (small allreduces fused, sends and
receives posted at once). Python's blocking calls on the main thread normally run as the
i-form waited for in slices (_wait.py); inside a group that wait would never end, so a
blocking call issues its i-form, which the library queues, and the group keeps its request
and its arrays (the library reads and writes them only at the end) until the end has
ended every call. The end, which waits for the peers, runs like any other wait on the main
thread: on the waiter thread, so that Ctrl-C still works.
"""
from ctypes import byref, c_void_p
from threading import get_ident

from . import _wait
from ._errors import InvalidArgument, error
from ._lib import lib
from .op import raise_failed

__all__ = ["Groups"]

_free = lib.zcoll_request_free


class _Scope:
    """What Comm.group() returns: a context manager, and nothing else."""

    __slots__ = ("_comm",)

    def __init__(self, comm):
        self._comm = comm

    def __enter__(self):
        self._comm._group_start()
        return self._comm

    def __exit__(self, exc_type, exc, tb):
        self._comm._group_end(exc_type is not None)
        return False


class Groups:
    """Mixed into Comm: its _ptr, _live, _orphans and _free_lock."""

    _group = None  # the open group's calls, (request, arrays, created op, name); or None
    _group_depth = 0

    def group(self):
        """`with comm.group(): ...` queues the collectives and point-to-point calls made in
        the block and issues them together when it ends (zcoll_group_start/_end): small
        allreduces fused into one, sends and receives posted at once, so that no order of
        them in the block can deadlock. The block's end raises the first failed call's
        error. A call returns at once, its result not yet there: arrays it reads or writes
        are used at the end (this object holds them until then), so do not read a result
        nor change an input inside the block. A request an i-form returns in the block
        ends with the block: its wait() or test() inside the block is InvalidArgument. An
        exception that leaves the block revokes the communicator (the ranks' groups no
        longer match: the peers' calls fail with PeerFailed instead of waiting for ever),
        ends the group and propagates. Nesting deepens the one group; the outermost block
        issues everything. Use the communicator from one thread while a group is open."""
        return _Scope(self)

    def _group_start(self):
        ptr = self._live(self._ptr)
        st = lib.zcoll_group_start(ptr)
        if st:
            raise error(st, ptr)
        if self._group_depth == 0:
            self._group = []  # a new list each time: requests tell their group by identity
        self._group_depth += 1

    def _group_end(self, failed):
        ptr = self._ptr
        group = self._group
        self._group_depth -= 1
        if ptr is None:  # closed or aborted inside the block: the library dropped the calls
            self._group_depth = 0
            self._group = None
            return
        if self._group_depth > 0:
            st = lib.zcoll_group_end(ptr)  # an inner end: only makes the group shallower
            if st and not failed:
                raise error(st, ptr)
            return
        self._group = None
        if failed:
            lib.zcoll_comm_revoke(ptr)
        detail = None
        keep = tuple(group)
        if get_ident() == _wait.MAIN:
            try:
                st, detail = _wait.call(ptr, keep, lib.zcoll_group_end, ptr)
            except BaseException:  # Ctrl-C: the end goes on, revoked, on the waiter thread
                self._orphans.extend((c[0], c) for c in group)
                raise
        else:
            st = lib.zcoll_group_end(ptr)
        for req, _arrays, _op, _name in group:
            _free(req)
        if failed:
            return  # the block's own exception propagates
        for _req, _arrays, op, name in group:
            if op is not None:
                raise_failed(op, self, name)
        if st:
            raise error(st, ptr, detail)

    def _queue(self, name, issue, args, keep, created=None):
        """A blocking call made inside a group: its i-form, queued by the library; the
        group holds the request and the arrays until its end."""
        ptr = self._live(self._ptr)
        req = c_void_p()
        st = issue(ptr, *args, byref(req))
        if st:
            raise error(st, ptr)
        self._group.append((req.value, keep, created, name))

    def _check_not_in_group(self, group):
        """A request made in the open group cannot end before it: waiting is refused."""
        if group is not None and group is self._group:
            raise InvalidArgument("the request was made in the group still open: it ends "
                                  "when the `with comm.group()` block ends", 1)
