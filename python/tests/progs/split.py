"""comm.split through the binding: parity groups ranked by descending rank, checked by an
allreduce and an allgather; color None gets None; the parent closed before the child.
Prints "OK RANK"."""
import numpy as np
import zcoll

comm = zcoll.Comm()
r, p = comm.rank, comm.size
child = comm.split(r % 2, key=-r)
members = [q for q in range(p - 1, -1, -1) if q % 2 == r % 2]
assert child.size == len(members) and members[child.rank] == r, (child.rank, child.size)
assert comm.split(None if r else 0) is None or r == 0
s = child.allreduce(np.array([r], np.int64))[0]
g = child.allgather(np.array([r], np.int32))[:, 0]
assert s == sum(members) and list(g) == members, (s, g)
comm.close()
assert child.allreduce(np.ones(3, np.float32))[0] == len(members)
child.close()
print(f"OK {r}", flush=True)
