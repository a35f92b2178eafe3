"""Point-to-point messages for Comm, blocking and non-blocking: zcoll_send, zcoll_recv,
zcoll_isend and zcoll_irecv (zcoll.h's "point to point") on the caller's memory, with
nothing copied.

Arrays are taken as xchg.py takes them (numpy arrays and DLPack exporters, C-contiguous;
a dtype zcoll has no code for goes as its bytes). A receive writes into out, whose dtype
and size are what it expects: a message of another count or dtype is zcoll.Mismatch on
both sides, from C, as is every other error the library sees (a peer outside comm, a
negative tag: InvalidArgument, raised by the call that posts). Only what ctypes would get
wrong is checked here: a peer or tag that is not an integer, or past a C int (ctypes
would wrap it into some other rank or tag)."""
import numpy as np

from . import _buffers
from ._errors import error
from ._lib import lib
from .xchg import _array, _writable

__all__ = ["PointToPoint"]

_INT_MAX = 2**31 - 1


def _c_int(v, name):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, not {type(v).__name__}")
    if not -_INT_MAX - 1 <= v <= _INT_MAX:
        raise ValueError(f"{name} {v} does not fit a C int")
    return int(v)


def _args(x, peer, tag, name):
    a, code, scale = _array(x, name)
    if name == "out":
        _writable(a, name)
    args = (_buffers.address(a), a.size * scale, code, _c_int(peer, "peer"), _c_int(tag, "tag"))
    return args, (a,)


class PointToPoint:
    """Mixed into Comm beside Collectives and Exchanges: its _run, _start and rank."""

    def send(self, x, peer, tag=0):
        """Sends x to rank peer with tag (zcoll_send); returns once peer's receive has
        matched it (MPI's synchronous mode: where both sides send first, use isend). A
        send to this rank itself needs its irecv posted first (else InvalidArgument)."""
        args, keep = _args(x, peer, tag, "x")
        if args[3] == self.rank and self._group is None:
            # It completes at once or is refused (nothing else could post the receive):
            # through the non-blocking form it would wait for ever instead.
            ptr = self._live(self._ptr)
            st = lib.zcoll_send(ptr, *args)
            if st:
                raise error(st, ptr)
            return
        self._run("send", lib.zcoll_send, lib.zcoll_isend, args, keep, None)

    def recv(self, out, peer, tag=0):
        """Receives the message from rank peer with tag into out (zcoll_recv): a
        C-contiguous, writable buffer whose dtype and size are the message's (another
        count or dtype is zcoll.Mismatch on both sides, and out is not written past).
        Returns out."""
        args, keep = _args(out, peer, tag, "out")
        self._run("recv", lib.zcoll_recv, lib.zcoll_irecv, args, keep, None)
        return out

    def isend(self, x, peer, tag=0):
        """Starts send(x, peer, tag); the Request (which holds x until it ends) completes
        when peer's receive has matched the message; its wait() returns None."""
        args, keep = _args(x, peer, tag, "x")
        return self._start(lib.zcoll_isend, args, keep, None)

    def irecv(self, out, peer, tag=0):
        """Starts recv(out, peer, tag); the Request's wait() returns out, filled."""
        args, keep = _args(out, peer, tag, "out")
        return self._start(lib.zcoll_irecv, args, keep, out)
