"""comm.allreduce_partial_init through the binding, quorum size-1: each rank offers its
rank + 1 and a step number (float64, SUM) 30 times after a random sleep, reporting each
round's number, contributors, mine and result; a flush; then AVG with the request started
again; every rank's reports gathered and checked by rank 0 against the offers (every round
the sum of its members' offers, every member the same result, every offer in one round).
Prints "OK RANK"."""
import random
import time

import numpy as np
import zcoll

comm = zcoll.Comm()
r, p = comm.rank, comm.size
q = max(1, p - 1)
rng = random.Random(r)
x = np.zeros(2, np.float64)
out = np.zeros(2, np.float64)
reports = []
with comm.allreduce_partial_init(x, out, quorum=q) as req:
    for step in range(30):
        time.sleep(rng.random() * 0.002)
        x[:] = (r + 1, 1000 * r + step)
        req.start()
        res = req.wait()
        assert req.mine and 1 <= req.contributors <= q, (req.mine, req.contributors)
        reports.append((req.round, req.contributors, r, step, res[0], res[1]))
    res = req.flush()
    last = (req.round, req.contributors, req.mine, res[0], res[1])
    req.start()  # a new epoch, and free() flushes it at the with block's end
    req.wait()
rows = np.array(reports, np.float64)
every = comm.allgather(rows)  # p x 30 x 6
lasts = comm.allgather(np.array(last, np.float64))
if r == 0:
    rounds = {}
    for rnd, n, rank, step, a, b in every.reshape(-1, 6):
        rounds.setdefault(rnd, []).append((n, rank, step, a, b))
    for rnd, ms in rounds.items():
        assert all(m[0] == len(ms) for m in ms), (rnd, ms)
        want = (sum(m[1] + 1 for m in ms), sum(1000 * m[1] + m[2] for m in ms))
        assert all((m[3], m[4]) == want for m in ms), (rnd, ms, want)
    top = max(rounds)
    for lr, ln, lm, a, b in lasts:
        assert lr == top and ln == len(rounds[top]), (lr, ln, top)
    assert sum(len(ms) for ms in rounds.values()) == 30 * p
# AVG divides by the round's contributors
y = np.full(3, float(r), np.float32)
with comm.allreduce_partial_init(y, quorum=q, op=zcoll.AVG) as req:
    req.start()
    got = req.wait()
    assert req.mine
    n = req.contributors
    assert 0 <= got[0] <= p - 1 and n >= 1, (got, n)
comm.close()
print(f"OK {r}", flush=True)
