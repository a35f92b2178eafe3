"""Every dtype x op, blocking (into a new array, into out, in place), non-blocking and
persistent (three starts with new input each), then buffer-protocol objects; each
rank saves its results to <outdir>/rank<r>.npz for the test to check.

usage: matrix.py OUTDIR COUNT
"""
import array
import os
import sys

import numpy as np
import zcoll
from inputs import DTYPES, OPS, make, poll

outdir, n = sys.argv[1], int(sys.argv[2])
res = {}
with zcoll.Comm() as comm:
    r = comm.rank
    for dtype in DTYPES:
        for name in OPS:
            op = getattr(zcoll, name)
            x = make(r, n, dtype, name)
            res[f"new-{dtype}-{name}"] = comm.allreduce(x, op=op)
            out = np.full(n, 99, dtype)
            assert comm.allreduce(x, out=out, op=op) is out
            res[f"out-{dtype}-{name}"] = out
            y = x.copy()
            assert comm.allreduce(y, out=y, op=op) is y
            res[f"inplace-{dtype}-{name}"] = y

            req = comm.iallreduce(x, op=op)
            poll(req)
            assert req.test()  # an ended request keeps answering
            res[f"iallreduce-{dtype}-{name}"] = req.wait()
            y = x.copy()
            res[f"iallreduce_inplace-{dtype}-{name}"] = comm.iallreduce(y, out=y, op=op).wait()

            x = np.empty(n, dtype)
            out = np.empty(n, dtype)
            with comm.allreduce_init(x, out=out, op=op) as p:
                for step in range(3):
                    x[:] = make(r, n, dtype, name, step)
                    p.start()
                    assert p.wait() is out
                    res[f"persistent{step}-{dtype}-{name}"] = out.copy()
            y = np.empty(n, dtype)
            with comm.allreduce_init(y, out=y, op=op) as p:
                for step in range(3):
                    y[:] = make(r, n, dtype, name, step)
                    p.start()
                    poll(p)
                    res[f"persistent_inplace{step}-{dtype}-{name}"] = y.copy()

    # Buffer-protocol objects, reduced where they are: their own memory changes.
    for typecode, dtype in (("b", "int8"), ("B", "uint8"), ("i", "int32"), ("I", "uint32"),
                            ("q", "int64"), ("Q", "uint64"), ("f", "float32"), ("d", "float64")):
        a = array.array(typecode, make(r, n, dtype, "SUM").tobytes())
        assert comm.allreduce(a, out=a) is a
        res[f"array-{dtype}-SUM"] = np.frombuffer(a, dtype).copy()
    b = bytearray(make(r, n, "uint8", "MAX").tobytes())
    comm.allreduce(b, out=b, op=zcoll.MAX)
    res["bytearray-uint8-MAX"] = np.frombuffer(b, np.uint8).copy()
    m = memoryview(make(r, n, "float16", "SUM"))  # format 'e'
    res["memoryview-float16-SUM"] = comm.allreduce(m)
    ro = make(r, n, "int32", "MIN").tobytes()  # read-only input: bytes into an array
    res["bytes-int32-MIN"] = comm.allreduce(memoryview(ro).cast("i"), op=zcoll.MIN)
np.savez(os.path.join(outdir, f"rank{r}.npz"), **res)
print("done")
