"""Alltoall(v), allgatherv, gather(v) and scatter(v) for Comm, blocking and non-blocking:
the C calls of the same names (zcoll.h's "the rest of MPI's set") on the caller's memory,
with nothing copied.

Counts and displacements are in elements of the arrays' dtype, as in C; without
displacements the blocks are packed in rank order. These calls only move data, so a dtype
zcoll has no code for (complex, structured, another byte order) goes as its bytes, and its
counts are scaled to bytes here. Everything a rank can check alone -- a count list's
length, a negative count, a block past the end of its array, an out of the wrong dtype or
size, a root outside comm -- raises before the C call (ValueError, TypeError), as the other
bindings do; what only the ranks together can see (rank i sends j three elements, j
expects two) is zcoll.Mismatch on both, from C."""
from ctypes import c_size_t

import numpy as np

from . import _buffers
from ._lib import lib

__all__ = ["Exchanges"]

_IN_PLACE = _buffers.IN_PLACE


def _array(x, name):
    """x as a C-contiguous ndarray over the same memory, with its zcoll dtype code and how
    many of that code's elements one of x's is (1, or its itemsize when it goes as bytes)."""
    a = x if type(x) is np.ndarray else _buffers.as_array(x, name)
    if not a.flags.c_contiguous:
        raise _buffers._not_contiguous(a, name)
    code = _buffers._dtype_cache.get(a.dtype)
    if code is None:
        code = _buffers._code_or_none(a.dtype)
    if code is not None:
        return a, code, 1
    if a.dtype.hasobject:
        raise TypeError(f"{name} holds Python objects (dtype {a.dtype}): only their "
                        "addresses could be sent")
    return a, _buffers._UINT8, a.dtype.itemsize


def _writable(o, name):
    if not o.flags.writeable:
        raise ValueError(f"{name} is read-only")
    return o


def _out(out, dtype, n, name="out", at_least=False):
    """out checked to hold n elements of dtype (at_least: n or more), or a new array of n
    (zeros where displacements may leave gaps nobody writes)."""
    if out is None:
        return np.zeros(n, dtype) if at_least else np.empty(n, dtype)
    o, _, _ = _array(out, name)
    if o.dtype != dtype:
        raise TypeError(f"{name} has dtype {o.dtype.name}, the data {np.dtype(dtype).name}")
    if o.size < n if at_least else o.size != n:
        raise ValueError(f"{name} has {o.size} elements, the result {'at least ' * at_least}{n}")
    return _writable(o, name)


def _counts(seq, name, size):
    """A list of size non-negative ints from any sequence of integers."""
    try:
        seq = list(seq)
        vals = [int(v) for v in seq]
        bad = [w for v, w in zip(vals, seq) if v != w]
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of {size} integers") from None
    if bad or len(vals) != size:
        raise ValueError(f"{name} has {len(vals)} entries, the communicator {size} ranks"
                         if not bad else f"{name} holds a non-integer ({bad[0]!r})")
    if any(v < 0 for v in vals):
        raise ValueError(f"{name} holds a negative value ({min(vals)})")
    return vals


def _layout(counts, displs, cname, dname, size, extent, what):
    """(counts, displs) checked: every block inside `extent` elements (None: not yet known),
    displacements packed in rank order when None. Returns them and the blocks' extent."""
    counts = _counts(counts, cname, size)
    if displs is None:
        displs, at = [], 0
        for c in counts:
            displs.append(at)
            at += c
    else:
        displs = _counts(displs, dname, size)
    end = max((d + c for d, c in zip(displs, counts)), default=0)
    if extent is not None and end > extent:
        r = max(range(size), key=lambda q: displs[q] + counts[q])
        raise ValueError(f"{what}'s block for rank {r} ({dname}[{r}] {displs[r]} + {cname}[{r}] "
                         f"{counts[r]}) ends past its {extent} elements")
    return counts, displs, end


def _sizes(vals, scale):
    return (c_size_t * len(vals))(*[v * scale for v in vals])


def _overlap_check(a, o):
    s, r = _buffers.address(a), _buffers.address(o)
    if a.nbytes and o.nbytes and s < r + o.nbytes and r < s + a.nbytes:
        raise ValueError("x and out overlap without x being in out's in-place position")


def _placed(inner, outer, offset):
    """ZCOLL_IN_PLACE when inner lies at offset bytes into outer (MPI's in-place position),
    of the same dtype; else inner's address, which must then not overlap outer."""
    if (inner.nbytes and inner.dtype == outer.dtype
            and _buffers.address(inner) == _buffers.address(outer) + offset):
        return _IN_PLACE
    _overlap_check(inner, outer)
    return _buffers.address(inner)


