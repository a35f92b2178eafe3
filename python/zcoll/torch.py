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
"""

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


def _create(store, rank, size, timeout):
    return ProcessGroupZcoll(store, rank, size, timeout)


if BACKEND.upper() not in _dist.Backend._plugins:
    _dist.Backend.register_backend(BACKEND, _create)
