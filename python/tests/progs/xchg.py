"""Alltoall(v), allgatherv, gather(v) and scatter(v) through the binding, every element
checked against numpy's own arrangement of every rank's input (computed here, not by
zcoll): uneven and zero counts, displacements with gaps (nothing written into them: they
keep a sentinel), every root, in place and not, blocking and not, a dtype zcoll moves as
bytes (complex128). Prints "OK <cases>" per rank, or raises.

xchg.py mismatch: rank 0 sends rank 1 three elements in an alltoallv, rank 1 expects two;
each rank prints what it raised ("E Mismatch ...")."""
import sys

import numpy as np
import zcoll

SENTINEL = -7


def data(src, dst, n, dtype, salt=0):
    """What rank src sends rank dst: n values that name both (and salt), exact in dtype."""
    v = (np.arange(n) * 11 + src * 5 + dst * 3 + salt) % 97 + 1
    if np.dtype(dtype).kind == "c":
        return (v + 1j * (v % 7)).astype(dtype)
    return v.astype(dtype)


def count(i, j, salt):
    """An uneven pattern with zeros: what rank i sends rank j."""
    return (i * 3 + j * 5 + salt) % 4


def packed(counts):
    return list(np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int))


def gappy(counts):
    """Displacements in reverse rank order with a gap of 2 after each block."""
    d, at = [0] * len(counts), 0
    for q in reversed(range(len(counts))):
        d[q], at = at, at + counts[q] + 2
    return d, at


def check_gaps(buf, counts, displs, what):
    mask = np.ones(buf.size, bool)
    for c, d in zip(counts, displs):
        mask[d:d + c] = False
    assert (buf[mask] == SENTINEL).all(), (what, "a gap was written", buf)


