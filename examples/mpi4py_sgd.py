"""Data-parallel SGD with scikit-learn, averaged by zcoll inside an MPI job.

Each rank trains an SGDClassifier (logistic loss) with partial_fit on its shard of the
handwritten digits bundled with scikit-learn (1797 8x8 images, 10 classes; no download),
and every few mini-batches the ranks average coef_ and intercept_, each weighted by its
shard's share of the data (zcoll.premul_sum: one allreduce). The communicator starts from
a unique id rank 0 makes and mpi4py broadcasts. Rank 0 then trains the same model alone on
all the data, epoch for epoch, and prints both test accuracies; the run fails if they are
more than --tolerance apart.

    mpirun -np 4 /usr/bin/python3 examples/mpi4py_sgd.py [--epochs 20] [--every 2]

Debian's python3-mpi4py and python3-sklearn; zcoll's package on PYTHONPATH.
"""
import argparse
import warnings

import numpy as np
import zcoll
from mpi4py import MPI
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=20)
parser.add_argument("--batch", type=int, default=32, help="mini-batch size (default 32)")
parser.add_argument("--every", type=int, default=2, help="average every N mini-batches")
parser.add_argument("--tolerance", type=float, default=0.01)
args = parser.parse_args()
warnings.simplefilter("ignore", ConvergenceWarning)

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0,
                                                    stratify=y)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
classes = np.unique(y)


def model(ranks=1):
    # Averaging p models that each took a step is about one step of a p times larger batch:
    # the step size grows with p (the linear scaling rule) to make the same progress.
    return SGDClassifier(loss="log_loss", alpha=1e-4, learning_rate="constant",
                         eta0=0.01 * ranks, random_state=0)


def epoch(clf, Xs, ys, rng, after_batch=None):
    order = rng.permutation(len(ys))
    for k, start in enumerate(range(0, len(ys), args.batch)):
        idx = order[start:start + args.batch]
        clf.partial_fit(Xs[idx], ys[idx], classes=classes)
        if after_batch:
            after_batch(k)


world = MPI.COMM_WORLD
uid = world.bcast(zcoll.get_unique_id() if world.rank == 0 else None, root=0)
with zcoll.Comm(unique_id=uid, rank=world.rank, size=world.size) as comm:
    mine = slice(comm.rank, None, comm.size)          # this rank's shard
    Xs, ys = X_train[mine], y_train[mine]
    # Every rank makes the same number of mini-batches per epoch, so the averages line up.
    batches = -(-len(y_train[comm.size - 1::comm.size]) // args.batch)
    n_mine = np.array([len(ys)], np.int64)
    n_all = int(comm.allreduce(n_mine)[0])
    clf, rng = model(comm.size), np.random.default_rng(comm.rank)
    with zcoll.premul_sum(len(ys) / n_all) as weighted:
        def average(k):
            if (k + 1) % args.every == 0 or k == batches - 1:
                comm.allreduce(clf.coef_, out=clf.coef_, op=weighted)
                comm.allreduce(clf.intercept_, out=clf.intercept_, op=weighted)
        for _ in range(args.epochs):
            epoch(clf, Xs, ys, rng, lambda k: average(k) if k < batches else None)
    together = clf.score(X_test, y_test)
    ok = True
    if comm.rank == 0:
        alone = model()
        rng = np.random.default_rng(0)
        for _ in range(args.epochs):
            epoch(alone, X_train, y_train, rng)
        alone = alone.score(X_test, y_test)
        ok = abs(together - alone) <= args.tolerance
        print(f"test accuracy: {comm.size} ranks averaged by zcoll {together:.4f}, one process "
              f"on all the data {alone:.4f}: {'within' if ok else 'NOT within'} "
              f"{args.tolerance:.0%}", flush=True)
if not ok:
    raise SystemExit(1)
