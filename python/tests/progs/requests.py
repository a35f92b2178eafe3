"""Requests' lifetimes on 2 ranks, where rank 1 comes late so that rank 0's requests
are still in flight: what is refused then, and that nothing is lost. Prints "OK <what>"
per check; exits non-zero on the first failure.
"""
import gc
import time
import warnings

import numpy as np
import zcoll

with zcoll.Comm() as comm:
    r, n = comm.rank, 1 << 14
    x = np.full(n, r + 1, np.int64)
    want = np.full(n, comm.size * (comm.size + 1) // 2, np.int64)

    # A persistent request in flight is not freed, nor the communicator destroyed.
    out = np.zeros(n, np.int64)
    p = comm.allreduce_init(x, out=out)
    if r == 1:
        time.sleep(0.5)
    p.start()
    if r == 0:
        assert not p.test()
        try:
            p.free()
            raise AssertionError("free of a request in flight succeeded")
        except zcoll.InvalidArgument as e:
            print("OK free refused:", e)
        try:
            comm.close()
            raise AssertionError("close with a request in flight succeeded")
        except zcoll.InvalidArgument as e:
            assert not comm.closed
            print("OK close refused:", e)
    assert p.wait() is out and (out == want).all()
    p.free()
    print("OK persistent after refusals")

    # A request dropped in flight keeps its buffers: the communicator finishes it, and a
    # ResourceWarning says so.
    y = np.full(n, r + 1, np.int64)
    if r == 1:
        time.sleep(0.3)
    req = comm.iallreduce(y, out=y)
    if r == 0:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del req
            gc.collect()
        assert len(comm._orphans) == 1
        assert [w.category for w in caught] == [ResourceWarning], caught
        assert "Request dropped in flight" in str(caught[0].message), caught
    else:
        req.wait()
    z = comm.allreduce(x)  # collectives after it still pair up
    assert (z == want).all()
    comm.iallreduce(x).wait()  # a non-blocking call reaps what has ended
    assert not comm._orphans and (y == want).all()
    print("OK dropped request finished")

    # with: the request is waited for at the end of the block.
    with comm.iallreduce(x) as req:
        pass
    assert (req.result == want).all()
    print("OK with")

    # Many requests in flight at once, ended in reverse order.
    reqs = [comm.iallreduce(np.full(n, (r + 1) * k, np.int64)) for k in range(1, 6)]
    for k, req in reversed(list(enumerate(reqs, 1))):
        assert (req.wait() == want * k).all()
    print("OK five in flight")

print("OK closed", comm.closed)