with zcoll.Comm() as comm:
    r, p = comm.rank, comm.size
    if sys.argv[1:] == ["mismatch"]:
        sc = [2] * p
        rc = [2] * p
        if r == 0:
            sc[1] = 3
        try:
            comm.alltoallv(np.zeros(sum(sc), np.int32), sc, rc)
        except zcoll.Error as e:
            print(f"E {type(e).__name__} {e}", flush=True)
        comm.abort()
        sys.exit(0)
    cases = 0
    for dtype in (np.int32, np.float64, np.complex128):
        for n in (0, 1, 3):
            # alltoall: block j of x to rank j, in rank order
            x = np.concatenate([data(r, j, 2 * n, dtype) for j in range(p)]).reshape(p * n, 2)
            want = np.concatenate([data(i, r, 2 * n, dtype) for i in range(p)]).reshape(p * n, 2)
            got = comm.alltoall(x) if n != 1 else comm.ialltoall(x).wait()
            assert got.shape == x.shape and got.dtype == x.dtype, (got.shape, got.dtype)
            assert np.array_equal(got, want), ("alltoall", dtype, n, got, want)
            y = x.copy()
            assert comm.alltoall(y, out=y) is y and np.array_equal(y, want), "alltoall in place"
            cases += 2
        for salt in (0, 1):
            # alltoallv: uneven counts with zeros, packed and with gaps
            sc = [count(r, j, salt) for j in range(p)]
            rc = [count(i, r, salt) for i in range(p)]
            x = np.concatenate([data(r, j, sc[j], dtype, salt) for j in range(p)])
            want = np.concatenate([data(i, r, rc[i], dtype, salt) for i in range(p)])
            got = comm.alltoallv(x, sc, rc) if salt else comm.ialltoallv(x, sc, rc).wait()
            assert np.array_equal(got, want), ("alltoallv", dtype, salt, got, want)
            sd, send_len = gappy(sc)
            rd, recv_len = gappy(rc)
            xs = np.full(send_len, SENTINEL, dtype)
            for j in range(p):
                xs[sd[j]:sd[j] + sc[j]] = data(r, j, sc[j], dtype, salt)
            out = np.full(recv_len + 1, SENTINEL, dtype)
            res = comm.alltoallv(xs, sc, rc, out=out, sdispls=sd, rdispls=rd)
            assert res is out
            for i in range(p):
                assert np.array_equal(out[rd[i]:rd[i] + rc[i]], data(i, r, rc[i], dtype, salt))
            check_gaps(out, rc, rd, "alltoallv")
            # in place: the same counts both ways (symmetric pattern)
            cc = [count(min(r, j), max(r, j), salt) for j in range(p)]
            y = np.concatenate([data(r, j, cc[j], dtype) for j in range(p)])
            assert comm.alltoallv(y, cc, cc, out=y) is y
            assert np.array_equal(y, np.concatenate([data(i, r, cc[i], dtype) for i in range(p)]))
            # allgatherv: rank q's block of (q + salt) % 3 elements
            counts = [(q + salt) % 3 for q in range(p)]
            mine = data(r, 0, counts[r], dtype, salt)
            want = np.concatenate([data(q, 0, counts[q], dtype, salt) for q in range(p)])
            got = comm.allgatherv(mine, counts) if salt else comm.iallgatherv(mine, counts).wait()
            assert np.array_equal(got, want), ("allgatherv", dtype, got, want)
            d, length = gappy(counts)
            out = np.full(length, SENTINEL, dtype)
            out[d[r]:d[r] + counts[r]] = mine
            comm.allgatherv(out[d[r]:d[r] + counts[r]], counts, out=out, displs=d)  # in place
            for q in range(p):
                assert np.array_equal(out[d[q]:d[q] + counts[q]], data(q, 0, counts[q], dtype, salt))
            check_gaps(out, counts, d, "allgatherv")
            cases += 5
        for root in range(p):
            # gather and scatter: every root, blocking and not, in place at the root
            x = data(r, root, 6, dtype).reshape(3, 2)
            got = comm.gather(x, root) if root % 2 else comm.igather(x, root).wait()
            if r == root:
                assert np.array_equal(got, np.stack([data(q, root, 6, dtype).reshape(3, 2)
                                                     for q in range(p)])), ("gather", root)
                out = np.zeros((p, 3, 2), dtype)
                out[root] = x
                assert comm.gather(out[root], root, out=out) is out
                assert np.array_equal(out, got)
            else:
                assert got is None
                assert comm.gather(x, root) is None
            full = np.concatenate([data(root, q, 4, dtype) for q in range(p)]).reshape(2 * p, 2)
            mine = full[2 * r:2 * r + 2]
            if r == root:
                got = comm.scatter(full, root) if root % 2 else comm.iscatter(full, root).wait()
                assert np.array_equal(got, mine), ("scatter", root, got)
                y = full.copy()
                assert np.array_equal(comm.scatter(y, root, out=y[2 * r:2 * r + 2]), mine)
                assert np.array_equal(y, full)
            else:
                like = np.empty_like(full)  # a template: only its shape and dtype count
                got = comm.scatter(like, root) if root % 2 else comm.iscatter(None, root, out=np.empty((2, 2), dtype)).wait()
                assert np.array_equal(got, mine), ("scatter", root, got)
                out = np.empty(4, dtype)
                assert comm.scatter(None, root, out=out) is out and np.array_equal(out, mine.ravel())
            # gatherv and scatterv: uneven counts with zeros, packed and with gaps
            counts = [count(q, root, 2) for q in range(p)]
            x = data(r, root, counts[r], dtype, 1)
            got = comm.gatherv(x, counts, root) if root % 2 else comm.igatherv(x, counts if r == root else None, root).wait()
            if r == root:
                assert np.array_equal(got, np.concatenate([data(q, root, counts[q], dtype, 1)
                                                           for q in range(p)])), ("gatherv", root)
                d, length = gappy(counts)
                out = np.full(length, SENTINEL, dtype)
                out[d[r]:d[r] + counts[r]] = x
                comm.gatherv(out[d[r]:d[r] + counts[r]], counts, root, out=out, displs=d)
                for q in range(p):
                    assert np.array_equal(out[d[q]:d[q] + counts[q]], data(q, root, counts[q], dtype, 1))
                check_gaps(out, counts, d, "gatherv")
            else:
                assert got is None
                assert comm.gatherv(x, None, root) is None
            d, length = gappy(counts)
            if r == root:
                xs = np.full(length, SENTINEL, dtype)
                for q in range(p):
                    xs[d[q]:d[q] + counts[q]] = data(root, q, counts[q], dtype, 3)
                before = xs.copy()
                got = comm.scatterv(xs, counts, root, displs=d) if root % 2 else comm.iscatterv(xs, counts, root, displs=d).wait()
                assert np.array_equal(got, data(root, r, counts[r], dtype, 3)), ("scatterv", root)
                view = xs[d[r]:d[r] + counts[r]]
                assert np.array_equal(comm.scatterv(xs, counts, root, out=view, displs=d), got)
                assert np.array_equal(xs, before), "scatterv changed the root's x"
            else:
                want = data(root, r, counts[r], dtype, 3)
                got = comm.scatterv(np.empty(0, dtype), counts, root) if root % 2 else comm.iscatterv(None, None, root, out=np.empty(counts[r], dtype)).wait()
                assert np.array_equal(got, want), ("scatterv", root, got, want)
                assert np.array_equal(comm.scatterv(None, None, root, out=np.empty(counts[r], dtype)), want)
            cases += 6
    print(f"OK {cases}", flush=True)
