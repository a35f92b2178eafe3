"""One rank of a torch.distributed job on the zcoll backend (test_torch.py starts it).

    torch_check.py collectives   every collective x dtype x op against Gloo's result where Gloo
                                 has it, and against a reference computed here from every
                                 rank's input (each rank's input is a function of its rank);
                                 new_group, async_op, unsupported calls and bad tensors;
                                 zcoll.torch.empty's tensors (read where they lie, freed)
    torch_check.py training      DDP (20 steps), PeriodicModelAverager, the post-local-SGD hook
                                 and ZeroRedundancyOptimizer, each run once on zcoll and once on
                                 Gloo from the same start: parameters equal within 1e-6
    torch_check.py die           rank 2 is killed in the middle of the third all_reduce's
                                 step; the others must fail, not hang

Prints "rank R: N checks passed" and exits 0, or raises.
"""
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

import zcoll.torch  # registers "zcoll"

R = ReduceOp = dist.ReduceOp
checks = 0


def check(cond, what):
    global checks
    if not cond:
        who = dist.get_rank() if dist.is_initialized() else os.environ.get("RANK")
        raise AssertionError(f"rank {who}: {what}")
    checks += 1


def close(a, b, what, rtol=0.0, atol=0.0):
    ok = a.shape == b.shape and a.dtype == b.dtype and torch.allclose(
        a.to(torch.float64) if not a.is_complex() else a.to(torch.complex128),
        b.to(torch.float64) if not b.is_complex() else b.to(torch.complex128),
        rtol=rtol, atol=atol)
    check(ok, f"{what}: got {a.flatten()[:8].tolist()}..., expected {b.flatten()[:8].tolist()}...")


DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int32, torch.int64, torch.bool, torch.complex64]
FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64)


def rank_input(rank, n, dtype):
    """Small values, exact in every dtype and in their sums and products over 3 ranks."""
    i = torch.arange(n, dtype=torch.int64)
    if dtype == torch.bool:
        return ((i + rank) % 3 == 0)
    v = ((i * 7 + rank * 3) % 5) + 1  # 1..5
    if dtype == torch.complex64:
        return torch.complex(v.float(), (v - 3).float())
    return v.to(dtype)


def torch_op(op, factor):
    """The ReduceOp of a name: PREMUL_SUM with this rank's factor."""
    return dist._make_nccl_premul_sum(factor) if op == "PREMUL_SUM" else getattr(R, op)


def reference(inputs, op, dtype, factors=None):
    """op over the ranks' inputs, computed in float64 / complex128 / int64 and cast back."""
    if dtype == torch.bool:
        acc = torch.stack(inputs)
        return (acc.any(0) if op in ("SUM", "MAX") else acc.all(0))
    wide = torch.complex128 if dtype.is_complex else (
        torch.float64 if dtype.is_floating_point else torch.int64)
    xs = [x.to(wide) for x in inputs]
    if op == "SUM":
        out = sum(xs)
    elif op == "PRODUCT":
        out = xs[0].clone()
        for x in xs[1:]:
            out = out * x
    elif op == "MIN":
        out = torch.stack(xs).min(0).values
    elif op == "MAX":
        out = torch.stack(xs).max(0).values
    elif op == "AVG":
        out = sum(xs) / len(xs)
        if not (dtype.is_floating_point or dtype.is_complex):
            out = torch.trunc(out)
    else:  # PREMUL_SUM, each rank's factor
        out = sum(x * f for x, f in zip(xs, factors))
    return out.to(dtype)


def ops_for(dtype):
    if dtype == torch.bool:
        return ["SUM", "PRODUCT", "MIN", "MAX"]
    if dtype.is_complex:
        return ["SUM", "AVG", "PREMUL_SUM"]
    if dtype in FLOATS:
        return ["SUM", "PRODUCT", "MIN", "MAX", "AVG", "PREMUL_SUM"]
    return ["SUM", "PRODUCT", "MIN", "MAX", "AVG"]


def gloo_has(dtype, op):
    """What Debian's Gloo (torch 1.13) reduces, as probed here: no bfloat16 and no bool at all,
    no AVG or PREMUL_SUM, complex SUM only (all_reduce; reduce: no complex)."""
    if dtype in (torch.bfloat16, torch.bool) or op in ("AVG", "PREMUL_SUM"):
        return False
    return op == "SUM" or not dtype.is_complex


