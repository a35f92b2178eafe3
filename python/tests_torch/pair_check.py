"""One rank of a 2-rank torch.distributed job on the zcoll backend, started by test_pairs.py
through env:// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), faster than torchrun.

    pair_check.py mismatch    broadcast, all_gather_into_tensor and all_gather between tensors
                              of different dtypes but the same bytes raise on both ranks,
                              naming both dtypes, and the group goes on; a different shape of
                              the same dtype and count is moved, as Gloo moves it


Prints "pair R: PART passed" after each part, "pair R: N checks passed" at the end and exits
0, or raises.
"""
import os
import sys

import torch
import torch.distributed as dist

import zcoll.torch  # noqa: F401 -- registers "zcoll"

checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(f"pair {dist.get_rank()}: {what}")
    checks += 1


def raises(fn, *words):
    """fn() raises RuntimeError whose message holds every word; returns the message."""
    try:
        fn()
    except RuntimeError as e:
        msg = str(e)
        check(all(w in msg for w in words), f"the error names {words}: {msg}")
        return msg
    check(False, f"no error (expected one naming {words})")
    return None


def mismatch():
    me = dist.get_rank()
    # (rank 0's tensor, rank 1's): the same bytes, different dtypes
    cases = [(torch.ones(4), torch.zeros(4, dtype=torch.int32), "float32", "int32"),
             (torch.ones(8, dtype=torch.uint8), torch.zeros(8, dtype=torch.bool), "uint8", "bool"),
             (torch.ones(2, dtype=torch.complex64), torch.zeros(4), "complex64", "float32")]
    for mine0, mine1, name0, name1 in cases:
        t = mine0 if me == 0 else mine1

        def bcast():
            dist.broadcast(t, 0)

        def flat():
            dist.all_gather_into_tensor(torch.empty(2 * t.numel(), dtype=t.dtype), t)

        def listed():
            dist.all_gather([torch.empty_like(t) for _ in range(2)], t)
        calls = [("broadcast", bcast), ("all_gather_into_tensor", flat), ("all_gather", listed)]
        if t.is_complex() or name0 == "complex64":
            calls = calls[:1]  # torch's all_gathers pass a complex tensor as its real view
        for call, fn in calls:
            msg = raises(fn, call, name0, name1)
            # rank 0's tensor is named as the reference on rank 1, rank 1's on rank 0
            check(("rank 1's tensor is " if me == 0 else "rank 0's tensor is ") in msg, msg)
            u = torch.ones(3)
            dist.all_reduce(u)  # the group goes on: every rank refused the same call
            check(u.tolist() == [2.0] * 3, f"all_reduce after a refused {call}: {u}")
        check(t.flatten()[0].item() == (1 if me == 0 else 0), f"a refused call wrote: {t}")
    # a broadcast and an all_gather of the same tensor: the calls differ
    t = torch.ones(4)
    raises(lambda: dist.broadcast(t, 0) if me == 0 else
           dist.all_gather_into_tensor(torch.empty(8), t), "broadcast", "all_gather_into_tensor")
    # the same dtype and count, another shape: moved, as Gloo moves it (row-major order)
    src = torch.arange(4, dtype=torch.float32)
    t = src.clone().view(2, 2) if me == 0 else torch.zeros(4)
    dist.broadcast(t, 0)
    check(t.flatten().tolist() == src.tolist(), f"broadcast float32[2, 2] to [4]: {t}")
    i = (src + 10 * me).view(2, 2) if me == 0 else src + 10 * me
    out = torch.empty(8)
    dist.all_gather_into_tensor(out, i)
    check(out.tolist() == src.tolist() + (src + 10).tolist(), f"all_gather_into_tensor: {out}")
    outs = [torch.empty_like(i) for _ in range(2)]
    dist.all_gather(outs, i)
    check([o.flatten().tolist() for o in outs] == [src.tolist(), (src + 10).tolist()],
          f"all_gather of [2, 2] and [4]: {outs}")


def main():
    dist.init_process_group("zcoll")
    parts = {"mismatch": mismatch}
    for what in sys.argv[1:]:
        parts[what]()
        print(f"pair {dist.get_rank()}: {what} passed", flush=True)
    print(f"pair {dist.get_rank()}: {checks} checks passed", flush=True)


if __name__ == "__main__":
    main()
