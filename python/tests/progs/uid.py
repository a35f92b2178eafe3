"""A job from a unique id moved through a file: `uid.py DIR RANK SIZE`; rank 0 makes the
id (zcoll.get_unique_id) into DIR/id, the others wait for it. The environment's
ZCOLL_RANK and ZCOLL_SIZE, if any, are not this process's rank and size. Prints
"OK RANK SIZE" after an allreduce and an allgather are checked."""
import os
import sys
import time

import numpy as np
import zcoll

d, rank, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
path = os.path.join(d, "id")
if rank == 0:
    with open(path + ".tmp", "wb") as f:
        f.write(zcoll.get_unique_id())
    os.rename(path + ".tmp", path)
deadline = time.monotonic() + 30
while not os.path.exists(path):
    assert time.monotonic() < deadline, "no id"
    time.sleep(0.01)
with open(path, "rb") as f:
    uid = f.read()
with zcoll.Comm(unique_id=uid, rank=rank, size=size) as comm:
    assert (comm.rank, comm.size) == (rank, size)
    s = comm.allreduce(np.array([rank], np.int64))
    g = comm.allgather(np.array([rank * 2 + 1], np.int32))
    assert s[0] == size * (size - 1) // 2 and list(g[:, 0]) == [q * 2 + 1 for q in range(size)]
    print(f"OK {rank} {size}", flush=True)
