"""A 2-rank allreduce through an installed Python package (tests/install_test.sh and
tests/deb_test.sh): the package and the library it loads must both lie under PREFIX.

    zcoll_run -np 2 python3 installed_allreduce.py PREFIX
"""
import os
import sys

import numpy as np
import zcoll

prefix = os.path.realpath(sys.argv[1])
assert os.path.realpath(zcoll.__file__).startswith(prefix + "/"), zcoll.__file__
assert os.path.realpath(zcoll._lib.path).startswith(prefix + "/"), zcoll._lib.path
with zcoll.Comm() as comm:
    x = np.arange(1 << 16, dtype=np.float32) * (comm.rank + 1)
    comm.allreduce(x, out=x, op=zcoll.SUM)
    want = np.arange(1 << 16, dtype=np.float32) * (comm.size * (comm.size + 1) // 2)
    assert (x == want).all(), "wrong result"
    print(f"rank {comm.rank}: python allreduce OK through {zcoll._lib.path}")
