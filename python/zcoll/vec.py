"""The task-based vector interface (zcoll_vec_*): tasks on every rank commit vectors to
a key, and one thread per rank gets their reduction over every task of every rank.

    with comm.vec("grad", local_tasks=3, shape=n, dtype=np.float64, op=zcoll.AVG) as v:
        # each of the 3 task threads:   v.commit(its_gradient)   (returns at once)
        avg = v.get()                    # round 0's reduction, once every task is in

See zcoll.h for rounds, keys and what a communicator carrying keys may not do.
"""
from ctypes import byref, c_void_p

import numpy as np

from threading import get_ident

from . import _buffers, _wait
from ._errors import Timeout, error
from ._lib import lib
from .op import SUM, CreatedOp, raise_failed

__all__ = ["Vec"]

_commit = lib.zcoll_vec_commit
_get = lib.zcoll_vec_get
_INVALID_ARG = 1


class Vec:
    """One key of the vector interface on comm (zcoll_vec_init): Comm.vec(...).

    key: a str of 1 to 63 bytes naming the vector on every rank.
    local_tasks: how many tasks of this rank commit each round (ranks may differ).
    shape: the vector's shape (an int: its length); dtype: its numpy dtype (with an op
    created with dtype=, that dtype, a structured one too).
    op: any commutative op; AVG divides by the global number of tasks, a premul_sum
    scales this rank's sum of its tasks.

    commit(x) from any thread; get() from one thread per rank, the n-th get returning
    round n. Every call releases the GIL while it is in the library. free() (or the end
    of a with block) releases the key; the communicator's close frees keys left. After a
    get raised Timeout, the round may still be on its way: free() then leaves the key to
    the communicator's close (its name stays taken until then) instead of refusing.
    A get on the main thread raises KeyboardInterrupt at Ctrl-C, revoking the
    communicator (see Comm).
    """

    def __init__(self, comm, key, local_tasks, shape, dtype, op=SUM):
        self._comm = comm
        self._ptr = None
        self._timed_out = False
        self.key = str(key)
        self.local_tasks = int(local_tasks)
        self.shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.op = op
        created = op if op.__class__ is CreatedOp else None
        self._created = created
        self.size = int(np.prod(self.shape, dtype=np.int64))
        code, count = _buffers.layout(self.dtype, self.size, created and created.dtype)
        ptr = c_void_p()
        st = lib.zcoll_vec_init(comm._live(comm._ptr), self.key.encode(), self.local_tasks,
                                count, code, int(op), byref(ptr))
        if st:
            raise error(st)
        self._ptr = ptr.value

    def _live(self):
        ptr = self._ptr
        if ptr is None or self._comm._ptr is None:
            raise ValueError(f"vector '{self.key}' was freed" if ptr is None else
                             f"vector '{self.key}': the communicator is closed")
        return ptr

    def _array(self, x, name):
        a = _buffers.as_array(x, name)
        if a.dtype != self.dtype:
            raise TypeError(f"{name} has dtype {a.dtype}, vector '{self.key}' has {self.dtype}")
        if a.size != self.size:
            raise ValueError(f"{name} has {a.size} elements, vector '{self.key}' has "
                             f"{self.size}")
        if not a.flags.c_contiguous:
            raise _buffers._not_contiguous(a, name)
        return a

    def _check_op(self, what):
        if self._created is not None:
            raise_failed(self._created, self._comm, what)

    def commit(self, x):
        """Folds this task's x into the key's round (zcoll_vec_commit) and returns at
        once: x may be reused then. Any thread. More commits in a round than the rank's
        tasks raise InvalidArgument."""
        a = self._array(x, "x")
        st = _commit(self._live(), _buffers.address(a))
        self._check_op(f"commit to vector '{self.key}'")
        if st:
            raise error(st)

    def get(self, out=None):
        """Blocks until this rank's next round is reduced over every task of every rank
        and returns it: in a new array of the vector's shape, or in out."""
        if out is None:
            out = np.empty(self.shape, self.dtype)
            a = out
        else:
            a = self._array(out, "out")
            if not a.flags.writeable:
                raise ValueError("out is read-only")
        ptr, detail = self._live(), None
        if get_ident() == _wait.MAIN:
            st, detail = _wait.call(self._comm._ptr, (self, a), _get, ptr,
                                    _buffers.address(a))
        else:
            st = _get(ptr, _buffers.address(a))
        self._check_op(f"get of vector '{self.key}'")
        if st:
            exc = error(st, None, detail)
            self._timed_out = isinstance(exc, Timeout)
            raise exc
        return out

    def free(self):
        """Releases the key (local); refused (InvalidArgument) while its round is being
        reduced. Idempotent."""
        ptr = self._ptr
        if ptr is None:
            return
        if self._comm._ptr is not None:  # else the communicator's destroy freed it
            st = lib.zcoll_vec_free(ptr)
            # After a timeout the round may be on its way: the communicator frees the key.
            if st and not (st == _INVALID_ARG and self._timed_out):
                raise error(st)
        self._ptr = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.free()
        else:  # the block's exception says more than a refusal to free
            try:
                self.free()
            except Exception:
                pass

    def __repr__(self):
        state = "freed" if self._ptr is None else f"{self.local_tasks} local tasks"
        return f"<zcoll.Vec '{self.key}' {self.shape} {self.dtype} {state}>"
