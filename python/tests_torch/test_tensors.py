"""torch tensors in zcoll's own API (not the backend): every Comm method takes them where
they lie, bfloat16 included without ml_dtypes, and a uint16 array reduces as bfloat16 with
dtype="bfloat16". Two ranks as two threads of this process, from a unique id.
"""
import os
import threading

import numpy as np
import pytest

REQUIRED = os.environ.get("CI") == "true" or os.environ.get("ZCOLL_TEST_REQUIRE_TORCH") == "1"
torch = pytest.importorskip("torch") if not REQUIRED else __import__("torch")

import zcoll  # noqa: E402


def two_ranks(body):
    """body(comm) on ranks 0 and 1, each a thread; returns their results in rank order."""
    uid = zcoll.get_unique_id()
    out, errors = [None, None], []

    def rank(r):
        try:
            with zcoll.Comm(unique_id=uid, rank=r, size=2) as comm:
                out[r] = body(comm)
        except BaseException as e:  # noqa: BLE001 -- reported below
            errors.append(e)
    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    if errors:
        raise errors[0]
    return out


def values(rank, n, dtype):
    return (torch.arange(n) % 7 + 1 + rank).to(dtype)  # small integers: exact in bfloat16


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.int32,
                                   torch.int64, torch.uint8])
def test_every_method_takes_tensors_where_they_lie(dtype):
    n = 1001

    def body(comm):
        r = comm.rank
        t = values(r, n, dtype)
        comm.allreduce(t, out=t)                                    # in place
        got = {"allreduce": t.clone()}
        t = values(r, n, dtype)
        comm.allreduce(t, out=t, op=zcoll.MAX)
        got["max"] = t.clone()
        b = values(r, n, dtype)
        comm.broadcast(b, root=1)
        got["broadcast"] = b
        big = values(r, 2 * n, dtype)
        shard = torch.empty(n, dtype=dtype)
        comm.reduce_scatter(big, out=shard)
        got["reduce_scatter"] = shard
        everyone = torch.empty(2 * n, dtype=dtype)
        comm.allgather(values(r, n, dtype), out=everyone)
        got["allgather"] = everyone
        t = values(r, n, dtype)
        comm.reduce(t, root=0, out=t if r == 0 else None)
        got["reduce"] = t
        return got

    res = two_ranks(body)
    v0, v1 = values(0, n, dtype), values(1, n, dtype)
    total = (v0.to(torch.float64) + v1.to(torch.float64)).to(dtype)
    b0, b1 = values(0, 2 * n, dtype), values(1, 2 * n, dtype)
    rs = (b0.to(torch.float64) + b1.to(torch.float64)).to(dtype)
    for r in (0, 1):
        g = res[r]
        assert torch.equal(g["allreduce"], total), (r, "allreduce")
        assert torch.equal(g["max"], torch.maximum(v0, v1)), (r, "max")
        assert torch.equal(g["broadcast"], v1), (r, "broadcast")
        assert torch.equal(g["reduce_scatter"], rs[r * n:(r + 1) * n]), (r, "reduce_scatter")
        assert torch.equal(g["allgather"], torch.cat([v0, v1])), (r, "allgather")
    assert torch.equal(res[0]["reduce"], total)
    assert torch.equal(res[1]["reduce"], v1)  # a non-root's input is only read


def test_uint16_bits_as_bfloat16():
    n = 513

    def body(comm):
        bits = values(comm.rank, n, torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
        res = comm.allreduce(bits, dtype="bfloat16")                 # a new uint16 array
        avg = bits.copy()
        comm.allreduce(avg, out=avg, op=zcoll.AVG, dtype=zcoll.DType.BFLOAT16)
        r = torch.from_numpy(bits.copy().view(np.int16)).view(torch.bfloat16)
        comm.reduce(r, root=0, out=r if comm.rank == 0 else None)
        # The torch tensor again, out=None: its bits come back as uint16.
        t = values(comm.rank, n, torch.bfloat16)
        back = comm.allreduce(t)
        return res, avg, r, back

    res = two_ranks(body)
    total = (values(0, n, torch.float32) + values(1, n, torch.float32)).to(torch.bfloat16)
    avg = ((values(0, n, torch.float32) + values(1, n, torch.float32)) / 2).to(torch.bfloat16)
    as_bf16 = lambda a: torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)  # noqa: E731
    for r in (0, 1):
        s, a, _, back = res[r]
        assert s.dtype == np.uint16 and torch.equal(as_bf16(s), total)
        assert torch.equal(as_bf16(a), avg)
        assert back.dtype == np.uint16 and torch.equal(as_bf16(back), total)
    assert torch.equal(res[0][2], total)


def test_refusals():
    with zcoll.Comm(unique_id=zcoll.get_unique_id(), rank=0, size=1) as comm:
        with pytest.raises(ValueError, match="not C-contiguous"):
            comm.allreduce(torch.ones(4, 4, dtype=torch.bfloat16)[:, 1])
        with pytest.raises(ValueError, match="not C-contiguous"):
            comm.allreduce(torch.ones(4, 4)[:, 1])
        with pytest.raises(TypeError, match="reinterprets elements of 2 bytes"):
            comm.allreduce(np.ones(4, np.float32), dtype="bfloat16")
        with pytest.raises(TypeError, match="not a zcoll dtype"):
            comm.allreduce(np.ones(4, np.uint16), dtype="bf16")
        # what was refused changed nothing: the communicator still works
        x = torch.ones(3, dtype=torch.bfloat16)
        comm.allreduce(x, out=x)
        assert torch.equal(x, torch.ones(3, dtype=torch.bfloat16))