def tol(dtype):
    return 1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-6


def collectives(gloo):
    me, p = dist.get_rank(), dist.get_world_size()
    n = 37
    for dtype in DTYPES:
        allin = [rank_input(r, n, dtype) for r in range(p)]
        for op in ops_for(dtype):
            factors = [0.5 * (r + 1) for r in range(p)]
            zop = torch_op(op, factors[me])
            t = allin[me].clone()
            dist.all_reduce(t, op=zop)
            want = reference(allin, op, dtype, factors)
            close(t, want, f"all_reduce {dtype} {op}", rtol=tol(dtype))
            if gloo_has(dtype, op):
                g = allin[me].clone()
                dist.all_reduce(g, op=zop, group=gloo)
                close(t, g, f"all_reduce {dtype} {op} against gloo", rtol=tol(dtype))
            # reduce to each root: the root has the result, the others' input is untouched
            for root in range(p):
                t = allin[me].clone()
                dist.reduce(t, root, op=zop)
                close(t, want if me == root else allin[me], f"reduce {dtype} {op} root {root}",
                      rtol=tol(dtype))
                if gloo_has(dtype, op) and not dtype.is_complex:  # its reduce has no complex
                    g = allin[me].clone()
                    dist.reduce(g, root, op=zop, group=gloo)
                    if me == root:
                        close(t, g, f"reduce {dtype} {op} root {root} against gloo",
                              rtol=tol(dtype))
            # reduce_scatter_tensor and the list form
            big = [torch.cat([rank_input(r + k, n, dtype) for k in range(p)]) for r in range(p)]
            out = torch.empty(n, dtype=dtype)
            dist.reduce_scatter_tensor(out, big[me].clone(), op=zop)
            blocks = [b[me * n:(me + 1) * n] for b in big]
            want_rs = reference(blocks, op, dtype, factors)
            close(out, want_rs, f"reduce_scatter_tensor {dtype} {op}", rtol=tol(dtype))
            out2 = torch.empty(n, dtype=dtype)
            dist.reduce_scatter(out2, list(big[me].clone().chunk(p)), op=zop)
            close(out2, want_rs, f"reduce_scatter {dtype} {op}", rtol=tol(dtype))
        # broadcast from each root, all_gather (list, flat, flat in place)
        for root in range(p):
            t = allin[me].clone()
            dist.broadcast(t, root)
            close(t, allin[root], f"broadcast {dtype} root {root}")
            if gloo_has(dtype, "MAX"):  # Gloo moves what it reduces, complex aside
                g = allin[me].clone()
                dist.broadcast(g, root, group=gloo)
                close(t, g, f"broadcast {dtype} root {root} against gloo")
        outs = [torch.empty(n, dtype=dtype) for _ in range(p)]
        dist.all_gather(outs, allin[me])
        for r in range(p):
            close(outs[r], allin[r], f"all_gather {dtype} block {r}")
        if gloo_has(dtype, "MAX"):
            gouts = [torch.empty(n, dtype=dtype) for _ in range(p)]
            dist.all_gather(gouts, allin[me], group=gloo)
            close(torch.cat(outs), torch.cat(gouts), f"all_gather {dtype} against gloo")
        flat = torch.empty(p * n, dtype=dtype)
        dist.all_gather_into_tensor(flat, allin[me])
        close(flat, torch.cat(allin), f"all_gather_into_tensor {dtype}")
        flat = torch.zeros(p * n, dtype=dtype)
        flat[me * n:(me + 1) * n] = allin[me]
        dist.all_gather_into_tensor(flat, flat[me * n:(me + 1) * n])
        close(flat, torch.cat(allin), f"all_gather_into_tensor in place {dtype}")
    dist.barrier()

    # async_op: several in flight, waited in reverse; and a future's value
    ts = [torch.full((1000,), float(me + k)) for k in range(4)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    for w in reversed(works):
        w.wait()
    for k, t in enumerate(ts):
        close(t, torch.full((1000,), float(sum(r + k for r in range(p)))), f"async all_reduce {k}")
    fut = dist.all_reduce(torch.ones(10), async_op=True).get_future()
    close(fut.wait()[0], torch.full((10,), float(p)), "the future's value")

    # new_group: members only form a communicator; rank 1 is not in it
    sub = dist.new_group([0, 2], backend="zcoll")
    if me in (0, 2):
        t = torch.full((5,), float(me))
        dist.all_reduce(t, group=sub)
        close(t, torch.full((5,), 2.0), "all_reduce in new_group([0, 2])")
        b = torch.full((3,), float(me))
        dist.broadcast(b, 2, group=sub)
        close(b, torch.full((3,), 2.0), "broadcast from global rank 2 in the subgroup")
    else:
        check(sub == dist.GroupMember.NON_GROUP_MEMBER, "rank 1 is not in new_group([0, 2])")

    # what zcoll cannot do: an error naming the call, and the group still works afterwards
    for name, call in [("send", lambda: dist.send(torch.ones(1), (me + 1) % p)),
                       ("recv", lambda: dist.recv(torch.ones(1), (me + 1) % p)),
                       ("gather", lambda: dist.gather(torch.ones(1), None if me else
                                                      [torch.ones(1) for _ in range(p)], 0)),
                       ("all_to_all_single", lambda: dist.all_to_all_single(torch.ones(p),
                                                                            torch.ones(p)))]:
        try:
            call()
            check(False, f"{name} succeeded")
        except NotImplementedError as e:
            check(name in str(e) and "zcoll" in str(e), f"{name}'s error: {e}")
    for what, bad in [("non-contiguous", torch.ones(3, 3)[:, 1]),
                      ("non-contiguous", torch.ones(3).expand(3, 3))]:
        try:
            dist.all_reduce(bad)
            check(False, f"all_reduce of a {what} tensor succeeded")
        except RuntimeError as e:
            check(what in str(e) and "all_reduce" in str(e), f"the {what} tensor's error: {e}")
    try:
        dist.all_reduce(torch.ones(3, dtype=torch.int16))
        check(False, "an int16 all_reduce succeeded")
    except RuntimeError as e:
        check("Short" in str(e) or "int16" in str(e), f"int16's error: {e}")
    try:
        dist.all_reduce(torch.ones(3, dtype=torch.int32), op=R.BAND)
        check(False, "a BAND all_reduce succeeded")
    except RuntimeError as e:
        check("BAND" in str(e), f"BAND's error: {e}")
    t = torch.ones(4)
    dist.all_reduce(t)
    close(t, torch.full((4,), float(p)), "all_reduce after the refused calls")
    zcoll_memory(gloo, sub)


def mapping_of(addr):
    """The /proc/self/maps line holding addr: (start, inode), or None."""
    with open("/proc/self/maps") as f:
        for line in f:
            span, _, _, _, inode = line.split()[:5]
            lo, hi = (int(x, 16) for x in span.split("-"))
            if lo <= addr < hi:
                return lo, inode
    return None


def zcoll_memory(gloo, sub):
    """zcoll.torch.empty: tensors in memory the group's ranks can map, reduced where they lie."""
    me, p = dist.get_rank(), dist.get_world_size()
    zt = zcoll.torch
    for size, dtype in [((0,), torch.float32), ((5,), torch.int64), ((2, 3), torch.bfloat16),
                        ((4, 0, 2), torch.float16)]:
        t = zt.empty(*size, dtype=dtype)
        check(t.shape == size and t.dtype == dtype and t.is_contiguous() and
              bool((t == 0).all()), f"empty{size} {dtype}: {t.shape} {t.dtype}")
    check(zt.empty((3, 4)).shape == (3, 4), "empty of a tuple")
    check(zt.empty_like(torch.ones(2, 2, dtype=torch.float64)).dtype == torch.float64,
          "empty_like's dtype")
    for bad, err in [(lambda: zt.empty(-1), ValueError), (lambda: zt.empty(2.5), ValueError),
                     (lambda: zt.empty(3, dtype="float32"), TypeError),
                     (lambda: zt.empty(3, dtype=torch.qint8), TypeError),
                     (lambda: zt.empty(3, group=gloo), TypeError)]:
        try:
            bad()
            check(False, f"{err.__name__} expected")
        except err as e:
            check("zcoll.torch.empty" in str(e), f"empty's refusal names itself: {e}")

    # 1 MiB and up: every rank's tensor read where it lies (the counter says so), in place
    n = 3 << 18  # 1.5 MiB of bfloat16
    for dtype, op in [(torch.float32, "SUM"), (torch.bfloat16, "MAX"), (torch.int32, "PRODUCT"),
                      (torch.float64, "AVG")]:
        allin = [rank_input(r, n, dtype) for r in range(p)]
        t = zt.empty(n, dtype=dtype)
        t.copy_(allin[me])
        before = zt.stats()["mapped_collectives"]
        dist.all_reduce(t, op=torch_op(op, 1.0))
        close(t, reference(allin, op, dtype), f"all_reduce of zcoll memory {dtype} {op}",
              rtol=tol(dtype))
        check(zt.stats()["mapped_collectives"] == before + 1, f"{dtype} {op}: not read in place")
    # a view at an offset of a larger tensor; then Gloo on the same tensor
    big = zt.empty(2 * n + 3)
    v = big[3:3 + 2 * n]
    v.copy_(rank_input(me, 2 * n, torch.float32))
    before = zt.stats()["mapped_collectives"]
    dist.all_reduce(v)
    want = reference([rank_input(r, 2 * n, torch.float32) for r in range(p)], "SUM", torch.float32)
    close(v, want, "all_reduce of a view of zcoll memory")
    check(zt.stats()["mapped_collectives"] == before + 1, "the view was not read in place")
    v.copy_(rank_input(me, 2 * n, torch.float32))
    dist.all_reduce(v, group=gloo)
    close(v, want, "gloo's all_reduce of zcoll memory")
    # one rank's tensor is torch's: every rank moves it (the same answer everywhere), right
    t = torch.empty(n) if me == 1 else zt.empty(n)
    t.copy_(rank_input(me, n, torch.float32))
    before = zt.stats()["mapped_collectives"]
    dist.all_reduce(t)
    close(t, reference([rank_input(r, n, torch.float32) for r in range(p)], "SUM", torch.float32),
          "all_reduce with one rank's tensor in torch's memory")
    check(zt.stats()["mapped_collectives"] == before, "a torch tensor was taken as mapped")
    # a subgroup's own memory
    if sub != dist.GroupMember.NON_GROUP_MEMBER:
        t = zt.empty(n, group=sub)
        t.fill_(me)
        before = zt.stats(sub)["mapped_collectives"]
        dist.all_reduce(t, group=sub)
        close(t, torch.full((n,), 2.0), "all_reduce of the subgroup's memory")
        check(zt.stats(sub)["mapped_collectives"] == before + 1, "the subgroup's: not in place")
    # from a future's callback, which runs on the group's worker: at once, not queued
    # behind the worker itself (that would wait forever)
    fut = dist.all_reduce(torch.ones(4), async_op=True).get_future()
    got = fut.then(lambda f: (zt.empty(16, dtype=torch.int32), zt.stats())).wait()
    check(got[0].shape == (16,) and got[0].dtype == torch.int32 and
          got[1]["collectives"] >= 1, f"empty and stats in a callback: {got}")
    del got
    # memory goes back when the last tensor on it goes (a free is queued before the barrier)
    t = zt.empty(1 << 20)
    where = mapping_of(t.data_ptr())
    check(where is not None, "a zcoll tensor's memory is mapped")
    view = t[10:20]
    del t
    dist.barrier()
    check(mapping_of(view.data_ptr()) == where, "a view keeps the memory")
    del view
    dist.barrier()
    check(mapping_of(where[0]) != where, "the memory was not returned")


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def batches(me, steps):
    g = torch.Generator().manual_seed(1000 + me)
    return [(torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)) for _ in range(steps)]


