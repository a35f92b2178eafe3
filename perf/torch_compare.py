#!/usr/bin/python3
"""perf/torch_compare.py -- torch.distributed's all_reduce on the zcoll backend beside Gloo,
in one run, on this host.

    perf/torch_compare.py                    # p = 2 and 4, 8 B .. 64 MiB, float32 sum
    perf/torch_compare.py -np 2 -e 16M -r 5 --no-ddp

Starts p ranks itself (env:// on 127.0.0.1; PYTHONPATH must reach the zcoll package whose
backend is built, e.g. build/dev/python). Every rank joins the default group on "zcoll" and
a second group of the same ranks on "gloo"; size by size the two take turns (-r rounds, the
order swapped every round), each timing -n blocking all_reduces of the same float32 tensor
after a warm-up, the ranks lined up by a barrier first. A rank's time per call is its mean;
the table gives the slowest rank's, median over rounds: time, busbw (nccl-tests' allreduce
factor 2(p-1)/p) and Gloo's time over zcoll's (above 1: zcoll is faster). Every result is
checked. The tensors are torch's (torch.empty, where DDP's buckets are) in one table and
zcoll.torch.empty's in the other (--memory), the same tensor for both backends. "one pass"
is every rank's t.mul_(1) over its own tensor at once, timed alike: each tensor read and
written once, the least an in-place allreduce must do, so no allreduce beats it by much
where the tensors outgrow the cache (zcoll / pass near 1 is the machine's memory, not
the library). Then (unless --no-ddp) one DDP training step of a small MLP (3 x 1024 hidden,
3.1 M parameters, batch 64) on each backend, the mean of 20 steps after 5. The machine is
shared and noisy: only ratios from one run mean anything.
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1].upper()] if s[-1].upper() in mult else int(s)


def human(n):
    for unit, m in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= m and n % m == 0:
            return f"{n // m} {unit}"
    return f"{n} B"


def rank_main(args):
    import torch
    import torch.distributed as dist
    import zcoll.torch

    dist.init_process_group("zcoll")
    gloo = dist.new_group(backend="gloo")
    me, p = dist.get_rank(), dist.get_world_size()
    groups = {"zcoll": None, "gloo": gloo}
    sizes, n = [], args.b
    while n <= args.e:
        sizes.append(n)
        n *= args.f
    rows = []
    for memory in args.memory.split(","):
        for size in sizes:
            count = max(1, size // 4)
            # The same tensor for both backends: torch's memory, or zcoll.torch.empty's
            # (which zcoll's all_reduce reads where it lies; Gloo takes it as any tensor).
            t = (torch.empty(count, dtype=torch.float32) if memory == "torch" else
                 zcoll.torch.empty(count, dtype=torch.float32))
            iters = args.n if size <= (1 << 20) else max(3, args.n * (1 << 20) // size)
            times = {"zcoll": [], "gloo": [], "pass": []}
            for rnd in range(args.r):
                order = ["zcoll", "gloo", "pass"] if rnd % 2 == 0 else ["pass", "gloo", "zcoll"]
                for name in order:
                    g = groups.get(name)
                    for _ in range(args.w):
                        dist.all_reduce(t, group=g) if name != "pass" else t.mul_(1.0)
                    t.fill_(me + 1)
                    dist.barrier(group=g)
                    t0 = time.perf_counter()
                    for i in range(iters):
                        if name == "pass":  # every rank's tensor read and written once
                            t.mul_(1.0)
                            continue
                        dist.all_reduce(t, group=g)
                        if i == 0:  # the first result is checked; the rest only timed
                            want = p * (p + 1) / 2
                            if t[0].item() != want or t[-1].item() != want:
                                raise SystemExit(f"{name}: a wrong element at {size} B")
                    mine = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
                    dist.all_reduce(mine, op=dist.ReduceOp.MAX, group=g)
                    times[name].append(mine.item())
            rows.append((memory, size, statistics.median(times["zcoll"]),
                         statistics.median(times["gloo"]), statistics.median(times["pass"])))
            del t

    ddp = {}
    if not args.no_ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP
        for rnd in range(2):
            for name in (["zcoll", "gloo"] if rnd == 0 else ["gloo", "zcoll"]):
                torch.manual_seed(0)
                model = torch.nn.Sequential(
                    torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                    torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                    torch.nn.Linear(1024, 10))
                m = DDP(model, process_group=groups[name])
                opt = torch.optim.SGD(m.parameters(), lr=0.01)
                x, y = torch.randn(64, 1024), torch.randint(0, 10, (64,))
                for step in range(25):
                    if step == 5:
                        dist.barrier(group=groups[name])
                        t0 = time.perf_counter()
                    opt.zero_grad()
                    torch.nn.functional.cross_entropy(m(x), y).backward()
                    opt.step()
                mine = torch.tensor([(time.perf_counter() - t0) / 20], dtype=torch.float64)
                dist.all_reduce(mine, op=dist.ReduceOp.MAX, group=groups[name])
                ddp.setdefault(name, []).append(mine.item())
    if me == 0:
        factor = 2 * (p - 1) / p
        tl = dist.distributed_c10d._get_default_group().transport
        for memory in args.memory.split(","):
            where = ("torch's memory (torch.empty)" if memory == "torch" else
                     "zcoll.torch.empty's memory")
            print(f"## p = {p}: all_reduce float32 sum, blocking, in {where}, median of "
                  f"{args.r} rounds (transport: {tl})")
            print("| size | zcoll time | zcoll busbw | gloo time | gloo busbw | gloo / zcoll "
                  "| one pass | zcoll / pass |")
            print("|---|---|---|---|---|---|---|---|")
            for mem, size, z, g, one in rows:
                if mem != memory:
                    continue
                print(f"| {human(size)} | {z * 1e6:.1f} us | {size * factor / z / 1e9:.2f} GB/s | "
                      f"{g * 1e6:.1f} us | {size * factor / g / 1e9:.2f} GB/s | **{g / z:.1f}x** | "
                      f"{one * 1e6:.1f} us | {z / one:.2f} |")
            print()
        if ddp:
            z, g = min(ddp["zcoll"]), min(ddp["gloo"])
            print(f"DDP step (MLP 3.1 M parameters, batch 64, p = {p}): zcoll {z * 1e3:.1f} ms, "
                  f"gloo {g * 1e3:.1f} ms, gloo / zcoll {g / z:.2f}x\n", flush=True)
    dist.destroy_process_group()


def launch(args, p):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    procs = []
    for r in range(p):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(p), LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, __file__, "--rank"] + sys.argv[1:],
                                      env=env))
    rcs = [q.wait() for q in procs]
    if any(rcs):
        raise SystemExit(f"torch_compare: p = {p}: exit statuses {rcs}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-np", default="2 4", help='rank counts (default "2 4")')
    ap.add_argument("-b", type=parse_size, default=8, help="smallest size (default 8)")
    ap.add_argument("-e", type=parse_size, default=64 << 20, help="largest size (default 64M)")
    ap.add_argument("-f", type=int, default=8, help="size factor between rows (default 8)")
    ap.add_argument("-n", type=int, default=50, help="calls timed per size (default 50; fewer "
                    "above 1 MiB)")
    ap.add_argument("-w", type=int, default=3, help="warm-up calls (default 3)")
    ap.add_argument("-r", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--memory", default="torch,zcoll",
                    help='whose memory the tensors are in: "torch" (torch.empty), "zcoll" '
                    '(zcoll.torch.empty), or both (default "torch,zcoll")')
    ap.add_argument("--no-ddp", action="store_true", help="no DDP training step")
    ap.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank:
        rank_main(args)
        return
    for p in map(int, args.np.split()):
        launch(args, p)


if __name__ == "__main__":
    main()
