"""A rank of test_mem.py's job: allreduces in and out of comm.empty arrays, checked."""
import numpy as np
import zcoll

with zcoll.Comm() as comm:
    r, p = comm.rank, comm.size
    for n in (1, 100, 65536, 1 << 20):
        x = comm.empty(n, np.float32)
        x[:] = np.arange(n, dtype=np.float32) % 7 + r
        want = (np.arange(n, dtype=np.float32) % 7) * p + p * (p - 1) / 2
        out = comm.empty(n, np.float32)
        comm.allreduce(x, out=out)
        assert (out == want).all(), (n, out[:4], want[:4])
        comm.allreduce(x, out=x)
        assert (x == want).all(), n
    print(f"mem_empty ok rank {r} over {comm.transport}", flush=True)
