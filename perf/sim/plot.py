#!/usr/bin/python3
"""plot.py -- the scale model's figures from run.sh's results (a developer tool: needs
python3-matplotlib, which CI does not install). Usage: plot.py RESULTS_DIR FIGURES_DIR"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

res, figs = sys.argv[1:3]
ALGOS = ["ring", "butterfly", "rhd", "tree"]


def read_table(path):
    """{p: [(bytes, [time per algorithm], [busbw per algorithm])]}"""
    out = {}
    for ln in open(path):
        if ln.startswith("#") or "|" not in ln:
            continue
        left, right = ln.split("|")
        f, g = left.split(), right.split()
        n = len(f) - 2
        out.setdefault(int(f[0]), []).append(
            (int(f[1]), [float(x) for x in f[2:]], [float(x) for x in g[:n]]))
    return out


for net, label in [("rxe", "verbs fitted on rxe"), ("ib", "assumed 100 Gb/s, 2 us (what-if)")]:
    path = os.path.join(res, f"table-{net}.txt")
    if not os.path.exists(path):
        continue
    t = read_table(path)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, p in zip(axes, [64, 1024]):
        rows = t.get(p, [])
        for i, a in enumerate(ALGOS):
            ax.loglog([r[0] for r in rows], [r[1][i] for r in rows], marker="o", label=a)
        ax.set_title(f"p = {p}, 8 ranks/host, {label}")
        ax.set_xlabel("bytes")
        ax.set_ylabel("predicted time (us)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(figs, f"sim-latency-{net}.png"), dpi=110)
    plt.close(fig)

    path = os.path.join(res, f"arity-{net}.txt")
    rows = []
    for ln in open(path):
        if not ln.startswith("#") and ln.split():
            f = ln.split()
            rows.append((int(f[0]), [float(x) for x in f[1:16]]))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for b, ts in rows:
        best = min(ts)
        ax.plot(range(2, 17), [x / best for x in ts], marker=".", label=f"{b} B")
    ax.set_xlabel("tree arity (TREE_ARITY)")
    ax.set_ylabel("time / best arity's time")
    ax.set_title(f"k-nomial tree allreduce, 1000 hosts x 1 rank, {label}")
    ax.set_ylim(0.95, 3)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(figs, f"sim-arity-{net}.png"), dpi=110)
    plt.close(fig)

meas, pred, col = [], [], []
for ln in open(os.path.join(os.path.dirname(res.rstrip("/")), "validation.md")):
    f = [x.strip() for x in ln.split("|")]
    if len(f) > 6 and f[1].isdigit():
        meas.append(float(f[4]))
        pred.append(float(f[5]))
        col.append({"2": "C0", "4": "C1", "8": "C2"}.get(f[1], "C3"))
fig, ax = plt.subplots(figsize=(5.5, 5))
ax.scatter(meas, pred, c=col, s=12)
lo, hi = min(meas + pred), max(meas + pred)
ax.loglog([lo, hi], [lo, hi], "k-", lw=0.8)
ax.loglog([lo, hi], [1.25 * lo, 1.25 * hi], "k:", lw=0.6)
ax.loglog([lo, hi], [lo / 1.25, hi / 1.25], "k:", lw=0.6)
ax.set_xlabel("measured (us)")
ax.set_ylabel("model (us)")
ax.set_title("validation: p=2 blue, 4 orange, 8 green (shm); rxe red")
fig.tight_layout()
fig.savefig(os.path.join(figs, "sim-validation.png"), dpi=110)
