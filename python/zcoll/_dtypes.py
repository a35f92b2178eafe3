"""numpy dtypes to zcoll_dtype_t.

Lookups are cached per dtype object: after the first call with a dtype, mapping it is
one dict lookup. bfloat16 is recognised by name (ml_dtypes' `bfloat16`, which numpy
knows nothing of), so the binding needs no array library beyond numpy.
"""
import enum

import numpy as np

__all__ = ["DType", "code_of", "numpy_of", "SIZE"]


class DType(enum.IntEnum):
    """zcoll_dtype_t, in zcoll.h's order."""

    INT8 = 0
    UINT8 = 1
    INT32 = 2
    UINT32 = 3
    INT64 = 4
    UINT64 = 5
    FLOAT16 = 6
    BFLOAT16 = 7
    FLOAT32 = 8
    FLOAT64 = 9


_BY_KIND_SIZE = {
    ("i", 1): DType.INT8, ("u", 1): DType.UINT8,
    ("i", 4): DType.INT32, ("u", 4): DType.UINT32,
    ("i", 8): DType.INT64, ("u", 8): DType.UINT64,
    ("f", 2): DType.FLOAT16, ("f", 4): DType.FLOAT32, ("f", 8): DType.FLOAT64,
}

# dtype -> int code. The hot path reads it directly (CACHE.get(a.dtype)).
CACHE = {}


def code_of(dtype):
    """The zcoll_dtype_t of a numpy dtype, or TypeError naming the dtype."""
    code = CACHE.get(dtype)
    if code is not None:
        return code
    if dtype.name == "bfloat16" and dtype.itemsize == 2:
        code = DType.BFLOAT16
    else:
        code = _BY_KIND_SIZE.get((dtype.kind, dtype.itemsize))
    if code is None:
        raise TypeError(
            f"zcoll cannot reduce dtype {dtype.name!r} ({dtype.str}); supported: int8, "
            "uint8, int32, uint32, int64, uint64, float16, bfloat16, float32, float64")
    if dtype.itemsize > 1 and not dtype.isnative:
        raise TypeError(f"zcoll reduces in this machine's byte order; dtype {dtype.str} is not")
    code = int(code)
    CACHE[dtype] = code
    return code


def code_of_name(name):
    """The zcoll_dtype_t of a name ("bfloat16", "float32", ...) or a DType."""
    if isinstance(name, DType):
        return int(name)
    try:
        return int(DType[str(name).upper()])
    except KeyError:
        raise TypeError(f"dtype={name!r}: not a zcoll dtype (int8, uint8, int32, uint32, "
                        "int64, uint64, float16, bfloat16, float32, float64)") from None


#: Bytes per element, by code (zcoll_dtype_size).
SIZE = (1, 1, 4, 4, 8, 8, 2, 2, 4, 8)

_NUMPY = {}


def numpy_of(code):
    """The numpy dtype of a zcoll_dtype_t, for views of the library's buffers. bfloat16
    is ml_dtypes' where it is installed, else its raw bits as uint16."""
    dt = _NUMPY.get(code)
    if dt is None:
        if code == DType.BFLOAT16:
            try:
                import ml_dtypes
                dt = np.dtype(ml_dtypes.bfloat16)
            except ImportError:
                dt = np.dtype(np.uint16)
        else:
            dt = np.dtype(DType(code).name.lower())
        _NUMPY[code] = dt
    return dt
