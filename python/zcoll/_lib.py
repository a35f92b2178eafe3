"""Loading libzcoll and declaring the C prototypes, once.

Every function is declared with argtypes and restype here, at import, so that a call on
the hot path is one ctypes call with no per-call setup. ctypes.CDLL releases the GIL for
the duration of each call: other Python threads run while a rank waits for its peers.

Where the library comes from, first match wins:
1. ZCOLL_LIBRARY, an explicit path (a build tree, a sanitizer build);
2. the path recorded by the build next to this file (_libpath.py): `cmake --install`
   records the installed library relative to the installed package, the build tree
   records its own libzcoll.so;
3. ctypes.util.find_library("zcoll"), i.e. the system's library search path.
"""
import ctypes
import ctypes.util
import os
from ctypes import CFUNCTYPE, POINTER, c_char_p, c_double, c_int, c_size_t, c_uint64, c_void_p

__all__ = ["lib", "path", "Stats", "USER_FN"]

_status = c_int  # zcoll_status_t
_handle = c_void_p  # zcoll_comm_t *, zcoll_request_t *, zcoll_config_t *, zcoll_mr_t *
_sizes = POINTER(c_size_t)  # const size_t *: counts and displacements (NULL: None)


class Stats(ctypes.Structure):
    """zcoll_comm_stats_t; fields are only ever added at the end, as in zcoll.h."""

    _fields_ = [(name, c_uint64) for name in (
        "collectives", "rcache_hits", "rcache_misses", "rcache_evictions",
        "rcache_invalidations", "rcache_reg_ns", "rcache_bytes",
        "result_pieces_placed", "result_pieces_copied", "bytes_sent_same_host",
        "bytes_sent_other_hosts")] + [("rail_bytes", c_uint64 * 4),
                                      ("mapped_collectives", c_uint64)]


# zcoll_user_fn_t: void (*)(const void *in, void *inout, size_t count, zcoll_dtype_t, void *user).
# CFUNCTYPE: a call from C takes the GIL itself, whichever thread makes it.
USER_FN = CFUNCTYPE(None, c_void_p, c_void_p, c_size_t, c_int, c_void_p)

