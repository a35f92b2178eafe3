"""Reduction operations: the built-in values of zcoll_op_t, and ops created at run time
(a Python function, or a premultiplied sum for weighted averages).

A created op's function runs inside the collective, on whichever thread moves it: the
caller's (in allreduce, test, wait, Vec.commit, Vec.get) or the progress thread's
(ZCOLL_PROGRESS=thread). The call from C takes the GIL itself. It gets numpy arrays
viewing the library's memory (no copy) and must write the combination into inoutvec.

An exception cannot travel back through C. The binding catches it and tells the library
(zcoll_op_fail, naming the function): nothing the function wrote leaves this rank, the
collective fails here, the peers are told, and the communicator is broken for good, as
after any error. A blocking allreduce fails everywhere: the peers raise PeerFailed naming
this rank and the function ("op maxloc raised ValueError: ..."), none returns a result.
A non-blocking or persistent one, or a vector's round, may still end well on a peer
whose result did not need this rank's combination (its result is right); that peer's
next call raises PeerFailed. The Python call that ends the collective here (allreduce,
Request.wait or test, Vec.commit or get) raises the function's exception, with a note.
A function that returns something other than None (its result, instead of writing it
into inoutvec) fails the same way, with a TypeError.
"""
import enum
import threading
from ctypes import byref, c_char, c_int

import numpy as np

from . import _dtypes
from ._errors import error
from ._lib import USER_FN, lib

__all__ = ["Op", "SUM", "PROD", "MIN", "MAX", "AVG", "CreatedOp", "op_create", "premul_sum",
           "raise_failed"]


class Op(enum.IntEnum):
    """zcoll_op_t. AVG is the sum divided by the number of ranks; for integers the
    division truncates toward zero, and integer SUM and PROD wrap modulo 2**bits.

    Op.create(fn, commutative=True, ...) is zcoll.op_create (as mpi4py's Op.Create)."""

    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4

    @staticmethod
    def create(fn, commutative=True, elem_bytes=0, dtype=None):
        """zcoll.op_create(fn, commutative, elem_bytes, dtype)."""
        return op_create(fn, commutative, elem_bytes, dtype)


SUM, PROD, MIN, MAX, AVG = Op.SUM, Op.PROD, Op.MIN, Op.MAX, Op.AVG

def _view(addr, nbytes, dtype, writable):
    if not nbytes:
        return np.empty(0, dtype)
    a = np.frombuffer((c_char * nbytes).from_address(addr), dtype)
    if not writable:
        a.flags.writeable = False
    return a


class _State:
    """What the C callback needs: the function, the element dtype, the errors raised.
    Kept apart from CreatedOp so that the callback holds no reference to the op."""

    __slots__ = ("fn", "dtype", "errors", "name", "__weakref__")

    def __init__(self, fn, dtype):
        self.fn = fn
        self.dtype = dtype
        self.errors = []  # list.append is atomic: any thread may record
        self.name = _name_of(fn)


