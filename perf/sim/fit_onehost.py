#!/usr/bin/python3
"""fit_onehost.py -- the scale model's one-host term, fitted to the mailboxes' own rows.

Small allreduces on one host go through the mailboxes (lib/core/onehost.h), not through
a schedule: a rank writes its vector into its box once, every peer takes the box's lines
and reduces. zcoll_sim models that exchange as ALGO "onehost" (sim.c, build.c) with three
terms of its own, on top of the host model fit.py made (model-host.txt, kept as it is):

  oh_o_us      the call's own cost and the writer's publication (the box's header and
               data, the knock's check) -- the path skips the executor, whose entry and
               schedule lookup call_us prices, so a one-host call does not pay call_us;
  oh_alpha_us  publication to a peer's look finding it (one line between two cores);
  oh_recv_us   a reader's per box (the call is checked, the first line comes over);
  oh_ns_per_byte  a reader's per byte of a box: its lines come over one by one from the
               writer's cache, at a line's latency, not at a streaming copy's rate.

They are fitted (Nelder-Mead on the squared log error, as fit.py) to
measure.sh's onehost rows -- p = 2 one rank per core, p = 4, 8 oversubscribing the 2
cores, where fit.py's switch_us and share price the scheduling -- on 8, 32, 128, 512 B,
and validated on 16, 64, 256 B.

Usage: fit_onehost.py SIM MODEL DATA [--write | --check]
  --write: the fitted terms into MODEL; --check: no fit, MODEL's terms against DATA (does
  the fit hold on another batch?)
"""
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optimize import nelder_mead  # noqa: E402
from perfdata import load_shm  # noqa: E402

ITERS = 8  # back-to-back calls, as fit.py
NAMES = ["oh_o_us", "oh_alpha_us", "oh_recv_us", "oh_ns_per_byte"]


def load_model(path):
    out = {}
    for ln in open(path):
        f = ln.split("#")[0].split()
        if len(f) == 2:
            out[f[0]] = f[1]
    return out


def simulate(sim, model, points):
    args = [sim, "-i", str(ITERS)]
    for k, v in model.items():
        args += ["-s", f"{k}={v}"]
    feed = "".join(f"onehost {p} {p} {b}\n" for p, b in points)
    out = subprocess.run(args + ["batch"], input=feed, capture_output=True, text=True, check=True)
    return [float(ln.split()[4]) for ln in out.stdout.splitlines()]


def main():
    sim, model_path, data = sys.argv[1:4]
    base = load_model(model_path)
    meas = {(p, b): float(np.median(v)) for (p, a, b), v in load_shm(data).items()}
    sizes = sorted({b for _, b in meas})
    fit_sizes, val_sizes = sizes[0::2], sizes[1::2]
    fit_pts = sorted(k for k in meas if k[1] in fit_sizes)
    val_pts = sorted(k for k in meas if k[1] in val_sizes)

    def model_of(x):
        m = dict(base)
        m.update({n: math.exp(v) for n, v in zip(NAMES, x)})
        return m

    def loss(x):
        pred = simulate(sim, model_of(x), fit_pts)
        return float(np.mean([math.log(pr / meas[pt]) ** 2 for pr, pt in zip(pred, fit_pts)]))

    if "--check" in sys.argv:  # the model's terms as they stand, against these rows
        x = [math.log(float(base[n])) for n in NAMES]
        err = loss(x)
    else:
        x, err = nelder_mead(loss, [math.log(0.1)] * 3 + [math.log(0.2)], step=0.7, iters=200)
    m = model_of(x)
    print(f"# fit_onehost.py: rms log error on the fitting rows {math.sqrt(err):.3f}")
    for n in NAMES:
        print(f"{n} {float(m[n]):.4g}")
    print("\n|   p | bytes | measured us | model us | model / measured | within 25 % | role |")
    print("|---|---|---|---|---|---|---|")
    pts = sorted(meas)
    pred = dict(zip(pts, simulate(sim, m, pts)))
    ok = {True: 0, False: 0}
    for pt in pts:
        r = pred[pt] / meas[pt]
        held = pt in val_pts
        if held:
            ok[abs(math.log(r)) <= math.log(1.25)] += 1
        print(f"| {pt[0]} | {pt[1]} | {meas[pt]:.2f} | {pred[pt]:.2f} | {r:.2f} | "
              f"{'yes' if abs(math.log(r)) <= math.log(1.25) else 'NO'} | "
              f"{'held out' if held else 'fitted'} |")
    print(f"\nheld out: {ok[True]} of {ok[True] + ok[False]} within 25 %")
    if "--write" in sys.argv:
        lines = [ln for ln in open(model_path) if not ln.startswith("oh_")]
        lines += [f"{n} {float(m[n]):.4g}\n" for n in NAMES]
        open(model_path, "w").writelines(lines)


if __name__ == "__main__":
    main()
