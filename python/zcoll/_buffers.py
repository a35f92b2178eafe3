"""Turning the caller's buffers into (address, count, dtype) without copying data.

numpy arrays are used as they are. Any other object with the buffer protocol
(memoryview, bytearray, array.array, ...) is wrapped by numpy as a view of the same
memory (np.asarray of a memoryview never copies), so that one path checks and maps
everything. Nothing here ever copies the caller's data: a buffer zcoll cannot use as it
is (strided, read-only where it must be written, of another dtype) is an error that says
what to change.
"""
import ctypes
from ctypes import POINTER, Structure, addressof, c_char, c_int32, c_int64, c_uint8, c_uint16
from ctypes import c_uint64, c_void_p

import numpy as np

from . import _dtypes

__all__ = ["IN_PLACE", "operands", "buffer", "layout"]

IN_PLACE = 1  # ZCOLL_IN_PLACE: ((const void *)1)
_UINT8 = int(_dtypes.DType.UINT8)

_ndarray = np.ndarray
_empty = np.empty
_dtype_cache = _dtypes.CACHE
_code_of = _dtypes.code_of
_from_buffer = c_char.from_buffer


_KDLCPU = 1  # DLPack's device type of host memory
_KDLBFLOAT = 4  # DLPack's type code of bfloat16, which numpy has no dtype for


class Bf16Bits(np.ndarray):
    """bfloat16 elements seen as their raw bits (uint16), for numpy without ml_dtypes: what
    a torch bfloat16 tensor becomes here, and what dtype="bfloat16" makes of a uint16 array.
    zcoll reduces them as bfloat16."""


