"""A zcoll communicator inside an MPI job: rank 0 makes a unique id, MPI broadcasts it,
every rank starts zcoll from it, and the average of a model zcoll computes is checked
against MPI.Allreduce's.

    mpirun -np 4 /usr/bin/python3 examples/mpi4py_init.py [--elements N]

Debian's python3-mpi4py; zcoll's package on PYTHONPATH (build/python in a build tree).
Each rank prints its part of the comparison; rank 0 the times of both.
"""
import argparse
import time

import numpy as np
import zcoll
from mpi4py import MPI

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--elements", type=int, default=1 << 18)
parser.add_argument("--iters", type=int, default=20)
args = parser.parse_args()

world = MPI.COMM_WORLD
uid = world.bcast(zcoll.get_unique_id() if world.rank == 0 else None, root=0)
with zcoll.Comm(unique_id=uid, rank=world.rank, size=world.size) as comm:
    assert (comm.rank, comm.size) == (world.rank, world.size)
    rng = np.random.default_rng(world.rank)
    model = rng.integers(-8, 8, args.elements).astype(np.float32)  # exact sums
    ours = comm.allreduce(model, op=zcoll.AVG)
    theirs = np.empty_like(model)
    world.Allreduce(model, theirs, op=MPI.SUM)
    theirs /= world.size
    same = np.array_equal(ours, theirs)
    print(f"rank {comm.rank} of {comm.size}: zcoll's average {'equals' if same else 'DIFFERS FROM'}"
          f" MPI's over {args.elements} floats ({comm.transport})", flush=True)
    times = {}
    for name, reduce in (("zcoll", lambda: comm.allreduce(model, out=ours, op=zcoll.AVG)),
                         ("MPI", lambda: world.Allreduce(model, theirs, op=MPI.SUM))):
        world.Barrier()
        t0 = time.perf_counter()
        for _ in range(args.iters):
            reduce()
        times[name] = (time.perf_counter() - t0) / args.iters * 1e6
    if world.rank == 0:
        print(f"per allreduce of {args.elements} floats: zcoll {times['zcoll']:.0f} us, "
              f"MPI {times['MPI']:.0f} us", flush=True)
    if not same:
        raise SystemExit(1)
