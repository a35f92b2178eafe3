"""tasks.py -- the task-based vector interface from Python (examples/tasks.c's twin):
every rank runs its tasks as threads (2 on even ranks, 3 on odd ones: ranks need not
host the same number); each task computes a contribution to two shared variables and
commits it, without waiting; the rank's main thread gets each variable's reduction over
every task of every rank, and the next round reuses the keys.

    PYTHONPATH=build/python zcoll_run -np 4 /usr/bin/python3 examples/tasks.py [--rounds N] [--count N]

"grad" is the average over all tasks of a vector of --count float64 (zcoll.AVG divides
by the global number of tasks); "seen" sums how many samples every task saw (int64).
Each task's values follow from (rank, task, round), so every rank checks every element
against the closed form, and rank 0 prints, per round, the first elements and the task
count. Exit status: 0, 1 on an error or a wrong element.
"""
import argparse
import sys
import threading

import numpy as np
import zcoll


def tasks_on(rank):
    return 2 + rank % 2


def grad_of(rank, task, rnd, count):
    return ((rank * 5 + task * 3 + rnd * 7 + np.arange(count) % 11) % 13).astype(np.float64)


def seen_of(rank, task, rnd):
    return 100 + rank * 10 + task + rnd


def task_main(grad, seen, rank, task, rnd, count, failures):
    try:
        # commit returns at once: the vector is folded into the key's buffer already.
        grad.commit(grad_of(rank, task, rnd, count))
        seen.commit(np.array([seen_of(rank, task, rnd)], np.int64))
    except zcoll.Error as e:
        failures.append(f"rank {rank} task {task}: {type(e).__name__}: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--count", type=int, default=100000)
    o = ap.parse_args()
    bad = 0
    with zcoll.Comm() as comm:
        rank, size, ntasks = comm.rank, comm.size, tasks_on(comm.rank)
        total = sum(tasks_on(r) for r in range(size))
        with comm.vec("grad", ntasks, o.count, np.float64, zcoll.AVG) as grad, \
                comm.vec("seen", ntasks, 1, np.int64, zcoll.SUM) as seen:
            for rnd in range(o.rounds):
                failures = []
                threads = [threading.Thread(target=task_main,
                                            args=(grad, seen, rank, i, rnd, o.count, failures))
                           for i in range(ntasks)]
                for t in threads:
                    t.start()
                # The main thread does not wait for its tasks: get blocks until every
                # task of every rank has committed and the reduction is done.
                samples = int(seen.get()[0])
                avg = grad.get()
                for t in threads:
                    t.join()
                if failures:
                    print("\n".join(failures), file=sys.stderr)
                    bad = 1
                    break
                want = sum(grad_of(r, i, rnd, o.count) for r in range(size)
                           for i in range(tasks_on(r))) / total
                want_samples = sum(seen_of(r, i, rnd) for r in range(size)
                                   for i in range(tasks_on(r)))
                wrong = np.flatnonzero(avg != want)
                if wrong.size:
                    k = wrong[0]
                    print(f"rank {rank} round {rnd}: {wrong.size} wrong, grad[{k}] = "
                          f"{avg[k]:g}, want {want[k]:g}", file=sys.stderr)
                    bad = 1
                    break
                if samples != want_samples:
                    print(f"rank {rank} round {rnd}: seen {samples}, want {want_samples}",
                          file=sys.stderr)
                    bad = 1
                    break
                if rank == 0:
                    first = " ".join(f"{v:.4f}" for v in avg[:3])
                    print(f"tasks: round {rnd}: {total} tasks on {size} ranks saw {samples} "
                          f"samples; grad[0..2] = {first}", flush=True)
        if not bad and rank == 0:
            print(f"tasks: {o.rounds} rounds, every element of both keys as expected on "
                  "every rank")
    return bad


if __name__ == "__main__":
    sys.exit(main())
