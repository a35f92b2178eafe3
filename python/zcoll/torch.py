"""torch.distributed's backend "zcoll".

    import torch.distributed as dist
    import zcoll.torch  # registers the backend
    dist.init_process_group("zcoll")  # under torchrun, or with any init_method

Rank and size come from torch; the group's rank 0 makes a zcoll unique id and hands it to
the others through the store torch gives the backend, so nothing else is set. CPU tensors
of every dtype zcoll has (float16 and bfloat16 included), reduced where they lie:
all_reduce (SUM, PRODUCT, MIN, MAX, AVG, PREMUL_SUM), broadcast, barrier, all_gather,
all_gather_into_tensor, reduce_scatter, reduce_scatter_tensor, reduce, new_group and
async_op=True. What zcoll has no collective for (send, recv, gather, scatter, all_to_all,
the coalesced forms) raises NotImplementedError naming the call; a GPU, sparse or
non-contiguous tensor raises RuntimeError. docs/torch.md says more.

zcoll.torch.empty(*size, dtype=None, group=None) makes a tensor in memory the group's ranks
on this host can map: all_reduce reduces such tensors straight from the peers' memory, the
traffic of one memcpy per rank (tensors torch allocated are copied through shared memory).
"""

import atexit as _atexit
import math as _math
import weakref as _weakref

import torch as _torch
import torch.distributed as _dist

try:
    from . import _zcoll_torch
except ImportError as e:  # pragma: no cover - depends on how zcoll was built
    raise ImportError(
        "zcoll.torch: this zcoll was built without its torch backend, the C++ extension "
        "zcoll/_zcoll_torch*.so (building it needs libtorch-dev and pybind11-dev; cmake "
        "-DZCOLL_TORCH=ON insists on them): " + str(e)
    ) from e

ProcessGroupZcoll = _zcoll_torch.ProcessGroupZcoll

#: The name to pass to init_process_group and new_group.
BACKEND = "zcoll"


# Every group made here, until it goes: at exit their workers stop while Python still runs
# (a worker dropping the last reference to a tensor needs the GIL, which no thread can take
# once the interpreter finalizes; a group nobody destroyed would abort the process there).
_groups = _weakref.WeakSet()


def _create(store, rank, size, timeout):
    pg = ProcessGroupZcoll(store, rank, size, timeout)
    _groups.add(pg)
    return pg


@_atexit.register
def _stop_workers():
    for pg in list(_groups):
        pg._shutdown()


if BACKEND.upper() not in _dist.Backend._plugins:
    _dist.Backend.register_backend(BACKEND, _create)


def _zcoll_group(group, call):
    pg = _dist.distributed_c10d._get_default_group() if group is None else group
    if not isinstance(pg, ProcessGroupZcoll):
        raise TypeError(f"zcoll.torch.{call}: {'the default group' if group is None else group!r} "
                        f"is not a zcoll process group (init_process_group(\"zcoll\") or "
                        f"new_group(backend=\"zcoll\") makes one)")
    return pg


def empty(*size, dtype=None, group=None):
    """A CPU tensor of `size` (ints, or one sequence of them) and `dtype` (torch's default
    dtype if None) in memory that `group`'s ranks on this host can map (zcoll_mem_alloc of
    the group's communicator; the default group if None). Zero-filled. all_reduce of such
    tensors on that group -- or any view of one, contiguous -- reduces straight from every
    rank's memory (from 1 MiB up, when every rank's tensor is one); elsewhere it is an
    ordinary tensor (Gloo, other groups and every torch operation take it). Its memory goes
    back to the group when the last tensor on it is gone; one still alive when its group is
    destroyed stays mapped until the process ends. It is allocated by the group's worker
    after the collectives queued before (from a future's callback, at once)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, _torch.Size)):
        size = tuple(size[0])
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in size):
        raise ValueError(f"zcoll.torch.empty: size {size}: dimensions are ints >= 0")
    dtype = _torch.get_default_dtype() if dtype is None else dtype
    if not isinstance(dtype, _torch.dtype):
        raise TypeError(f"zcoll.torch.empty: dtype {dtype!r} is not a torch.dtype")
    probe = _torch.empty((), dtype=dtype)
    if probe.is_quantized:  # a quantized tensor needs its scale: not raw memory's to give
        raise TypeError(f"zcoll.torch.empty: dtype {dtype} is quantized; make the tensor of "
                        f"its integer dtype and quantize it")
    pg = _zcoll_group(group, "empty")
    item = probe.element_size()
    raw = pg._alloc(_math.prod(size) * item)
    return raw.view(dtype).view(size)


def empty_like(tensor, group=None):
    """zcoll.torch.empty of `tensor`'s shape and dtype (a CPU tensor's; its values are not
    copied)."""
    return empty(tuple(tensor.shape), dtype=tensor.dtype, group=group)


def stats(group=None):
    """The counters of `group`'s communicator (the default group if None), read after every
    collective queued before has ended (from a future's callback, at once): a dict of zcoll_comm_stats_t's collectives, mapped_collectives (the
    all_reduces that read every rank's tensor where it lies: zcoll.torch.empty's),
    result_pieces_placed / _copied and bytes_sent_same_host / _other_hosts."""
    return _zcoll_group(group, "stats")._stats()
