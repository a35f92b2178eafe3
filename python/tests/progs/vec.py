"""The vector interface on several ranks: task threads (1 on even ranks, 2 on odd ones)
commit to four keys at once -- AVG over float32 of shape (3, 5), SUM over int64, a
premul_sum over float64, a created maxloc over a structured dtype -- and the main
thread gets each round's results, checked element for element against closed forms.
Then a misuse: rank 0 commits twice to a key of one task before rank 1 has committed.
Prints "OK <what>" per check, "MISUSE <class>: <message>"; exits 1 on a failure.

usage: vec.py ROUNDS
"""
import sys
import threading
import time

import numpy as np
import zcoll

PAIR = np.dtype([("v", "<f4"), ("i", "<i4")])


def tasks_on(rank):
    return 1 + rank % 2


def contribution(rank, task, rnd, shape):
    n = int(np.prod(shape))
    return ((np.arange(n) * 3 + rank * 5 + task * 7 + rnd) % 13).reshape(shape)


def pairs(rank, task, rnd):
    a = np.empty(6, PAIR)
    a["v"] = (np.arange(6) * 5 + rank * 3 + task * 2 + rnd) % 7
    a["i"] = rank * 10 + task
    return a


def maxloc(invec, inout):
    take = (invec["v"] > inout["v"]) | ((invec["v"] == inout["v"]) & (invec["i"] < inout["i"]))
    inout[take] = invec[take]


def main():
    rounds = int(sys.argv[1])
    with zcoll.Comm() as comm:
        r, p = comm.rank, comm.size
        tasks = [(q, t) for q in range(p) for t in range(tasks_on(q))]
        scale = 0.5 * (r + 1)
        with zcoll.premul_sum(scale) as pm, zcoll.op_create(maxloc, dtype=PAIR) as ml, \
                comm.vec("avg", tasks_on(r), (3, 5), np.float32, zcoll.AVG) as va, \
                comm.vec("sum", tasks_on(r), 7, np.int64) as vs, \
                comm.vec("premul", tasks_on(r), 4, np.float64, pm) as vp, \
                comm.vec("maxloc", tasks_on(r), 6, PAIR, ml) as vm:
            for rnd in range(rounds):
                errors = []

                def task(t):
                    try:
                        va.commit(contribution(r, t, rnd, (3, 5)).astype(np.float32))
                        vs.commit(contribution(r, t, rnd, 7).astype(np.int64))
                        vp.commit(contribution(r, t, rnd, 4).astype(np.float64))
                        vm.commit(pairs(r, t, rnd))
                    except Exception as e:
                        errors.append(e)

                threads = [threading.Thread(target=task, args=(t,)) for t in range(tasks_on(r))]
                for th in threads:
                    th.start()
                # In another order than the tasks commit: keys complete independently.
                got_m, got_p = vm.get(), vp.get()
                out = np.empty(7, np.int64)
                assert vs.get(out=out) is out
                got_a = va.get()
                for th in threads:
                    th.join()
                assert not errors, errors
                want_a = sum(contribution(q, t, rnd, (3, 5)) for q, t in tasks) / len(tasks)
                assert got_a.shape == (3, 5) and got_a.dtype == np.float32
                assert np.array_equal(got_a, want_a.astype(np.float32)), (got_a, want_a)
                assert np.array_equal(out, sum(contribution(q, t, rnd, 7) for q, t in tasks))
                want_p = sum(0.5 * (q + 1) * contribution(q, t, rnd, 4) for q, t in tasks)
                assert np.array_equal(got_p, want_p), (got_p, want_p)
                allp = np.stack([pairs(q, t, rnd) for q, t in tasks])
                best = np.lexsort((allp["i"], -allp["v"]), axis=0)[0]
                assert got_m.dtype == PAIR
                assert np.array_equal(got_m, allp[best, np.arange(6)]), (got_m, allp)
                print(f"OK round {rnd}", flush=True)

        # Misuse: two commits of a one-task key before the round is done.
        with comm.vec("misuse", 1, 3, np.float64) as v:
            if r == 0:
                v.commit(np.ones(3))
                try:
                    v.commit(np.ones(3))
                    print("no error for a second commit", flush=True)
                    sys.exit(1)
                except zcoll.InvalidArgument as e:
                    print(f"MISUSE {type(e).__name__}: {e}", flush=True)
            else:
                time.sleep(0.3)
                v.commit(np.ones(3))
            assert np.array_equal(v.get(), np.full(3, float(p)))
            print("OK after misuse", flush=True)


main()