def same_params(a, b, what):
    for (name, x), y in zip(a.named_parameters(), b.parameters()):
        close(x.detach(), y.detach(), f"{what}: {name}", rtol=1e-6, atol=1e-7)


def train(model, opt, data, after_step=None):
    for step, (x, y) in enumerate(data):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        if after_step:
            after_step(step)


def training(gloo):
    from torch.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook import (
        PostLocalSGDState, post_localSGD_hook)
    from torch.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel as DDP

    me = dist.get_rank()
    data = batches(me, 20)

    def ddp(pg):
        torch.manual_seed(7 + me)  # different on every rank: DDP's broadcast must even it out
        m = DDP(mlp(), process_group=pg)
        train(m, torch.optim.SGD(m.parameters(), lr=0.05), data)
        return m
    zm, gm = ddp(None), ddp(gloo)
    same_params(zm.module, gm.module, "DDP, 20 steps, zcoll against gloo")
    # every rank holds the same model
    flat = torch.cat([q.detach().flatten() for q in zm.parameters()])
    first = flat.clone()
    dist.broadcast(first, 0)
    close(flat, first, "DDP's parameters equal on every rank")

    def averaged(pg):
        torch.manual_seed(11)
        m = mlp()
        avg = PeriodicModelAverager(period=4, warmup_steps=0, process_group=pg)
        opt = torch.optim.SGD(m.parameters(), lr=0.05)
        train(m, opt, data, lambda step: avg.average_parameters(m.parameters()))
        return m
    same_params(averaged(None), averaged(gloo), "PeriodicModelAverager, zcoll against gloo")

    def local_sgd(pg, sub):
        torch.manual_seed(13)
        m = DDP(mlp(), process_group=pg)
        state = PostLocalSGDState(process_group=pg, subgroup=sub, start_localSGD_iter=5)
        m.register_comm_hook(state, post_localSGD_hook)
        avg = PeriodicModelAverager(period=4, warmup_steps=5, process_group=pg)
        train(m, torch.optim.SGD(m.parameters(), lr=0.05), data,
              lambda step: avg.average_parameters(m.parameters()))
        return m
    # Every rank in a subgroup of its own "host": {0, 1} and {2}.
    zsubs = [dist.new_group([0, 1], backend="zcoll"), dist.new_group([2], backend="zcoll")]
    gsubs = [dist.new_group([0, 1], backend="gloo"), dist.new_group([2], backend="gloo")]
    mine = 0 if me < 2 else 1
    same_params(local_sgd(None, zsubs[mine]).module, local_sgd(gloo, gsubs[mine]).module,
                "post-local-SGD hook with a new_group subgroup, zcoll against gloo")

    def zero(pg):
        torch.manual_seed(17)
        m = DDP(mlp(), process_group=pg)
        opt = ZeroRedundancyOptimizer(m.parameters(), optimizer_class=torch.optim.SGD, lr=0.05,
                                      process_group=pg)
        train(m, opt, data)
        return m
    same_params(zero(None).module, zero(gloo).module,
                "ZeroRedundancyOptimizer, zcoll against gloo")


