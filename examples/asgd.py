"""asgd.py -- data-parallel averaged SGD from Python (examples/asgd.c's twin) on a real
data set: softmax (multinomial logistic) regression of Fashion-MNIST, the 70,000 28x28
grey images of clothes in 10 classes that Debian ships offline (dataset-fashion-mnist,
under /usr/share/datasets/fashion-mnist; ci/deps.sh installs it).

    PYTHONPATH=build/python zcoll_run -np 4 /usr/bin/python3 examples/asgd.py             # non-blocking averaging
    PYTHONPATH=build/python zcoll_run -np 4 /usr/bin/python3 examples/asgd.py --blocking  # blocking averaging
    PYTHONPATH=build/python /usr/bin/python3 examples/asgd.py                             # one rank, all the data
    PYTHONPATH=build/python zcoll_run -np 4 /usr/bin/python3 examples/asgd.py --partial 3 --imbalance 0.1:50

The split is the data set's own: 60,000 training images, 10,000 held out for testing,
the same whatever the number of ranks (--train/--test take the first N of each). Rank r
trains on samples r, r + p, r + 2p, ... of the training set. Rank 0 draws the initial
model and broadcasts it (comm.broadcast). Every --every mini-batches the ranks average
their models, weighted by shard size: a premul_sum op whose scalar is this rank's
shard size / the total, so one allreduce gives the weighted average. The averaging is a
persistent request (allreduce_init once, start at every averaging point): a rank
snapshots its model, starts the average of the snapshots and keeps training on its own
copy; at the next point it waits and takes the average plus what it learned since the
snapshot, w = avg + (w - snap), then starts the next one. Between mini-batches it calls
test(), all the progress ZCOLL_PROGRESS=caller (the default) needs. --blocking averages
with a blocking allreduce instead, for comparison. The local learning rate is --lr times
p, as in asgd.c: the average moves each local step about 1/p of its length.

Rank 0 prints, per epoch, the accuracy on the training and test sets (after a final
blocking average, every rank evaluating its share) and the mean training loss, then the
time blocked in zcoll calls (the slowest rank's): waits and starts of the averages, or
the blocking averages. Exit status: 0, 1 on an error, 2 on a bad command line or no data.
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np
import zcoll

DATA = "/usr/share/datasets/fashion-mnist"
CLASSES = 10


def read_idx(path):
    """An IDX file (the MNIST format): magic, big-endian dimensions, then uint8 data."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = np.frombuffer(raw, ">u4", ndim, 4).astype(int)
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(data, part, limit, rank, size):
    """Samples rank, rank + size, ... of the first `limit` of `part` ("train", "t10k"),
    as float32 features in [0, 1] plus a constant 1 (the bias), and int labels."""
    images = read_idx(os.path.join(data, f"{part}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data, f"{part}-labels-idx1-ubyte.gz"))
    n = min(limit, len(labels)) if limit else len(labels)
    img = images[:n][rank::size].reshape(-1, 28 * 28)
    x = np.empty((len(img), 28 * 28 + 1), np.float32)
    np.multiply(img, np.float32(1 / 255), out=x[:, :-1])
    x[:, -1] = 1
    return x, labels[:n][rank::size].astype(np.int64), n


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    return z


class Trainer:
    def __init__(self, comm, o, n_local, n_total):
        self.comm, self.o = comm, o
        self.w = np.empty((28 * 28 + 1, CLASSES), np.float32)
        if comm.rank == 0:
            rng = np.random.default_rng(o.seed)
            self.w[:] = rng.normal(0, 0.01, self.w.shape)
        comm.broadcast(self.w, root=0)  # every rank starts from rank 0's model
        # Weighted by shard size: sum over ranks of (n_r / N) w_r in one allreduce.
        self.op = zcoll.premul_sum(n_local / n_total)
        self.snap = np.empty_like(self.w)
        self.avg = np.empty_like(self.w)
        if o.partial:  # a round averages the first `partial` offers: AVG by their count
            self.req = comm.allreduce_partial_init(self.snap, out=self.avg, quorum=o.partial,
                                                   op=zcoll.AVG)
        else:
            self.req = None if o.blocking else comm.allreduce_init(self.snap, out=self.avg,
                                                                   op=self.op)
        self.in_flight = False
        self.t = dict(wait=0.0, start=0.0, test=0.0, blocking=0.0, end=0.0, compute=0.0,
                      imbalance=0.0)
        self.rounds = [0, 0]  # --partial: rounds this rank's offers joined, full and short

    def timed(self, what, fn, *args):
        t0 = time.perf_counter()
        r = fn(*args)
        self.t[what] += time.perf_counter() - t0
        return r

    def step(self, x, y, lr):
        t0 = time.perf_counter()
        p = softmax(x @ self.w)
        p[np.arange(len(y)), y] -= 1  # d loss / d logits
        self.w -= (lr / len(y)) * (x.T @ p)
        self.t["compute"] += time.perf_counter() - t0

    def finish_average(self):
        """The averaging in flight, if any, ends: w = avg + (w - snap)."""
        if self.in_flight:
            self.timed("wait", self.req.wait)
            self.in_flight = False
            self.w += self.avg - self.snap
            if self.o.partial:
                self.rounds[self.req.contributors < self.o.partial] += 1

    def average(self):
        if self.o.blocking and self.o.partial:  # offer, and take the round's average at once
            self.finish_average()
            self.snap[:] = self.w
            self.timed("start", self.req.start)
            self.in_flight = True
            self.finish_average()
            return
        if self.o.blocking:
            self.timed("blocking", self.comm.allreduce, self.w, self.w, self.op)
            return
        self.finish_average()
        self.snap[:] = self.w
        self.timed("start", self.req.start)
        self.in_flight = True

    def poke(self):
        """Progress for ZCOLL_PROGRESS=caller between mini-batches."""
        if self.in_flight:
            self.timed("test", self.req.test)

    def epoch_end(self):
        """Every rank holds the same model afterwards."""
        self.finish_average()
        if self.o.partial:  # every rank's last offer ends in a round before the full average
            self.timed("end", self.req.flush)
        self.timed("end", self.comm.allreduce, self.w, self.w, self.op)

    def close(self):
        """Frees the request and the op; one in flight (after an error) is left to the
        communicator's abort."""
        if self.in_flight:
            return
        if self.req is not None:
            self.req.free()
        self.op.free()


def evaluate(comm, w, x, y, xt, yt):
    """Training accuracy, test accuracy and mean training loss, over every rank."""
    z = x @ w
    p = softmax(z.copy())
    loss = -np.log(np.maximum(p[np.arange(len(y)), y], 1e-12)).sum()
    right, right_t = np.count_nonzero(z.argmax(axis=1) == y), np.count_nonzero(
        (xt @ w).argmax(axis=1) == yt)
    s = comm.allreduce(np.array([right, len(y), right_t, len(yt), loss], np.float64))
    return s[0] / s[1], s[2] / s[3], s[4] / s[1]


def train(comm, o):
    r, p = comm.rank, comm.size
    x, y, n_total = load(o.data, "train", o.train, r, p)
    xt, yt, n_test = load(o.data, "t10k", o.test, r, p)
    tr = Trainer(comm, o, len(y), n_total)
    rng = np.random.default_rng([o.seed, r])
    slow = np.random.default_rng([o.seed, r, 7])  # --imbalance's draws, apart from the data's
    t_start = time.perf_counter()
    try:
        for e in range(1, o.epochs + 1):
            lr = o.lr * p / (1 + o.decay * (e - 1))
            order = rng.permutation(len(y))
            batches = 0
            for k0 in range(0, len(y), o.batch):
                idx = order[k0:k0 + o.batch]
                tr.step(x[idx], y[idx], lr)
                if o.imbalance[0] and slow.random() < o.imbalance[0]:
                    tr.timed("imbalance", time.sleep, o.imbalance[1] / 1000)
                batches += 1
                if batches % o.every == 0:
                    tr.average()
                else:
                    tr.poke()
            tr.epoch_end()
            acc, test_acc, loss = evaluate(comm, tr.w, x, y, xt, yt)
            blocked = sum(tr.t[k] for k in ("wait", "start", "test", "blocking", "end"))
            slowest = comm.allreduce(np.array([blocked, time.perf_counter() - t_start]),
                                     op=zcoll.MAX)
            if r == 0:
                print(f"epoch {e} train accuracy {acc:.4f} test accuracy {test_acc:.4f} "
                      f"loss {loss:.4f} blocked {slowest[0]:.4f} s elapsed {slowest[1]:.2f} s",
                      flush=True)
        keys = ("wait", "start", "test", "blocking", "end", "compute", "imbalance")
        spent = comm.allreduce(np.array([tr.t[k] for k in keys]), op=zcoll.MAX)
        # per rank: blocked in averages, rounds joined (full, short)
        mine = np.array([tr.t["wait"] + tr.t["start"] + tr.t["test"] + tr.t["blocking"],
                         tr.rounds[0], tr.rounds[1]], np.float64)
        per_rank = comm.allgather(mine)
        elapsed = time.perf_counter() - t_start
    finally:
        tr.close()
    if r == 0:
        s = dict(zip(keys, spent))
        mode = f"partial {o.partial}" + (" blocking" if o.blocking else "") if o.partial else \
            "blocking" if o.blocking else "non-blocking"
        print(f"asgd.py: ranks {p} fashion-mnist {n_total} train / {n_test} test"
              f", {mode}: test accuracy {test_acc:.4f} (train {acc:.4f}), blocked in "
              f"averages {s['wait'] + s['start'] + s['test'] + s['blocking']:.4f} s "
              f"(slowest rank), compute {s['compute']:.2f} s")
        print(f"asgd.py: wall time {elapsed:.2f} s, imbalance slept {s['imbalance']:.2f} s "
              "(slowest rank)")
        for q, (b, full, short) in enumerate(per_rank):
            rounds = f", rounds joined {int(full)} full + {int(short)} short" if o.partial \
                else ""
            print(f"asgd.py: rank {q} blocked in averages {b:.4f} s{rounds}")
        if o.blocking and not o.partial:
            print(f"asgd.py: blocked in allreduce {s['blocking']:.4f} s; end-of-epoch "
                  f"averages {s['end']:.4f} s")
        else:
            print(f"asgd.py: blocked in wait {s['wait']:.4f} s, start {s['start']:.4f} s, "
                  f"test {s['test']:.4f} s; end-of-epoch averages {s['end']:.4f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DATA, help="the IDX files' directory (%(default)s)")
    ap.add_argument("--train", type=int, default=0, help="use the first N training samples "
                    "(default: all 60000)")
    ap.add_argument("--test", type=int, default=0, help="use the first N test samples "
                    "(default: all 10000)")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=32, help="mini-batch size (%(default)s)")
    ap.add_argument("--every", type=int, default=8,
                    help="average the models every K mini-batches (%(default)s)")
    ap.add_argument("--lr", type=float, default=0.1,
                    help="learning rate of one rank over all the data (%(default)s)")
    ap.add_argument("--decay", type=float, default=0.5,
                    help="epoch e's learning rate is lr / (1 + decay (e - 1)) (%(default)s)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--blocking", action="store_true",
                    help="average with a blocking allreduce instead of a persistent request "
                    "that runs while the next mini-batches compute")
    ap.add_argument("--partial", type=int, default=0, metavar="Q",
                    help="average with a partial allreduce: each averaging joins the round "
                    "forming when it arrives, which ends with its Q-th offer, so stragglers "
                    "wait for nobody (docs/partial.md); with --blocking each rank takes its "
                    "round's average before it goes on")
    ap.add_argument("--imbalance", default="0:0", metavar="P:MS",
                    help="each rank, each mini-batch, with probability P (seeded) computes "
                    "MS ms longer: the load imbalance stragglers make (%(default)s)")
    o = ap.parse_args()
    try:
        o.imbalance = tuple(float(v) for v in o.imbalance.split(":"))
        if len(o.imbalance) != 2 or not 0 <= o.imbalance[0] <= 1 or o.imbalance[1] < 0:
            raise ValueError
    except ValueError:
        ap.error("--imbalance is P:MS, 0 <= P <= 1, MS >= 0")
    if o.partial < 0:
        ap.error("--partial Q takes Q >= 1")
    if min(o.epochs, o.batch, o.every) < 1 or o.train < 0 or o.test < 0 or not o.lr > 0 \
            or not o.decay >= 0:
        ap.error("--epochs, --batch and --every must be >= 1, --lr > 0, --decay >= 0")
    if not os.path.exists(os.path.join(o.data, "train-images-idx3-ubyte.gz")):
        print(f"asgd.py: no Fashion-MNIST in {o.data}: apt-get install dataset-fashion-mnist "
              "(ci/deps.sh does), or pass --data", file=sys.stderr)
        return 2
    try:
        with zcoll.Comm() as comm:
            train(comm, o)
    except zcoll.Error as e:
        print(f"asgd.py: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
