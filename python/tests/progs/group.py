"""`with comm.group():` through the binding, every element checked against values computed
here from the ranks alone: a ring where every rank sends first (blocking: without the group
it would never end), eager and rendezvous sizes; 50 small allreduces (fused by the library)
whose inputs are temporaries dropped at once; a mix of collectives, i-forms whose requests
are waited for after the block, and a nested block. Prints "OK <cases>" per rank.

group.py mismatch: in a group rank 0 sends rank 1 three elements, rank 1 expects two; each
prints what the block's end raised ("E Mismatch ...").
group.py raise: rank 0's block raises before its last call; it prints its own exception
("E RuntimeError ..."), every other rank what its block's end raised."""
import sys

import numpy as np
import zcoll


def data(src, dst, n, dtype, tag=0):
    """What rank src sends rank dst with tag: n values that name all three, exact in dtype."""
    return ((np.arange(n) * 7 + src * 5 + dst * 3 + tag * 11) % 89 + 1).astype(dtype)


def said(e):
    print(f"E {type(e).__name__} {e}", flush=True)


with zcoll.Comm() as comm:
    r, p = comm.rank, comm.size
    nxt, prv = (r + 1) % p, (r - 1 + p) % p
    if sys.argv[1:] == ["mismatch"]:
        try:
            with comm.group():
                if r == 0:
                    comm.send(np.zeros(3, np.int32), 1, tag=4)
                elif r == 1:
                    comm.recv(np.zeros(2, np.int32), 0, tag=4)
        except zcoll.Error as e:
            said(e)
        comm.close()  # collective: a rank that saw its error first waits for the others
        sys.exit(0)
    if sys.argv[1:] == ["raise"]:
        try:
            with comm.group():
                comm.allreduce(np.ones(4, np.float32))
                if r == 0:
                    raise RuntimeError("the block failed")
                comm.barrier()
        except (zcoll.Error, RuntimeError) as e:
            said(e)
        comm.close()  # collective: a rank that saw its error first waits for the others
        sys.exit(0)
    cases = 0
    # Every rank sends first, then receives: a deadlock outside a group (sends complete when
    # matched), fine inside one. 200000 int32 go by rendezvous.
    for n in (0, 5, 1000, 200000):
        outs = [np.full(n, -1, np.int32) for _ in range(2)]
        with comm.group():
            for t in range(2):
                comm.send(data(r, nxt, n, np.int32, t), nxt, tag=t)
            for t in (1, 0):
                assert comm.recv(outs[t], prv, tag=t) is outs[t]
        for t in range(2):
            assert np.array_equal(outs[t], data(prv, r, n, np.int32, t)), ("ring", n, t)
        cases += 1
    # 50 small allreduces, fused by the library: inputs are temporaries nobody holds but
    # the group; results into arrays, half in place.
    ranks = np.arange(p)
    res = [np.full(4 + k % 3, -1.0) for k in range(50)]
    with comm.group():
        for k, out in enumerate(res):
            if k % 2:
                out[:] = data(r, 0, out.size, np.float64, k)
                comm.allreduce(out, out=out)
            else:
                comm.allreduce(data(r, 0, out.size, np.float64, k), out=out)
    for k, out in enumerate(res):
        want = sum(data(q, 0, out.size, np.float64, k) for q in ranks)
        assert np.array_equal(out, want), ("fused allreduce", k, out, want)
    cases += 1
    # A mix: allreduce (out=None: the array returned is filled at the end), broadcast,
    # allgather, alltoall, an i-form and a nested block.
    b = data(0, 0, 9, np.int64, 3) if r == 0 else np.zeros(9, np.int64)
    with comm.group():
        s = comm.allreduce(np.full(3, r + 1, np.int32))
        comm.broadcast(b, root=0)
        g = comm.allgather(data(r, 0, 2, np.uint8, 5))
        a2a = comm.alltoall(np.stack([data(r, d, 3, np.float32, 6) for d in range(p)]))
        rq = comm.iallreduce(np.full(2, 2.0 ** r))
        try:
            rq.wait()
            raise AssertionError("a request made in the open group was waited for")
        except zcoll.InvalidArgument:
            pass
        with comm.group():  # nested: issued with the outer block
            inner = comm.allreduce(np.full(5, r, np.int64))
    assert np.array_equal(s, np.full(3, p * (p + 1) // 2)), s
    assert np.array_equal(b, data(0, 0, 9, np.int64, 3)), b
    assert np.array_equal(g, np.stack([data(q, 0, 2, np.uint8, 5) for q in ranks])), g
    assert np.array_equal(a2a, np.stack([data(q, r, 3, np.float32, 6) for q in ranks])), a2a
    assert np.array_equal(rq.wait(), np.full(2, float(2 ** p - 1))), rq.result
    assert np.array_equal(inner, np.full(5, p * (p - 1) // 2)), inner
    cases += 1
    # An empty block, and the communicator still works after every case.
    with comm.group():
        pass
    assert np.array_equal(comm.allreduce(np.ones(2)), np.full(2, float(p)))
    cases += 1
    print(f"OK {cases}", flush=True)
