"""zcoll: RDMA-accelerated allreduce for Python, a thin ctypes binding over libzcoll.

    import numpy as np, zcoll
    with zcoll.Comm() as comm:                      # rank and size from zcoll_run
        grad = np.full(1 << 20, comm.rank, np.float32)
        comm.allreduce(grad, out=grad, op=zcoll.AVG)  # in place, no copy

Also: comm.broadcast(x, root) (and ibroadcast, broadcast_init), ops from a Python
function (zcoll.op_create) or for weighted averages (zcoll.premul_sum), and the
task-based vector interface (comm.vec). Run it with
`zcoll_run -np 4 /usr/bin/python3 prog.py`. Failed calls raise a
zcoll.Error subclass (PeerFailed, Mismatch, Timeout, ...) carrying the library's
message. The library is found through ZCOLL_LIBRARY, else the path the build or
`cmake --install` recorded, else the system's library path.
"""
from ._dtypes import DType
from ._errors import (BootstrapError, Error, InvalidArgument, Mismatch, NoMemory, PeerFailed,
                      Timeout, TransportError, Unsupported)
from ._lib import lib as _clib
from .comm import Comm, get_unique_id
from .memory import MemoryRegion
from .op import AVG, MAX, MIN, PROD, SUM, CreatedOp, Op, op_create, premul_sum
from .partial import PartialRequest
from .request import PersistentRequest, Request
from .vec import Vec

__all__ = [
    "Comm", "get_unique_id", "Request", "PersistentRequest", "PartialRequest", "MemoryRegion", "Vec", "Op", "CreatedOp", "DType",
    "SUM", "PROD", "MIN", "MAX", "AVG", "op_create", "premul_sum",
    "Error", "InvalidArgument", "NoMemory", "Unsupported", "BootstrapError",
    "TransportError", "Timeout", "PeerFailed", "Mismatch",
    "algorithms", "__version__", "UNDEFINED",
]

#: The color of zcoll_comm_split's ranks that want no communicator (Comm.split's None).
UNDEFINED = -1

#: The library's version ("0.1.0"); the binding is versioned with it.
__version__ = _clib.zcoll_version_string().decode()


def algorithms():
    """The allreduce algorithms of this build (values of ZCOLL_ALGO besides "auto")."""
    from ctypes import c_char_p

    n = _clib.zcoll_algorithm_names(None, 0)
    names = (c_char_p * n)()
    _clib.zcoll_algorithm_names(names, n)
    return [s.decode() for s in names]
