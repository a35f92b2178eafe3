"""zcoll inside an MPI job: the id made on rank 0 travels by MPI, then zcoll averages.

    mpirun -np 2 /usr/bin/python3 examples/mpi4py_average.py
"""
import numpy as np
import zcoll
from mpi4py import MPI

world = MPI.COMM_WORLD
uid = world.bcast(zcoll.get_unique_id() if world.rank == 0 else None, root=0)
with zcoll.Comm(unique_id=uid, rank=world.rank, size=world.size) as comm:
    x = np.full(1 << 20, world.rank, np.float32)
    comm.allreduce(x, out=x, op=zcoll.AVG)     # where x lies, over shm/verbs/UCX
    print(f"rank {comm.rank}: {x[0]} (MPI rank {world.rank}, over {comm.transport})")
