"""Allgather, reduce-scatter and reduce through the binding, every element checked
against numpy's reduction of every rank's input (computed here, not by zcoll): dtypes
int8, int32, uint64, float16, float32, float64; ops sum, min, max (and prod, avg on
float64); in place and not, blocking and not; created ops; objects. Prints
"OK <cases>" per rank, or raises."""
import numpy as np
import zcoll

DTYPES = [np.int8, np.int32, np.uint64, np.float16, np.float32, np.float64]


def value(rank, n, dtype, shape_tail=()):
    """Rank rank's input: small integers, exact in every dtype and in every sum here."""
    v = (np.arange(n * int(np.prod(shape_tail, dtype=np.int64))) * 7 + rank * 3) % 5 + 1
    return v.astype(dtype).reshape((n,) + shape_tail)


def reference(op, xs):
    s = np.stack([x.astype(np.float64) for x in xs])
    if op == zcoll.SUM:
        return s.sum(0)
    if op == zcoll.PROD:
        return s.prod(0)
    if op == zcoll.MIN:
        return s.min(0)
    if op == zcoll.MAX:
        return s.max(0)
    return s.sum(0) / len(xs)


with zcoll.Comm() as comm:
    r, p = comm.rank, comm.size
    cases = 0
    for dtype in DTYPES:
        ops = [zcoll.SUM, zcoll.MIN, zcoll.MAX]
        if dtype is np.float64:
            ops += [zcoll.PROD, zcoll.AVG]
        for n in (0, 1, 3, 1000):
            # allgather: shape (p, n, 2), rank order
            x = value(r, n, dtype, (2,))
            got = comm.allgather(x) if n % 2 else comm.iallgather(x).wait()
            want = np.stack([value(q, n, dtype, (2,)) for q in range(p)])
            assert got.shape == (p, n, 2) and got.dtype == x.dtype, (got.shape, got.dtype)
            assert np.array_equal(got, want), ("allgather", dtype, n)
            out = np.zeros((p, n, 2), dtype)
            out[r] = x
            assert comm.allgather(out[r], out=out) is out and np.array_equal(out, want)
            cases += 2
            for op in ops:
                # reduce-scatter: x.shape[0] = p * n, rank r gets block r
                xs = [value(q, p * n, dtype, (3,)) for q in range(p)]
                full = reference(op, xs).astype(dtype)
                x = xs[r].copy()
                got = comm.reduce_scatter(x, op=op) if n % 2 else comm.ireduce_scatter(x, op=op).wait()
                assert got.shape == (n, 3), got.shape
                assert np.array_equal(got, full[r * n:(r + 1) * n]), ("reduce_scatter", dtype, op, n)
                assert np.array_equal(x, xs[r]), "the input changed"
                res = comm.reduce_scatter(x, out=x[:n], op=op)  # in place: block at x's start
                assert np.array_equal(res, full[r * n:(r + 1) * n]) and np.array_equal(x[:n], res)
                # reduce to a root that moves
                root = (n + int(op)) % p
                x = value(r, n, dtype)
                want = reference(op, [value(q, n, dtype) for q in range(p)]).astype(dtype)
                got = comm.reduce(x, root, op=op) if n % 2 else comm.ireduce(x, root, op=op).wait()
                if r == root:
                    assert np.array_equal(got, want), ("reduce", dtype, op, n, got, want)
                    assert comm.reduce(x, root, out=x, op=op) is x and np.array_equal(x, want)
                else:
                    assert got is None
                    assert comm.reduce(x, root, op=op) is None
                cases += 3
    # a non-commutative created op: 2x2 matrix products in rank order
    def matmul(a, b):  # inout = in @ inout: rank order left to right
        b[:] = np.einsum("nij,njk->nik", a, b)
    mm = zcoll.op_create(matmul, commutative=False, dtype=np.dtype((np.float64, (2, 2))))
    ms = [np.array([[[1.0, q + 1], [0, 1]]] * (2 * p)) for q in range(p)]
    want = ms[0][0]
    for q in range(1, p):
        want = want @ ms[q][0]
    got = comm.reduce_scatter(ms[r].copy(), op=mm)
    assert got.shape == (2, 2, 2) and all(np.array_equal(m, want) for m in got), got
    got = comm.reduce(ms[r][:1].copy(), 0, op=mm)
    assert r or np.array_equal(got[0], want), got
    cases += 2
    # objects
    objs = comm.allgather_object({"rank": r, "pad": "x" * (r * 37)})
    assert objs == [{"rank": q, "pad": "x" * (q * 37)} for q in range(p)], objs
    got = comm.broadcast_object({"from": r, "list": list(range(r + 3))} if r == p - 1 else None,
                                root=p - 1)
    assert got == {"from": p - 1, "list": list(range(p + 2))}, got
    cases += 2
    print(f"OK {cases}", flush=True)
