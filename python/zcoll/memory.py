"""Explicit registration of a buffer with the transport (zcoll_mem_register)."""
from ctypes import byref, c_void_p

from ._buffers import address, as_array
from ._errors import error
from ._lib import lib

__all__ = ["MemoryRegion"]


class MemoryRegion:
    """buf's memory registered with comm's transport (Comm.register(buf)).

    Over verbs, collectives whose buffers lie inside it send from it with no staging
    copy and receive peers' RDMA writes straight into it; elsewhere registering is
    accepted and changes nothing. Holds buf until deregister() (or the end of a with
    block); the communicator's close releases registrations left behind.
    """

    def __init__(self, comm, buf):
        a = as_array(buf, "buf")
        if not a.flags.c_contiguous:
            raise ValueError(f"buf is not C-contiguous (shape {a.shape}, strides {a.strides})")
        mr = c_void_p()
        st = lib.zcoll_mem_register(comm._live(comm._ptr), address(a), a.nbytes, byref(mr))
        if st:
            raise error(st, comm._ptr)
        self._comm = comm
        self._mr = mr.value
        self._buf = a

    def deregister(self):
        """Releases the registration; refused (InvalidArgument) while a collective in
        flight delivers its result into it."""
        mr = self._mr
        if mr is None:
            return
        if self._comm._ptr is not None:  # else destroy already released it
            st = lib.zcoll_mem_deregister(mr)
            if st:
                raise error(st, self._comm._ptr)
        self._mr = None
        self._buf = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.deregister()