def die():
    me = dist.get_rank()
    t = torch.ones(1 << 20)
    for step in range(3):
        if me == 2 and step == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        start = time.monotonic()
        try:
            dist.all_reduce(t)
        except RuntimeError as e:
            print(f"rank {me}: step {step} failed after {time.monotonic() - start:.1f} s: {e}",
                  flush=True)
            sys.exit(3)
    raise AssertionError(f"rank {me}: every step passed though rank 2 was killed")


def main():
    what = sys.argv[1]
    dist.init_process_group("zcoll")
    check(dist.get_backend() == "zcoll", "the default group's backend")
    if what == "die":
        die()
    gloo = dist.new_group(backend="gloo")
    if what == "collectives":
        collectives(gloo)
    else:
        training(gloo)
    dist.barrier()
    me, p = dist.get_rank(), dist.get_world_size()
    # Destroyed with a collective still queued whose future has a Python callback: the
    # destructor lets go of the GIL, so the callback runs and nothing deadlocks.
    # Rank 0 comes late, so the others' destroy begins with the collective still pending.
    seen = []
    kept = zcoll.torch.empty(1000) if what == "collectives" else None
    if me == 0:
        time.sleep(0.5)
    fut = dist.all_reduce(torch.ones(1 << 20), async_op=True).get_future()
    done = fut.then(lambda f: seen.append(f.value()[0][0].item()))
    dist.destroy_process_group(gloo)
    dist.destroy_process_group()  # the group goes here unless a model still holds it
    done.wait()
    check(seen == [float(p)], f"the callback of a collective pending at destroy: {seen}")
    if kept is not None:  # outlived its group: ordinary memory, still there
        kept.fill_(2.0)
        check(float(kept.sum()) == 2000.0, "a zcoll tensor after its group was destroyed")
    print(f"rank {me}: {checks} checks passed", flush=True)


if __name__ == "__main__":
    main()