# name: (restype, argtypes), in the order of zcoll.h. Only functions zcoll.h declares.
_PROTOTYPES = {
    "zcoll_strerror": (c_char_p, [_status]),
    "zcoll_version_string": (c_char_p, []),
    "zcoll_last_error": (c_char_p, []),
    "zcoll_config_create": (_status, [POINTER(_handle)]),
    "zcoll_config_set": (_status, [_handle, c_char_p, c_char_p]),
    "zcoll_config_get": (_status, [_handle, c_char_p, c_char_p, c_size_t]),
    "zcoll_config_free": (None, [_handle]),
    "zcoll_comm_init": (_status, [POINTER(_handle), _handle]),
    "zcoll_comm_rank": (c_int, [_handle]),
    "zcoll_comm_size": (c_int, [_handle]),
    "zcoll_comm_destroy": (_status, [_handle]),
    "zcoll_comm_abort": (_status, [_handle]),
    "zcoll_comm_revoke": (_status, [_handle]),
    "zcoll_comm_dump": (_status, [_handle]),
    "zcoll_comm_last_error": (c_char_p, [_handle]),
    "zcoll_comm_transport": (c_char_p, [_handle]),
    "zcoll_comm_device": (c_char_p, [_handle]),
    "zcoll_comm_stats": (_status, [_handle, POINTER(Stats), c_size_t]),
    "zcoll_allreduce": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int, c_int]),
    "zcoll_allreduce_algorithm": (_status, [_handle, c_size_t, c_int, c_int, POINTER(c_char_p)]),
    "zcoll_algorithm_names": (c_int, [POINTER(c_char_p), c_int]),
    "zcoll_iallreduce": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int, c_int,
                                   POINTER(_handle)]),
    "zcoll_allreduce_init": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int, c_int,
                                       POINTER(_handle)]),
    "zcoll_start": (_status, [_handle]),
    "zcoll_test": (_status, [_handle]),
    "zcoll_wait": (_status, [_handle]),
    "zcoll_wait_timeout": (_status, [_handle, c_int]),
    "zcoll_request_free": (_status, [_handle]),
    "zcoll_allreduce_partial_init": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int,
                                               c_int, c_int, POINTER(_handle)]),
    "zcoll_request_partial_info": (_status, [_handle, POINTER(c_uint64), POINTER(c_int),
                                             POINTER(c_int)]),
    "zcoll_partial_flush": (_status, [_handle]),
    "zcoll_broadcast": (_status, [_handle, c_void_p, c_size_t, c_int, c_int]),
    "zcoll_barrier": (_status, [_handle]),
    "zcoll_ibarrier": (_status, [_handle, POINTER(_handle)]),
    "zcoll_ibroadcast": (_status, [_handle, c_void_p, c_size_t, c_int, c_int, POINTER(_handle)]),
    "zcoll_broadcast_init": (_status, [_handle, c_void_p, c_size_t, c_int, c_int,
                                       POINTER(_handle)]),
    "zcoll_comm_split": (_status, [_handle, c_int, c_int, POINTER(_handle)]),
    "zcoll_get_unique_id": (_status, [c_char_p]),
    "zcoll_comm_init_rank": (_status, [POINTER(_handle), c_char_p, c_int, c_int, c_void_p]),
    "zcoll_allgather": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int]),
    "zcoll_iallgather": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int,
                                   POINTER(_handle)]),
    "zcoll_reduce_scatter": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int, c_int]),
    "zcoll_ireduce_scatter": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int, c_int,
                                        POINTER(_handle)]),
    "zcoll_reduce": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int, c_int, c_int]),
    "zcoll_ireduce": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int, c_int, c_int,
                                POINTER(_handle)]),
    "zcoll_alltoall": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int]),
    "zcoll_ialltoall": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int, POINTER(_handle)]),
    "zcoll_alltoallv": (_status, [_handle, c_void_p, _sizes, _sizes, c_void_p, _sizes, _sizes,
                                  c_int]),
    "zcoll_ialltoallv": (_status, [_handle, c_void_p, _sizes, _sizes, c_void_p, _sizes, _sizes,
                                   c_int, POINTER(_handle)]),
    "zcoll_allgatherv": (_status, [_handle, c_void_p, c_size_t, c_void_p, _sizes, _sizes, c_int]),
    "zcoll_iallgatherv": (_status, [_handle, c_void_p, c_size_t, c_void_p, _sizes, _sizes, c_int,
                                    POINTER(_handle)]),
    "zcoll_gather": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int, c_int]),
    "zcoll_igather": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int, c_int,
                                POINTER(_handle)]),
    "zcoll_gatherv": (_status, [_handle, c_void_p, c_size_t, c_void_p, _sizes, _sizes, c_int,
                                c_int]),
    "zcoll_igatherv": (_status, [_handle, c_void_p, c_size_t, c_void_p, _sizes, _sizes, c_int,
                                 c_int, POINTER(_handle)]),
    "zcoll_scatter": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int, c_int]),
    "zcoll_iscatter": (_status, [_handle, c_void_p, c_void_p, c_size_t, c_int, c_int,
                                 POINTER(_handle)]),
    "zcoll_scatterv": (_status, [_handle, c_void_p, _sizes, _sizes, c_void_p, c_size_t, c_int,
                                 c_int]),
    "zcoll_iscatterv": (_status, [_handle, c_void_p, _sizes, _sizes, c_void_p, c_size_t, c_int,
                                  c_int, POINTER(_handle)]),
    "zcoll_send": (_status, [_handle, c_void_p, c_size_t, c_int, c_int, c_int]),
    "zcoll_recv": (_status, [_handle, c_void_p, c_size_t, c_int, c_int, c_int]),
    "zcoll_isend": (_status, [_handle, c_void_p, c_size_t, c_int, c_int, c_int, POINTER(_handle)]),
    "zcoll_irecv": (_status, [_handle, c_void_p, c_size_t, c_int, c_int, c_int, POINTER(_handle)]),
    "zcoll_group_start": (_status, [_handle]),
    "zcoll_group_end": (_status, [_handle]),
    "zcoll_vec_init": (_status, [_handle, c_char_p, c_int, c_size_t, c_int, c_int,
                                 POINTER(_handle)]),
    "zcoll_vec_commit": (_status, [_handle, c_void_p]),
    "zcoll_vec_get": (_status, [_handle, c_void_p]),
    "zcoll_vec_free": (_status, [_handle]),
    "zcoll_mem_register": (_status, [_handle, c_void_p, c_size_t, POINTER(_handle)]),
    "zcoll_mem_deregister": (_status, [_handle]),
    "zcoll_mem_alloc": (_status, [_handle, c_size_t, POINTER(c_void_p)]),
    "zcoll_mem_free": (_status, [_handle, c_void_p]),
    "zcoll_op_create": (_status, [USER_FN, c_void_p, c_int, c_size_t, POINTER(c_int)]),
    "zcoll_op_create_premul_sum": (_status, [c_double, POINTER(c_int)]),
    "zcoll_op_free": (_status, [c_int]),
    "zcoll_op_fail": (None, [c_char_p]),
    "zcoll_dtype_size": (c_size_t, [c_int]),
    "zcoll_dtype_name": (c_char_p, [c_int]),
    "zcoll_op_name": (c_char_p, [c_int]),
}


def _candidates():
    """The paths to try, in order (ZCOLL_LIBRARY alone if set). A generator: ctypes.util.find_library runs ldconfig and the compiler in subprocesses
    (a third of a second, and every rank of a job imports zcoll), so the system's search
    path is asked only when the build's own library did not load."""
    explicit = os.environ.get("ZCOLL_LIBRARY")
    if explicit:
        # An explicit choice is never second-guessed: if it is wrong, say so.
        yield explicit
        return
    try:
        from . import _libpath  # written by the build (build tree) or by cmake --install
    except ImportError:
        pass
    else:
        here = os.path.dirname(os.path.abspath(__file__))
        yield os.path.normpath(os.path.join(here, _libpath.LIBRARY))
    system = ctypes.util.find_library("zcoll")
    if system:
        yield system


def _load():
    explicit = bool(os.environ.get("ZCOLL_LIBRARY"))
    errors = []
    for p in _candidates():
        try:
            return ctypes.CDLL(p), p
        except OSError as e:
            if explicit:
                raise ImportError(f"zcoll: cannot load ZCOLL_LIBRARY={p}: {e}") from e
            errors.append(f"{p}: {e}")
    tried = "; ".join(errors) if errors else "no libzcoll found"
    raise ImportError(
        f"zcoll: cannot load libzcoll ({tried}). Install zcoll (cmake --install), use the "
        "package from a build tree (PYTHONPATH=<build>/python), or set ZCOLL_LIBRARY to "
        "the path of libzcoll.so")


lib, path = _load()
for _name, (_restype, _argtypes) in _PROTOTYPES.items():
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes
del _name, _restype, _argtypes, _fn
