"""Allgather, reduce-scatter and reduce (and objects gathered or broadcast by pickle) for
Comm, in their blocking and non-blocking forms: the C calls of the same names, on the
caller's memory, with nothing copied."""
import pickle
from ctypes import byref, c_void_p
from threading import get_ident

import numpy as np

from . import _buffers, _wait
from ._errors import error
from ._lib import lib
from .op import SUM, CreatedOp, raise_failed
from .request import Request

__all__ = ["Collectives"]

_IN_PLACE = _buffers.IN_PLACE
_MAIN = _wait.MAIN
_free = lib.zcoll_request_free


def _source(x, raw=None, dtype=None):
    """(array, address, count, dtype code) of an input: C-contiguous, not copied. dtype:
    reinterpreted as that zcoll dtype (_buffers.as_code)."""
    a = x if type(x) is np.ndarray else _buffers.as_array(x, "x")
    if not a.flags.c_contiguous:
        raise _buffers._not_contiguous(a, "x")
    code = _buffers.as_code(a, dtype)
    if code is not None:
        return a, _buffers.address(a), a.size, code
    code, count = _buffers.layout(a.dtype, a.size, raw)
    return a, _buffers.address(a), count, code


def _result(out, dtype, shape, name="out"):
    """out checked to hold the result (shape's element count of dtype), or a new array."""
    if out is None:
        return np.empty(shape, dtype)
    o = out if type(out) is np.ndarray else _buffers.as_array(out, name)
    n = int(np.prod(shape, dtype=np.int64))
    if o.dtype != dtype:
        raise TypeError(f"{name} has dtype {o.dtype.name}, the result {np.dtype(dtype).name}")
    if o.size != n:
        raise ValueError(f"{name} has {o.size} elements, the result {n} (shape {shape})")
    if not o.flags.c_contiguous:
        raise _buffers._not_contiguous(o, name)
    if not o.flags.writeable:
        raise ValueError(f"{name} is read-only")
    return o


def _send_address(a, send, o, offset):
    """ZCOLL_IN_PLACE when the input already lies where MPI's in-place form has it (at
    `offset` bytes into the result), else the input's address, which must then not
    overlap the result."""
    recv = _buffers.address(o)
    if send == recv + offset and a.nbytes and a.dtype == o.dtype:
        return _IN_PLACE
    if a.nbytes and o.nbytes and send < recv + o.nbytes and recv < send + a.nbytes:
        raise ValueError("x and out overlap without x being in out's in-place position")
    return send


