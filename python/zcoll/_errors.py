"""zcoll statuses as exceptions.

A failed call raises the class of its status, carrying the library's detailed message:
"collective #0 differs between ranks: rank 1 called allreduce(count 208, ...)" says more
than the status's name. The message is the failing call's, which the library records for
the thread that made it (zcoll_last_error): the communicator's (zcoll_comm_last_error)
belongs to whichever thread is inside a call on it, and a call refused because another
thread is inside leaves it alone. Nothing here runs on success: callers compare the
status with 0 first.
"""
from ._lib import lib

__all__ = [
    "Error", "InvalidArgument", "NoMemory", "Unsupported", "BootstrapError",
    "TransportError", "Timeout", "PeerFailed", "Mismatch", "OK", "IN_PROGRESS",
]

# zcoll.h's ZCOLL_STATUS_MAP, in order.
OK = 0
IN_PROGRESS = 9


class Error(Exception):
    """A zcoll call failed. `status` is the zcoll_status_t; str() is the library's message.

    Any error from a collective other than InvalidArgument for a concurrent call breaks
    the communicator for good (zcoll.h): close or abort it.
    """

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status


class InvalidArgument(Error, ValueError):
    """ZCOLL_ERR_INVALID_ARG; also a ValueError, as Python's own argument errors are."""
    status = 1


class NoMemory(Error, MemoryError):
    """ZCOLL_ERR_NO_MEMORY."""
    status = 2


class Unsupported(Error):
    """ZCOLL_ERR_UNSUPPORTED: not supported by this build or machine."""
    status = 3


class BootstrapError(Error):
    """ZCOLL_ERR_BOOTSTRAP: the rendezvous failed."""
    status = 4


class TransportError(Error):
    """ZCOLL_ERR_TRANSPORT."""
    status = 5


class Timeout(Error, TimeoutError):
    """ZCOLL_ERR_TIMEOUT: no progress from a peer for ZCOLL_TIMEOUT seconds."""
    status = 6


class PeerFailed(Error):
    """ZCOLL_ERR_PEER_FAILED: a peer died, aborted or revoked the communicator."""
    status = 7


class Mismatch(Error):
    """ZCOLL_ERR_MISMATCH: ranks called the collective with different arguments."""
    status = 8


_BY_STATUS = {cls.status: cls for cls in (InvalidArgument, NoMemory, Unsupported,
                                          BootstrapError, TransportError, Timeout,
                                          PeerFailed, Mismatch)}


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


def error(status, comm_ptr=None, detail=None):
    """The exception for the status a call on this thread just failed with; its message
    is detail (the text of a call another thread made for this one), else this thread's
    last error (zcoll_last_error), else comm_ptr's."""
    detail = detail or _text(lib.zcoll_last_error())
    if not detail and comm_ptr:
        detail = _text(lib.zcoll_comm_last_error(comm_ptr))
    reason = _text(lib.zcoll_strerror(status))
    cls = _BY_STATUS.get(status, Error)
    return cls(detail or reason or f"zcoll status {status}", status)