class Exchanges:
    """Mixed into Comm beside Collectives: its _run, _start, rank and size."""

    def _root(self, root):
        if not isinstance(root, (int, np.integer)) or not 0 <= root < self.size:
            raise ValueError(f"root {root!r} is not a rank (0..{self.size - 1})")
        return int(root)

    def _rows(self, a, what):
        if not a.ndim or a.shape[0] % self.size:
            raise ValueError(f"{what}'s first dimension ({a.shape[0] if a.ndim else 'none'}) "
                             f"must be a multiple of the size ({self.size})")
        return a.shape[0] // self.size

    # ---- alltoall ----

    def _alltoall_args(self, x, out):
        a, code, scale = _array(x, "x")
        self._rows(a, "x")
        o = _writable(a, "x") if out is x else _out(out, a.dtype, a.size)
        if out is None:
            o = o.reshape(a.shape)
        send = _placed(a, o, 0)
        count = a.size // self.size * scale
        return (send, _buffers.address(o), count, code), (a, o), o

    def alltoall(self, x, out=None):
        """Block j of x (its first dimension cut into size equal blocks) to rank j, which
        gets it as block `rank` of its result (zcoll_alltoall): the result has x's shape
        and dtype. out: a C-contiguous buffer of x's dtype and size; out=x exchanges in
        place. Returns the result."""
        args, keep, o = self._alltoall_args(x, out)
        self._run("alltoall", lib.zcoll_alltoall, lib.zcoll_ialltoall, args, keep, None)
        return o

    def ialltoall(self, x, out=None):
        """Starts alltoall(x, out); the Request's wait() returns the result."""
        args, keep, o = self._alltoall_args(x, out)
        return self._start(lib.zcoll_ialltoall, args, keep, o)

    # ---- alltoallv ----

    def _alltoallv_args(self, x, sendcounts, recvcounts, out, sdispls, rdispls):
        a, code, scale = _array(x, "x")
        p = self.size
        rc, rd, rend = _layout(recvcounts, rdispls, "recvcounts", "rdispls", p, None, "out")
        if out is x:  # MPI's in-place form: out, with recvcounts and rdispls, is both
            sc, sd, _ = _layout(sendcounts, sdispls, "sendcounts", "sdispls", p, a.size, "x")
            if (sc, sd) != (rc, rd):
                raise ValueError("in place (out is x), sendcounts and sdispls must be "
                                 "recvcounts and rdispls")
            _layout(rc, rd, "recvcounts", "rdispls", p, a.size, "x")
            o, send = _writable(a, "x"), _IN_PLACE
        else:
            sc, sd, _ = _layout(sendcounts, sdispls, "sendcounts", "sdispls", p, a.size, "x")
            o = _out(out, a.dtype, rend, at_least=True)
            _overlap_check(a, o)
            send = _buffers.address(a)
        arrays = [_sizes(v, scale) for v in (sc, sd, rc, rd)]
        args = (send, arrays[0], arrays[1], _buffers.address(o), arrays[2], arrays[3], code)
        return args, (a, o, *arrays), o

    def alltoallv(self, x, sendcounts, recvcounts, out=None, sdispls=None, rdispls=None):
        """sendcounts[j] elements of x (flattened), from sdispls[j], to rank j; recvcounts[i]
        from rank i into the result at rdispls[i] (zcoll_alltoallv). Displacements None:
        the blocks packed in rank order. The result is 1-D, as long as the farthest block's
        end (zeros in any gap), or out: C-contiguous, x's dtype, at least that long, nothing
        written outside the blocks. out=x exchanges in place (sendcounts and sdispls then
        equal to recvcounts and rdispls, as MPI's in-place form has them). Counts rank i
        and j disagree on are zcoll.Mismatch on both. Returns the result."""
        args, keep, o = self._alltoallv_args(x, sendcounts, recvcounts, out, sdispls, rdispls)
        self._run("alltoallv", lib.zcoll_alltoallv, lib.zcoll_ialltoallv, args, keep, None)
        return o

    def ialltoallv(self, x, sendcounts, recvcounts, out=None, sdispls=None, rdispls=None):
        """Starts alltoallv(...); the Request's wait() returns the result."""
        args, keep, o = self._alltoallv_args(x, sendcounts, recvcounts, out, sdispls, rdispls)
        return self._start(lib.zcoll_ialltoallv, args, keep, o)

    # ---- allgatherv ----

    def _collected(self, a, scale, counts, displs, out):
        """A v-gather's result: counts and displs checked, counts[rank] x's size, out (or
        a new array) long enough. Returns (sendbuf, out, counts, displs) for C."""
        r = self.rank
        c, d, end = _layout(counts, displs, "counts", "displs", self.size, None, "out")
        if c[r] != a.size:
            raise ValueError(f"counts[{r}] is {c[r]}, but x (rank {r}'s block) has {a.size} "
                             "elements")
        o = _out(out, a.dtype, end, at_least=True)
        return _placed(a, o, d[r] * a.itemsize), o, _sizes(c, scale), _sizes(d, scale)

    def _allgatherv_args(self, x, counts, out, displs):
        a, code, scale = _array(x, "x")
        send, o, cs, ds = self._collected(a, scale, counts, displs, out)
        return (send, a.size * scale, _buffers.address(o), cs, ds, code), (a, o, cs, ds), o

    def allgatherv(self, x, counts, out=None, displs=None):
        """Every rank's x (rank i's of counts[i] elements) into one 1-D result, rank i's at
        displs[i] (None: packed in rank order) (zcoll_allgatherv); zeros in any gap, or
        out: C-contiguous, x's dtype, at least as long as the farthest block's end. x may
        already lie at out[displs[rank]:] (in place). Returns the result."""
        args, keep, o = self._allgatherv_args(x, counts, out, displs)
        self._run("allgatherv", lib.zcoll_allgatherv, lib.zcoll_iallgatherv, args, keep, None)
        return o

    def iallgatherv(self, x, counts, out=None, displs=None):
        """Starts allgatherv(...); the Request's wait() returns the result."""
        args, keep, o = self._allgatherv_args(x, counts, out, displs)
        return self._start(lib.zcoll_iallgatherv, args, keep, o)

    # ---- gather(v) ----

    def _gather_args(self, x, root, out):
        a, code, scale = _array(x, "x")
        root = self._root(root)
        args = [_buffers.address(a), None, a.size * scale, code, root]
        if self.rank != root:
            if out is not None:
                raise ValueError("out is the root's only: the other ranks get None")
            return tuple(args), (a,), None
        o = _out(out, a.dtype, self.size * a.size)
        if out is None:
            o = o.reshape((self.size,) + a.shape)
        args[0] = _placed(a, o, root * a.nbytes)
        args[1] = _buffers.address(o)
        return tuple(args), (a, o), o

    def gather(self, x, root=0, out=None):
        """Every rank's x on root, in rank order (zcoll_gather): there an array of shape
        (size, *x.shape) (or out, C-contiguous, x's dtype, size * x.size elements; the
        root's x may be out[root]: in place), None on the other ranks."""
        args, keep, o = self._gather_args(x, root, out)
        self._run("gather", lib.zcoll_gather, lib.zcoll_igather, args, keep, None)
        return o

    def igather(self, x, root=0, out=None):
        """Starts gather(x, root, out); the Request's wait() returns the result on the
        root, None elsewhere."""
        args, keep, o = self._gather_args(x, root, out)
        return self._start(lib.zcoll_igather, args, keep, o)

    def _gatherv_args(self, x, counts, root, out, displs):
        a, code, scale = _array(x, "x")
        root, r = self._root(root), self.rank
        if r != root:
            if out is not None:
                raise ValueError("out is the root's only: the other ranks get None")
            if counts is not None:  # read at the root only; checked here when given
                c = _counts(counts, "counts", self.size)
                if c[r] != a.size:
                    raise ValueError(f"counts[{r}] is {c[r]}, but x has {a.size} elements")
            return (_buffers.address(a), a.size * scale, None, None, None, code, root), (a,), None
        if counts is None:
            raise ValueError("gatherv: the root needs counts")
        send, o, cs, ds = self._collected(a, scale, counts, displs, out)
        args = (send, a.size * scale, _buffers.address(o), cs, ds, code, root)
        return args, (a, o, cs, ds), o

    def gatherv(self, x, counts, root=0, out=None, displs=None):
        """Every rank's x on root, rank i's (counts[i] elements) at displs[i] of a 1-D
        result (None: packed in rank order) (zcoll_gatherv): there the result (zeros in
        any gap, or out: x's dtype, at least as long as the farthest block's end; the
        root's x may lie at out[displs[root]:], in place), None on the other ranks.
        counts and displs are read at the root only (elsewhere they may be None); a
        count the root and a rank disagree on is zcoll.Mismatch on both."""
        args, keep, o = self._gatherv_args(x, counts, root, out, displs)
        self._run("gatherv", lib.zcoll_gatherv, lib.zcoll_igatherv, args, keep, None)
        return o

    def igatherv(self, x, counts, root=0, out=None, displs=None):
        """Starts gatherv(...); the Request's wait() returns the result on the root, None
        elsewhere."""
        args, keep, o = self._gatherv_args(x, counts, root, out, displs)
        return self._start(lib.zcoll_igatherv, args, keep, o)

    # ---- scatter(v) ----
    # The ranks other than the root must know their block's dtype and size before
    # anything arrives: zcoll checks them against the root's (a disagreement is
    # Mismatch), and learning them from the root would cost a second collective per
    # call. So those ranks pass out (the block's buffer: its dtype and size are the
    # count) or an x shaped like the root's (SPMD code calling scatter(x) on every rank
    # with the same shapes: its dtype and shape give the block, its contents unused).

    def _scatter_args(self, x, root, out):
        root, p = self._root(root), self.size
        if self.rank != root:
            if out is None:
                if x is None:
                    raise ValueError("scatter: a rank other than the root needs out (its "
                                     "block's buffer) or an x shaped like the root's")
                t, _, _ = _array(x, "x")
                n = self._rows(t, "x")
                out = np.empty((n,) + t.shape[1:], t.dtype)
            o, code, scale = _array(out, "out")
            _writable(o, "out")
            return (None, _buffers.address(o), o.size * scale, code, root), (o,), o
        if x is None:
            raise ValueError("scatter: the root needs x")
        a, code, scale = _array(x, "x")
        n = self._rows(a, "x")
        shape = (n,) + a.shape[1:]
        o = _out(out, a.dtype, a.size // p)
        if out is None:
            o = o.reshape(shape)
        block = a.size // p * a.itemsize
        recv = _placed(o, a, root * block)
        return (_buffers.address(a), recv, a.size // p * scale, code, root), (a, o), o

    def scatter(self, x, root=0, out=None):
        """Block i of the root's x (its first dimension cut into size equal blocks) to
        rank i (zcoll_scatter); returns the rank's block, of shape (x.shape[0] // size,
        *x.shape[1:]), in out if given. The root's out may be its own block of x
        (in place). Elsewhere x is not read: pass out (the block's buffer), or an array
        shaped like the root's x, from which the block's shape and dtype are taken."""
        args, keep, o = self._scatter_args(x, root, out)
        self._run("scatter", lib.zcoll_scatter, lib.zcoll_iscatter, args, keep, None)
        return o

    def iscatter(self, x, root=0, out=None):
        """Starts scatter(x, root, out); the Request's wait() returns the block."""
        args, keep, o = self._scatter_args(x, root, out)
        return self._start(lib.zcoll_iscatter, args, keep, o)

    def _scatterv_args(self, x, counts, root, out, displs):
        root, r = self._root(root), self.rank
        if r != root:
            if out is None:
                if x is None or counts is None:
                    raise ValueError("scatterv: a rank other than the root needs out (its "
                                     "block's buffer) or x and counts (the block's dtype "
                                     "and size)")
                t, _, _ = _array(x, "x")
                out = np.empty(_counts(counts, "counts", self.size)[r], t.dtype)
            o, code, scale = _array(out, "out")
            _writable(o, "out")
            return (None, None, None, _buffers.address(o), o.size * scale, code, root), (o,), o
        if x is None or counts is None:
            raise ValueError("scatterv: the root needs x and counts")
        a, code, scale = _array(x, "x")
        c, d, _ = _layout(counts, displs, "counts", "displs", self.size, a.size, "x")
        o = _out(out, a.dtype, c[r])
        recv = _placed(o, a, d[r] * a.itemsize)
        cs, ds = _sizes(c, scale), _sizes(d, scale)
        return (_buffers.address(a), cs, ds, recv, c[r] * scale, code, root), (a, o, cs, ds), o

    def scatterv(self, x, counts, root=0, out=None, displs=None):
        """counts[i] elements of the root's x (flattened), from displs[i] (None: packed in
        rank order), to rank i (zcoll_scatterv); returns the rank's 1-D block, in out if
        given. The root's out may be its own block of x (in place). Elsewhere x and counts
        are not sent: pass out (the block's buffer), or x and counts, from which the
        block's dtype and size are taken. A count the root and a rank disagree on is
        zcoll.Mismatch on both."""
        args, keep, o = self._scatterv_args(x, counts, root, out, displs)
        self._run("scatterv", lib.zcoll_scatterv, lib.zcoll_iscatterv, args, keep, None)
        return o

    def iscatterv(self, x, counts, root=0, out=None, displs=None):
        """Starts scatterv(...); the Request's wait() returns the block."""
        args, keep, o = self._scatterv_args(x, counts, root, out, displs)
        return self._start(lib.zcoll_iscatterv, args, keep, o)