class Collectives:
    """Mixed into Comm: its _ptr, _live, _req, _req_ref, _orphans, _reap and _drop."""

    def _run(self, name, blocking, issue, args, keep, created):
        """A blocking collective: on the main thread its non-blocking form waited for in
        slices (Ctrl-C), elsewhere the C call; a created op's exception is raised.
        Inside a group: queued, and raised at the group's end (group.py)."""
        if self._group is not None:
            return self._queue(name, issue, args, keep, created)
        ptr = self._live(self._ptr)
        detail = None
        if get_ident() != _MAIN:
            st = blocking(ptr, *args)
        else:
            st = issue(ptr, *args, self._req_ref)
            if not st:
                r = self._req.value
                try:
                    st, detail = _wait.end(ptr, r, keep + (created,))
                except BaseException:
                    if created is not None:
                        created._take_error()
                    raise
                detail = self._drop(r, keep + (created,), st, detail)
        if created is not None:
            raise_failed(created, self, name)
        if st:
            raise error(st, ptr, detail)

    def _start(self, issue, args, keep, result, created=None):
        if self._orphans:
            self._reap()
        req = c_void_p()
        st = issue(self._live(self._ptr), *args, byref(req))
        if st:
            raise error(st, self._ptr)
        return Request(self, req.value, keep + (created,), result, created)

    # ---- allgather ----

    def _allgather_args(self, x, out):
        a, send, count, code = _source(x)
        o = _result(out, a.dtype, (self.size,) + a.shape)
        send = _send_address(a, send, o, self.rank * a.nbytes)
        return (send, _buffers.address(o), count, code), (a, o), o

    def allgather(self, x, out=None):
        """Every rank's x, in rank order: an array of shape (size, *x.shape)
        (zcoll_allgather). out: a C-contiguous buffer of x's dtype and size * x.size
        elements; x may be out[rank] itself (in place). Returns the result."""
        args, keep, o = self._allgather_args(x, out)
        self._run("allgather", lib.zcoll_allgather, lib.zcoll_iallgather, args, keep, None)
        return o

    def iallgather(self, x, out=None):
        """Starts allgather(x, out); the Request's wait() returns the result."""
        args, keep, o = self._allgather_args(x, out)
        return self._start(lib.zcoll_iallgather, args, keep, o)

    # ---- reduce-scatter ----

    def _reduce_scatter_args(self, x, out, op, dtype):
        created = op if op.__class__ is CreatedOp else None
        a, send, count, code = _source(x, created and created.dtype, dtype)
        if not a.ndim or a.shape[0] % self.size:
            raise ValueError(f"x's first dimension ({a.shape[0] if a.ndim else 'none'}) must be "
                             f"a multiple of the size ({self.size})")
        o = _result(out, a.dtype, (a.shape[0] // self.size,) + a.shape[1:])
        send = _send_address(a, send, o, 0)
        args = (send, _buffers.address(o if send != _IN_PLACE else a), count // self.size, code,
                int(op))
        return args, (a, o), o, created

    def reduce_scatter(self, x, out=None, op=SUM, dtype=None):
        """Block `rank` of the reduction of every rank's x over its first dimension
        (zcoll_reduce_scatter): x.shape[0] a multiple of size, the result of shape
        (x.shape[0] // size, *x.shape[1:]). out=x[:x.shape[0] // size] reduces in place
        (MPI's form: the block lands at x's start). dtype: as in allreduce. Returns the
        result."""
        args, keep, o, created = self._reduce_scatter_args(x, out, op, dtype)
        self._run("reduce_scatter", lib.zcoll_reduce_scatter, lib.zcoll_ireduce_scatter, args,
                  keep, created)
        return o

    def ireduce_scatter(self, x, out=None, op=SUM, dtype=None):
        """Starts reduce_scatter(x, out, op); the Request's wait() returns the result."""
        args, keep, o, created = self._reduce_scatter_args(x, out, op, dtype)
        return self._start(lib.zcoll_ireduce_scatter, args, keep, o, created)

    # ---- reduce ----

    def _reduce_args(self, x, root, out, op, dtype):
        created = op if op.__class__ is CreatedOp else None
        a, send, count, code = _source(x, created and created.dtype, dtype)
        if not isinstance(root, int) or not 0 <= root < self.size:
            raise ValueError(f"root {root!r} is not a rank (0..{self.size - 1})")
        if self.rank != root:
            if out is not None:
                raise ValueError("out is the root's only: the other ranks get None")
            return (send, None, count, code, int(op), root), (a,), None, created
        o = _result(out, a.dtype, a.shape)
        send = _send_address(a, send, o, 0)
        return (send, _buffers.address(o), count, code, int(op), root), (a, o), o, created

    def reduce(self, x, root=0, out=None, op=SUM, dtype=None):
        """The reduction of every rank's x on root (zcoll_reduce): the result there (a new
        array, or out; out=x reduces in place), None on the other ranks. dtype: as in
        allreduce."""
        args, keep, o, created = self._reduce_args(x, root, out, op, dtype)
        self._run("reduce", lib.zcoll_reduce, lib.zcoll_ireduce, args, keep, created)
        return o

    def ireduce(self, x, root=0, out=None, op=SUM, dtype=None):
        """Starts reduce(x, root, out, op); the Request's wait() returns the result on the
        root, None elsewhere."""
        args, keep, o, created = self._reduce_args(x, root, out, op, dtype)
        return self._start(lib.zcoll_ireduce, args, keep, o, created)

    # ---- Python objects, by pickle ----

    def allgather_object(self, obj):
        """Every rank's obj (anything pickle takes), as a list in rank order. The
        pickles' sizes are gathered first, then the pickles, padded to the largest."""
        data = np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
        sizes = self.allgather(np.array([data.size], np.int64))
        width = int(sizes.max())
        mine = np.zeros(width, np.uint8)
        mine[:data.size] = data
        rows = self.allgather(mine)
        return [pickle.loads(rows[r, :int(sizes[r])].tobytes()) for r in range(self.size)]

    def broadcast_object(self, obj=None, root=0):
        """root's obj (anything pickle takes) on every rank; the others' obj is ignored.
        The pickle's size goes first, then the pickle."""
        data = None
        size = np.zeros(1, np.int64)
        if self.rank == root:
            data = np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL),
                                 np.uint8).copy()
            size[0] = data.size
        self.broadcast(size, root)
        if data is None:
            data = np.empty(int(size[0]), np.uint8)
        self.broadcast(data, root)
        return obj if self.rank == root else pickle.loads(data.tobytes())
