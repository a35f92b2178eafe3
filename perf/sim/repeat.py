#!/usr/bin/python3
"""repeat.py -- does a measurement repeat itself? Two measure.sh tables of the same host,
taken one after the other: per p and algorithm, on how many sizes their medians over
rounds agree within 25 %. A model cannot be held to 25 % where the measurement does not
hold itself to it; this says where that is.

Usage: repeat.py TABLE_A TABLE_B [SIZES]   (SIZES: comma-separated bytes; default all)
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfdata import load_shm  # noqa: E402

a, b = load_shm(sys.argv[1]), load_shm(sys.argv[2])
only = {int(x) for x in sys.argv[3].split(",")} if len(sys.argv) > 3 else None
keys = sorted(k for k in a.keys() & b.keys() if only is None or k[2] in only)
cells = {}
for p, algo, size in keys:
    ma, mb = float(np.median(a[(p, algo, size)])), float(np.median(b[(p, algo, size)]))
    ok = abs(ma / mb - 1) <= 0.25
    cells.setdefault((p, algo), []).append(ok)
    print(f"{p} {algo:9} {size:>9} {ma:10.1f} {mb:10.1f} {ma / mb:6.2f}{'' if ok else ' x'}")
algos = [x for x in ["ring", "butterfly", "rhd", "tree", "hier"] if any(k[1] == x for k in cells)]
print("\n| p | " + " | ".join(algos) + " |\n|---|" + "---|" * len(algos))
for p in sorted({k[0] for k in cells}):
    row = [f"{sum(cells[(p, x)])}/{len(cells[(p, x)])}" if (p, x) in cells else "-" for x in algos]
    print(f"| {p} | " + " | ".join(row) + " |")
total = sum(sum(v) for v in cells.values())
print(f"\n{total} of {sum(len(v) for v in cells.values())} points agree within 25 %")
