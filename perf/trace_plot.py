#!/usr/bin/python3
"""Draw ZCOLL_TRACE timelines as a PNG: one row per rank and pipeline stage.

    ZCOLL_TRACE=/tmp/tr zcoll_run -np 4 zcoll_perf -b 8M -e 8M -n 3 -w 1 -c 0
    perf/trace_plot.py /tmp/tr -o pipeline.png           # the last of the largest allreduces
    perf/trace_plot.py /tmp/tr -o pipeline.png --all     # everything

Overlap shows as bars of different stages at the same time on one rank: transfer of
chunk k while chunk k-1 is reduced. A stage that dominates the span is the bottleneck.
"""
# Debian's python3 (with python3-matplotlib), not whatever python3 is first on PATH.
import argparse
import glob
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STAGES = ["copy-in", "transfer", "reduce", "copy-out"]
COLORS = {"copy-in": "#4c72b0", "transfer": "#dd8452", "reduce": "#55a868", "copy-out": "#c44e52"}


def load(prefix):
    ranks = {}
    for path in sorted(glob.glob(prefix + ".*.json")):
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        for e in events:
            if e.get("ph") != "X":
                continue
            ranks.setdefault(e["pid"], []).append(e)
    if not ranks:
        sys.exit(f"trace_plot: no {prefix}.<rank>.json files")
    return ranks


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prefix", help="the ZCOLL_TRACE value used for the run")
    ap.add_argument("-o", "--output", default="pipeline.png")
    ap.add_argument("--all", action="store_true",
                    help="plot every collective, not only the last of the largest")
    args = ap.parse_args()
    ranks = load(args.prefix)
    # The window: the last of the largest allreduces (benchmarks end with tiny ones that
    # combine their timings), over the ranks; or everything.
    lo, hi = None, None
    if not args.all:
        for evs in ranks.values():
            spans = [e for e in evs if e["name"] == "allreduce"]
            if spans:
                biggest = max(e["args"]["bytes"] for e in spans)
                last = [e for e in spans if e["args"]["bytes"] == biggest][-1]
                s, t = last["ts"], last["ts"] + last["dur"]
                lo = s if lo is None else min(lo, s)
                hi = t if hi is None else max(hi, t)
    rows, labels = [], []
    for rank in sorted(ranks):
        for stage in STAGES:
            bars = [(e["ts"], e["dur"]) for e in ranks[rank] if e["name"] == stage
                    and (lo is None or (e["ts"] + e["dur"] >= lo and e["ts"] <= hi))]
            rows.append((stage, bars))
            labels.append(f"r{rank} {stage}")
    fig, ax = plt.subplots(figsize=(12, 0.3 * len(rows) + 1.5))
    totals = {s: 0.0 for s in STAGES}
    for i, (stage, bars) in enumerate(rows):
        ax.broken_barh(bars, (i - 0.4, 0.8), facecolors=COLORS[stage])
        totals[stage] += sum(d for _, d in bars)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (us)")
    if lo is not None:
        ax.set_xlim(lo, hi)
    busy = ", ".join(f"{s} {totals[s] / 1e3:.2f} ms" for s in STAGES)
    ax.set_title(f"zcoll pipeline, {len(ranks)} ranks ({busy}, summed over ranks)", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"trace_plot: wrote {args.output}; busy time per stage: {busy}")


if __name__ == "__main__":
    main()
