#!/usr/bin/python3
"""plot.py -- the scale model's figures from run.sh's results (a developer tool: needs
python3-matplotlib, which CI does not install). Usage: plot.py RESULTS_DIR FIGURES_DIR

  sim-latency-NET.png   predicted time against size, per algorithm, p = 64, 1024, 4096
  sim-busbw-NET.png     the same as bus bandwidth, 2(p-1)/p n / t
  sim-scaling-NET.png   time against p at 8 B, 32 KiB, 8 MiB
  sim-arity-NET.png     1000 hosts x 1 rank: the tree's time per arity, relative to the best
  sim-traffic.png       bytes each host's NIC sends per allreduce, in units of the vector
  sim-validation.png    model against measured zcoll_perf (validation.md)
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

res, figs = sys.argv[1:3]
STYLE = {"ring": "C0", "butterfly": "C1", "rhd": "C2", "tree": "C3", "hier": "C4"}
NETS = [("rxe", "verbs fitted on rxe"), ("ib", "assumed 100 Gb/s, 2 us (what-if)")]


def read_table(path):
    """{(p, algo): [(bytes, time us, busbw GB/s)]} from a `zcoll_sim table` output."""
    out, names = {}, []
    if not os.path.exists(path):
        return out
    for ln in open(path):
        if ln.startswith("#") and "bytes" in ln and "best" in ln:
            names = ln.split("(")[0].split()[3:]
            continue
        if ln.startswith("#") or "|" not in ln:
            continue
        f = ln.split("|")[0].split()
        p, b = int(f[0]), int(f[1])
        for i, a in enumerate(names):
            t = float(f[2 + i])  # busbw from the time: the table rounds it to 1 MB/s
            out.setdefault((p, a), []).append((b, t, b / (t * 1e3) * 2 * (p - 1) / p))
    return out


def save(fig, name):
    fig.tight_layout()
    fig.savefig(os.path.join(figs, name), dpi=110)
    plt.close(fig)


for net, label in NETS:
    t = read_table(os.path.join(res, f"table-{net}.txt"))
    t.update(read_table(os.path.join(res, f"table-{net}-4096.txt")))
    if not t:
        continue
    algos = [a for a in STYLE if any(k[1] == a for k in t)]
    for what, col, ylabel, name in [("latency", 1, "predicted time (us)", "latency"),
                                    ("busbw", 2, "predicted busbw (GB/s)", "busbw")]:
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.3))
        for ax, p in zip(axes, [64, 1024, 4096]):
            for a in algos:
                rows = t.get((p, a), [])
                if rows:
                    ax.loglog([r[0] for r in rows], [r[col] for r in rows], marker="o", ms=3,
                              color=STYLE[a], label=a)
            ax.set_title(f"p = {p} ({p // 8} hosts x 8), {label}", fontsize=9)
            ax.set_xlabel("bytes")
            ax.set_ylabel(ylabel)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        save(fig, f"sim-{name}-{net}.png")
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.3))
    for ax, size in zip(axes, [8, 32768, 8 << 20]):
        for a in algos:
            pts = sorted((p, r[1]) for (p, b), rows in t.items() if b == a
                         for r in rows if r[0] == size)
            if pts:
                ax.loglog([x[0] for x in pts], [x[1] for x in pts], marker="o", ms=3,
                          color=STYLE[a], label=a)
        ax.set_title(f"{size} bytes, 8 ranks/host, {label}", fontsize=9)
        ax.set_xlabel("ranks p")
        ax.set_ylabel("predicted time (us)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, f"sim-scaling-{net}.png")

    path = os.path.join(res, f"arity-{net}.txt")
    if os.path.exists(path):
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
        ax.set_title(f"k-nomial tree allreduce, 1000 hosts x 1 rank, {label}", fontsize=9)
        ax.set_ylim(0.95, 3)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        save(fig, f"sim-arity-{net}.png")

# Bytes between hosts: per host (its NIC's outgoing), in units of the vector.
traffic, names = {}, []
for fname in ["traffic-k8.txt", "traffic-k8-4096.txt"]:
    path = os.path.join(res, fname)
    if not os.path.exists(path):
        continue
    for ln in open(path):
        if ln.startswith("#") and "hosts" in ln:
            names = ln.split("|")[0].split()[3:]
        elif not ln.startswith("#") and "|" in ln:
            f = ln.split("|")[0].split()
            for i, a in enumerate(names):
                traffic.setdefault(a, []).append((int(f[0]), float(f[2 + i])))
if traffic:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for a, pts in traffic.items():
        pts = sorted(x for x in pts if x[1] > 0)  # one host: nothing crosses
        ax.semilogx([x[0] for x in pts], [x[1] for x in pts], marker="o", ms=3,
                    color=STYLE.get(a), label=a, base=2)
    ax.set_xlabel("ranks p (8 per host)")
    ax.set_ylabel("bytes sent by each host's NIC / n")
    ax.set_yscale("log")
    ax.set_title("bytes between hosts per allreduce (exact, from the schedules)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, "sim-traffic.png")

meas, pred, col = [], [], []
rxe = False
for ln in open(os.path.join(os.path.dirname(res.rstrip("/")), "validation.md")):
    rxe = rxe or ln.startswith("### verbs on rxe")
    f = [x.strip() for x in ln.split("|")]
    try:  # the point tables' rows; the summary's cells (4/5) are not numbers
        m, pr = float(f[4]), float(f[5])
    except (IndexError, ValueError):
        continue
    meas.append(m)
    pred.append(pr)
    col.append("C3" if rxe else {"2": "C0", "4": "C1", "8": "C2"}.get(f[1], "C4"))
fig, ax = plt.subplots(figsize=(5.5, 5))
ax.scatter(meas, pred, c=col, s=12)
lo, hi = min(meas + pred), max(meas + pred)
ax.loglog([lo, hi], [lo, hi], "k-", lw=0.8)
ax.loglog([lo, hi], [1.25 * lo, 1.25 * hi], "k:", lw=0.6)
ax.loglog([lo, hi], [lo / 1.25, hi / 1.25], "k:", lw=0.6)
ax.set_xlabel("measured (us)")
ax.set_ylabel("model (us)")
ax.set_title("validation: p=2 blue, 4 orange, 8 green (shm); rxe red", fontsize=9)
save(fig, "sim-validation.png")