class _DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device_type", c_int32), ("device_id", c_int32),
                ("ndim", c_int32), ("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)),
                ("byte_offset", c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _bf16_from_dlpack(obj, name):
    """A bfloat16 exporter's memory as Bf16Bits, read from its DLPack capsule (numpy cannot
    import bfloat16). The capsule stays unconsumed and held by the array: when both are
    gone, the capsule's destructor releases the exporter's memory."""
    capsule = obj.__dlpack__()
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    if (t.code, t.bits, t.lanes) != (_KDLBFLOAT, 16, 1):
        return None
    shape = tuple(t.shape[i] for i in range(t.ndim))
    n = int(np.prod(shape, dtype=np.int64))
    if t.strides:
        want = 1
        for i in reversed(range(t.ndim)):
            if shape[i] != 1 and t.strides[i] != want:
                raise ValueError(f"{name} is not C-contiguous (shape {shape}): zcoll reduces "
                                 "contiguous memory in place and never copies; pass "
                                 f"{name}.contiguous()")
            want *= shape[i]
    raw = (c_char * (2 * n)).from_address((t.data or 0) + t.byte_offset) if n else bytearray()
    a = np.frombuffer(raw, np.uint16).reshape(shape).view(Bf16Bits)
    if n:
        raw._zcoll_owner = capsule
    return a


def _from_dlpack(obj, name):
    """A writable ndarray over the memory of an object that exports DLPack (a torch tensor,
    a JAX or CuPy host array): numpy's own import is read-only, so the array is rebuilt
    over the same address, holding the import (and with it the exporter's memory) alive."""
    device = obj.__dlpack_device__()
    if device[0] != _KDLCPU:
        raise TypeError(f"{name} lives on DLPack device {tuple(device)}, not in host memory: "
                        "zcoll reduces host memory")
    try:
        ro = np.from_dlpack(obj)
    except (TypeError, ValueError, BufferError, RuntimeError) as e:
        bf16 = _bf16_from_dlpack(obj, name)
        if bf16 is not None:
            return bf16
        raise TypeError(f"{name}: numpy cannot import it through DLPack: {e}") from None
    if not ro.flags.c_contiguous or not ro.nbytes:
        return ro  # refused later as strided, or nothing to write
    raw = (c_char * ro.nbytes).from_address(ro.ctypes.data)
    raw._zcoll_owner = ro  # the import keeps the exporter's memory: as long as this view
    return np.frombuffer(raw, ro.dtype).reshape(ro.shape)


def as_array(obj, name):
    """obj as an ndarray over the same memory."""
    if isinstance(obj, _ndarray):
        return obj
    try:
        view = memoryview(obj)
    except TypeError:
        if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
            return _from_dlpack(obj, name)
        raise TypeError(f"{name} must be a numpy array, an object that exports DLPack or "
                        f"one with the buffer protocol, not {type(obj).__name__}") from None
    try:
        return np.asarray(view)
    except (ValueError, TypeError) as e:
        raise TypeError(f"{name}: numpy cannot read its buffer format "
                        f"{view.format!r}: {e}") from None


def address(a):
    """The address of a C-contiguous array's first byte.

    ctypes' from_buffer is the cheapest way to it (a fifth of a.ctypes.data) but needs a
    writable, non-empty buffer; read-only and empty arrays take numpy's way."""
    try:
        return addressof(_from_buffer(a))
    except (TypeError, ValueError):
        return a.ctypes.data


def _not_contiguous(a, name):
    return ValueError(
        f"{name} is not C-contiguous (shape {a.shape}, strides {a.strides}): zcoll reduces "
        f"contiguous memory in place and never copies; pass np.ascontiguousarray({name}) "
        "(a copy you choose to make) or a contiguous buffer")


_BF16 = int(_dtypes.DType.BFLOAT16)


def as_code(a, dtype):
    """The dtype code an array's elements are reduced as: dtype= (a name, "bfloat16", or a
    zcoll.DType) reinterprets elements of the same size (a uint16 array as bfloat16); a
    Bf16Bits array is bfloat16; None: the array's own dtype decides (layout)."""
    if dtype is None:
        return _BF16 if type(a) is Bf16Bits else None
    code = _dtypes.code_of_name(dtype)
    if a.dtype.itemsize != _dtypes.SIZE[code] or a.dtype.kind not in "uif":
        raise TypeError(f"dtype={dtype!r} reinterprets elements of {_dtypes.SIZE[code]} bytes; "
                        f"x has dtype {a.dtype.name} ({a.dtype.itemsize} bytes)")
    return code


def layout(dtype, n, raw=None):
    """(dtype code, count) of n elements of a numpy dtype. raw: the element dtype of a
    created op (zcoll.op_create(..., dtype=)); n elements of it go as n * itemsize bytes
    of ZCOLL_UINT8 when zcoll has no dtype of its own for it (a structured dtype)."""
    code = _dtype_cache.get(dtype)
    if code is not None:
        return code, n
    if raw is not None and dtype == raw:
        try:
            return _code_of(dtype), n
        except TypeError:
            return _UINT8, n * dtype.itemsize
    return _code_of(dtype), n


def operands(x, out, raw=None, dtype=None):
    """(sendbuf, recvbuf, count, dtype code, result, keep) for reducing x into out.

    out None: a new array like x (an allocation, not a copy of x). out is x, or the same
    memory: in place. keep holds the arrays whose memory the call uses, for requests.
    raw: as in layout(); dtype: as in as_code()."""
    a = x if type(x) is _ndarray else as_array(x, "x")
    code = _dtype_cache.get(a.dtype)
    count = a.size
    if dtype is not None or type(a) is Bf16Bits:
        code = as_code(a, dtype)
    elif code is None:
        code, count = layout(a.dtype, count, raw)
    if not a.flags.c_contiguous:
        raise _not_contiguous(a, "x")
    if out is None:
        r = _empty(a.shape, a.dtype)
        return address(a), address(r), count, code, r, (a, r)
    if out is x:
        if not a.flags.writeable:
            raise ValueError("x is read-only: it cannot receive the result in place")
        return IN_PLACE, address(a), count, code, x, (a,)
    o = out if type(out) is _ndarray else as_array(out, "out")
    if o.dtype != a.dtype and (count != a.size or _dtype_cache.get(o.dtype, -1) != code
                               and _code_or_none(o.dtype) != code):
        raise TypeError(f"out has dtype {o.dtype.name}, x has {a.dtype.name}: they must match")
    if o.size != a.size:
        raise ValueError(f"out has {o.size} elements, x has {a.size}: they must match")
    if not o.flags.c_contiguous:
        raise _not_contiguous(o, "out")
    if not o.flags.writeable:
        raise ValueError("out is read-only")
    send, recv = address(a), address(o)
    if send == recv:
        send = IN_PLACE
    elif send < recv + o.nbytes and recv < send + a.nbytes:
        raise ValueError("x and out overlap without being the same memory")
    return send, recv, count, code, out, (a, o)


def _code_or_none(dtype):
    try:
        return _code_of(dtype)
    except TypeError:
        return None


def buffer(x, name="x"):
    """(address, count, dtype code, array) of a buffer a broadcast writes in place: C-
    contiguous and writable. A dtype zcoll has no code for (complex, bool, structured,
    another byte order) goes as its bytes (ZCOLL_UINT8): a broadcast only moves data."""
    a = x if type(x) is _ndarray else as_array(x, name)
    code = _dtype_cache.get(a.dtype)
    count = a.size
    if code is None:
        code = _code_or_none(a.dtype)
        if code is None:
            if a.dtype.hasobject:
                raise TypeError(f"{name} holds Python objects (dtype {a.dtype}): only their "
                                "addresses could be sent")
            code, count = _UINT8, a.nbytes
    if not a.flags.c_contiguous:
        raise _not_contiguous(a, name)
    if not a.flags.writeable:
        raise ValueError(f"{name} is read-only: a broadcast writes it in place")
    return address(a), count, code, a