def _name_of(fn):
    """How messages name an op: by its function ("maxloc", "Model.combine")."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not isinstance(name, str):
        name = type(fn).__qualname__  # a callable object
    return name.replace(".<locals>", "")


def _trampoline(state):
    fn, elem, errors, name = state.fn, state.dtype, state.errors, state.name
    size, numpy_of = _dtypes.SIZE, _dtypes.numpy_of

    def call(inp, inout, count, dtype, _user):
        if errors:  # an earlier call failed: this collective's result is lost anyway
            return
        try:
            nbytes = count * size[dtype]
            dt = elem if elem is not None else numpy_of(dtype)
            ret = fn(_view(inp, nbytes, dt, False), _view(inout, nbytes, dt, True))
            if ret is not None:
                # A result returned is thrown away: the ranks would go on with whatever
                # inoutvec held, each its own.
                raise TypeError(f"op {name} returned a {type(ret).__name__}: an op writes "
                                "its result into inoutvec (in place) and returns None")
        except BaseException as e:  # noqa: nothing may cross into C
            errors.append(e)
            # Before C goes on: what inoutvec holds now must not reach the peers.
            lib.zcoll_op_fail(_why(f"op {name} raised {type(e).__name__}: {e}"))

    return USER_FN(call)


def _why(text, limit=190):
    """text for zcoll_op_fail, in limit bytes: cut at a word, with "..." if cut."""
    b = text.encode(errors="replace")
    if len(b) <= limit:
        return b
    cut = b[:limit - 3]
    space = cut.rfind(b" ")
    return (cut[:space] if space > limit // 2 else cut).decode(errors="ignore").encode() + b"..."


# Callbacks of ops whose free was refused when their Python object went away: C may
# still call them, so they live as long as the process.
_immortal = []
_lock = threading.Lock()


class CreatedOp:
    """An op made by zcoll.op_create or zcoll.premul_sum; pass it as op= like a built-in.

    Ops live in the process, not in a communicator. Every rank must create its ops in
    the same order (the n-th op alive has the same value everywhere), else collectives
    with them raise Mismatch. free() (or the end of a with block) releases it; refused
    (InvalidArgument) while a request or vector made with it exists. An op never freed
    is freed when it is collected, if nothing uses it then.
    """

    __slots__ = ("_value", "_state", "_cfunc", "kind", "commutative", "elem_bytes",
                 "dtype", "scalar", "__weakref__")

    def __init__(self, value, kind, state=None, cfunc=None, commutative=True, elem_bytes=0,
                 dtype=None, scalar=None):
        self._value = value
        self._state = state
        self._cfunc = cfunc  # must outlive every call C makes to it
        #: "user" or "premul_sum" (zcoll_op_name)
        self.kind = kind
        self.commutative = commutative
        #: bytes of one element the function is never given a part of (0: the dtype's)
        self.elem_bytes = elem_bytes
        #: the numpy dtype the function's arrays have (None: the collective's)
        self.dtype = dtype
        #: the premul_sum's scalar
        self.scalar = scalar

    def __int__(self):
        v = self._value
        if v is None:
            raise ValueError("the op was freed")
        return v

    __index__ = __int__

    @property
    def freed(self):
        return self._value is None

    @property
    def name(self):
        """zcoll_op_name: "user" or "premul_sum"."""
        return self.kind

    def _take_error(self):
        """The first exception the function raised since the last call, or None."""
        state = self._state
        if state is None or not state.errors:
            return None
        errors = state.errors
        exc = errors[0]
        del errors[:]
        return exc

    def free(self):
        """Releases the op (zcoll_op_free); idempotent. Refused (InvalidArgument, with
        zcoll's message) while a request or vector made with it exists."""
        v = self._value
        if v is None:
            return
        st = lib.zcoll_op_free(v)
        if st:
            raise error(st)
        self._value = None
        self._cfunc = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.free()

    def __del__(self):
        v = self._value
        if v is None:
            return
        try:
            if lib.zcoll_op_free(v):
                with _lock:
                    _immortal.append(self._cfunc)
        except Exception:  # interpreter shutdown
            pass

    def __repr__(self):
        if self._value is None:
            return f"<zcoll.CreatedOp {self.kind} freed>"
        extra = (f" scalar {self.scalar}" if self.kind == "premul_sum" else
                 f" {self._state.name} {'' if self.commutative else 'non-'}commutative"
                 + (f" dtype {self.dtype}" if self.dtype is not None else "")
                 + (f" elem_bytes {self.elem_bytes}" if self.elem_bytes else ""))
        return f"<zcoll.CreatedOp {self._value} {self.kind}{extra}>"


def op_create(fn, commutative=True, elem_bytes=0, dtype=None):
    """An op applying fn(invec, inoutvec): combine invec into inoutvec in place, i.e.
    inoutvec[i] = invec[i] (op) inoutvec[i] (zcoll_op_create; MPI's argument order).

    fn gets two numpy arrays over the library's memory (no copy; invec read-only), of
    the same length, valid only during the call. It must be associative; it may get
    any piece of the vector, never part of an element.
    commutative=False: the result is x0 (op) x1 (op) ... in rank order, on the "chain"
    algorithm (see zcoll.h).
    dtype: the element the arrays hold, e.g. np.dtype([("v", "<f4"), ("i", "<i4")]) for
    maxloc pairs, or np.dtype((np.float64, (2, 2))) for 2x2 matrices (the arrays are
    then (n, 2, 2)). Collectives with the op take arrays of that dtype: a dtype zcoll
    has no code for goes as its bytes (ZCOLL_UINT8), a subarray one as its base type.
    Its itemsize must be a power of two up to 4096 (pad a structured dtype if need be).
    None: the arrays have the collective's dtype.
    elem_bytes: bytes of one element never split (0: dtype's itemsize, else the
    collective dtype's size).

    The function runs on the thread that moves the collective; an exception it raises
    is raised by the call that ends the collective, and revokes the communicator (see
    the module's doc)."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, not {type(fn).__name__}")
    if dtype is not None:
        dtype = np.dtype(dtype)
        if dtype.hasobject:
            raise TypeError(f"dtype {dtype} holds Python objects")
        size = dtype.itemsize
        if not elem_bytes:
            elem_bytes = size
        if size & (size - 1) or size > 4096 or elem_bytes % size:
            raise ValueError(
                f"dtype {dtype} is {size} bytes: an op's element must be a power of two "
                "up to 4096 bytes (pad the structured dtype with a field, or "
                "np.dtype(fields, align=True))" if size & (size - 1) or size > 4096 else
                f"elem_bytes {elem_bytes} is not a multiple of dtype {dtype}'s {size} bytes")
    state = _State(fn, dtype)
    cfunc = _trampoline(state)
    value = c_int()
    st = lib.zcoll_op_create(cfunc, None, 1 if commutative else 0, elem_bytes, byref(value))
    if st:
        raise error(st)
    return CreatedOp(value.value, "user", state, cfunc, bool(commutative), elem_bytes, dtype)


def premul_sum(scalar):
    """A sum in which each rank's input is first multiplied by this rank's scalar
    (zcoll_op_create_premul_sum): with scalar = w_r / sum(w), a weighted average in one
    allreduce. Floating-point dtypes only; the scalar may differ from rank to rank."""
    value = c_int()
    st = lib.zcoll_op_create_premul_sum(float(scalar), byref(value))
    if st:
        raise error(st)
    return CreatedOp(value.value, "premul_sum", scalar=float(scalar))


def raise_failed(op, comm, what):
    """Raises the exception op's function recorded during `what`, if any, after
    revoking comm (this rank's contribution is lost: the peers must not go on)."""
    exc = op._take_error()
    if exc is None:
        return
    ptr = comm._ptr
    if ptr is not None:
        lib.zcoll_comm_revoke(ptr)
    if hasattr(exc, "add_note"):
        exc.add_note(f"zcoll: raised by op {op._state.name} ({op!r}) during {what}; the "
                     "collective failed and the communicator is broken")
    raise exc
