"""Point-to-point messages through the binding, every element checked against what the
sender is known to send (computed here from both ranks and the tag): a ring (each rank to
the next, from the previous) blocking and not, eager and rendezvous sizes, a dtype zcoll
moves as bytes (complex128); tags received in the other order than
sent; a send to oneself with its irecv posted first. Prints "OK <cases>" per rank, or
raises.

p2p.py mismatch: rank 0 sends rank 1 three elements, rank 1 expects two; each of the two
prints what it raised ("E Mismatch ...")."""
import sys

import numpy as np
import zcoll


def data(src, dst, n, dtype, tag=0):
    """What rank src sends rank dst with tag: n values that name all three, exact in dtype."""
    v = (np.arange(n) * 7 + src * 5 + dst * 3 + tag * 11) % 89 + 1
    if np.dtype(dtype).kind == "c":
        return (v + 1j * (v % 5)).astype(dtype)
    return v.astype(dtype)


with zcoll.Comm() as comm:
    r, p = comm.rank, comm.size
    nxt, prv = (r + 1) % p, (r - 1 + p) % p
    if sys.argv[1:] == ["mismatch"]:
        try:
            if r == 0:
                comm.send(np.zeros(3, np.int32), 1, tag=4)
            elif r == 1:
                comm.recv(np.zeros(2, np.int32), 0, tag=4)
        except zcoll.Error as e:
            print(f"E {type(e).__name__} {e}", flush=True)
        comm.close()  # collective: a rank that saw its error first waits for the others
        sys.exit(0)
    cases = 0
    # 200000 int32 (800 KB) goes by rendezvous, the rest eagerly.
    for dtype in (np.int32, np.float64, np.complex128):
        for n in (0, 1, 1000, 200000 if dtype == np.int32 else 3):
            # the ring, non-blocking on both sides
            out = np.full(n, -1, dtype)
            rq = comm.irecv(out, prv, tag=n % 5)
            sq = comm.isend(data(r, nxt, n, dtype, n % 5), nxt, tag=n % 5)
            assert sq.wait() is None and rq.wait() is out
            assert np.array_equal(out, data(prv, r, n, dtype, n % 5)), ("ring", dtype, n, out)
            cases += 1
            if p == 1:
                continue
            # the ring, blocking: even ranks send first, odd ones receive first (an odd
            # ring's last even rank sends to rank 0, which then has received already)
            out = np.full(n, -1, dtype)
            x = data(r, nxt, n, dtype, 7)
            if r % 2 == 0:
                comm.send(x, nxt, tag=7)
                assert comm.recv(out, prv, tag=7) is out
            else:
                comm.recv(out, prv, tag=7)
                comm.send(x, nxt, tag=7)
            assert np.array_equal(out, data(prv, r, n, dtype, 7)), ("blocking ring", dtype, n)
            cases += 1
    # tags out of order: sent 1, 2, 3; received 3, 1, 2 (2D arrays, shape kept)
    sends = [comm.isend(data(r, nxt, 6, np.float32, t).reshape(2, 3), nxt, tag=t)
             for t in (1, 2, 3)]
    for t in (3, 1, 2):
        out = np.zeros((2, 3), np.float32)
        comm.recv(out, prv, tag=t)
        assert np.array_equal(out.ravel(), data(prv, r, 6, np.float32, t)), ("tags", t, out)
    for s in sends:
        s.wait()
    cases += 1
    # one sender, one tag: in the order sent
    sends = [comm.isend(data(r, nxt, 4, np.int64, k), nxt, tag=9) for k in range(3)]
    for k in range(3):
        out = np.zeros(4, np.int64)
        comm.recv(out, prv, tag=9)
        assert np.array_equal(out, data(prv, r, 4, np.int64, k)), ("order", k, out)
    for s in sends:
        s.wait()
    cases += 1
    # to oneself: the irecv posted first, then a blocking send
    out = np.zeros(5, np.uint16)
    rq = comm.irecv(out, r, tag=2)
    comm.send(data(r, r, 5, np.uint16, 2), r, tag=2)
    assert rq.wait() is out and np.array_equal(out, data(r, r, 5, np.uint16, 2)), out
    cases += 1
    print(f"OK {cases}", flush=True)
