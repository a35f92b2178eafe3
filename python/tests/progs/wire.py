"""Compressed averaging through the binding: Comm(config={"WIRE_DTYPE": argv[1]}), an
AVG allreduce of float32 normal values (each rank's from its own seed), then a partial
allreduce (quorum p) of the same. Every rank checks what every rank holds (allgather):
the same bits everywhere, every element a value of the wire type, and within the bound
of docs/partial.md of the exact average, computed in float64 from every rank's inputs.
Prints "OK RANK"."""
import sys

import numpy as np
import zcoll

wire = sys.argv[1]
comm = zcoll.Comm(config={"WIRE_DTYPE": wire})
r, p = comm.rank, comm.size
n = 5000


def inputs(rank):
    return np.random.default_rng(rank).standard_normal(n).astype(np.float32)


def check(res):
    every = comm.allgather(res).reshape(p, n)
    assert all(np.array_equal(every[0].view(np.uint32), e.view(np.uint32)) for e in every)
    if wire == "bfloat16":  # a bfloat16 value is a float32 whose low 16 bits are 0
        assert not np.any(res.view(np.uint32) & 0xFFFF), res
    else:
        assert np.array_equal(res.astype(np.float16).astype(np.float32), res), res
    xs = np.array([inputs(k) for k in range(p)], np.float64)
    u = 2.0**-8 if wire == "bfloat16" else 2.0**-11
    bound = ((1 + u) ** p * (1 + 2.0**-24) ** (p + 1) - 1) * np.abs(xs).sum(0) / p
    err = np.abs(res.astype(np.float64) - xs.mean(0))
    assert np.all(err <= bound + (p + 1) * 2.0**-25), (err - bound).max()
    assert err.max() > 0  # rounded: the wire was used


x = inputs(r)
check(comm.allreduce(x, op=zcoll.AVG))
out = np.zeros(n, np.float32)
with comm.allreduce_partial_init(x, out, quorum=p, op=zcoll.AVG) as req:
    req.start()
    req.wait()
    assert req.contributors == p and req.mine
    check(out.copy())
comm.close()
print(f"OK {r}", flush=True)
