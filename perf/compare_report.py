#!/usr/bin/env python3
"""compare_report.py -- the tables, summary lines and plots of perf/compare.

    perf/compare_report.py RESULTS_DIR [--place oop|ip] [--cpu NAME] [--no-plot] NP...

Reads RESULTS_DIR/<impl>_np<P>.{out,err,rc,na} for impl in zcoll, mpi, gloo-ring, gloo-hd
(the nccl-tests tables of zcoll_perf, mpi_allreduce_perf and gloo_allreduce_perf), prints
one side-by-side table per rank count and dtype/op, then one summary line per rank count
and dtype/op:

    summary np=4 type=float op=sum busbw_ratio_8MiB=0.873 busbw_ratio_32MiB=1.204 lat_ratio_8B=1.208 ...

busbw_ratio_* is zcoll busbw / MPI busbw at that size (> 1: zcoll is faster), lat_ratio_8B
zcoll time / MPI time at 8 B (< 1: zcoll is faster), gloo_* the same against the better of
the two Gloo algorithms; "n/a" when a size was not run or a peer failed. The same figures go
to RESULTS_DIR/summary.json. Draws busbw.png (log2 size) and latency.png (log-log) with
matplotlib's Agg backend. Exit status 1 when zcoll failed or reported a wrong element.
"""
import argparse
import datetime
import glob
import json
import math
import os
import sys

IMPLS = [("zcoll", "zcoll"), ("mpi", "MPI"), ("gloo-ring", "gloo-ring"), ("gloo-hd", "gloo-hd")]
PROGS = ("zcoll_perf:", "zcoll_run:", "mpi_allreduce_perf:", "gloo_allreduce_perf:")
MIB = 1 << 20
SUMMARY_SIZES = (("8MiB", 8 * MIB), ("32MiB", 32 * MIB))


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def parse(path, col):
    """{(type, op): {bytes: (time_us, wrong, algorithm)}}, the banner, the footer's count."""
    rows, banner, footer = {}, "", None
    text = read(path)
    if text is None:
        return rows, banner, footer
    for line in text.splitlines():
        if line.startswith("# ") and line[2:].startswith(PROGS) and not banner:
            banner = line[2:].strip()
        if line.startswith("# Out of bounds values"):
            try:
                footer = int(line.split(":")[1].split()[0])
            except (IndexError, ValueError):
                pass
        if line.startswith("#"):
            continue
        w = line.split()
        if len(w) < 13 or not w[0].isdigit():
            continue
        try:
            t = float(w[col])
        except ValueError:
            continue
        algo = w[13] if len(w) > 13 else ""
        rows.setdefault((w[2], w[3]), {})[int(w[0])] = (t, w[col + 3], algo)
    return rows, banner, footer


def failure(base):
    """'' if the run succeeded, else why not (one line)."""
    rc = (read(base + ".rc") or "").strip()
    if rc == "":
        return "not run"
    if rc == "0":
        return ""
    if rc == "124":
        return "exceeded the time limit (perf/compare -t)"
    lines = [l.strip() for l in (read(base + ".err") or "").splitlines() if l.strip()]
    own = [l for l in lines if l.startswith(PROGS)]
    errs = [l for l in lines if "error" in l.lower() and not l.startswith("--")]
    msg = (own or errs or [l for l in lines if not l.startswith("--")] or ["no message"])[0]
    return f"exit {rc}: {msg[:200]}"


def load(res, impl, p, col):
    """Every run of one implementation at one rank count, merged: per size the best (lowest)
    time and the algorithm of that run, and the wrong elements of all runs added up."""
    na = read(f"{res}/{impl}_np{p}.na")
    d = {"rows": {}, "banner": "", "why": "", "partial": "", "footer": 0, "runs": 0, "failed": 0,
         "notes": []}
    if na is not None:
        d["why"] = na.strip() or "not available"
        return d
    bases = sorted(x[:-3] for x in glob.glob(f"{res}/{impl}_np{p}.rc") + glob.glob(f"{res}/{impl}_np{p}.r*.rc"))
    whys = []
    for b in bases:
        rows, banner, footer = parse(b + ".out", col)
        d["banner"] = d["banner"] or banner
        d["notes"] += [l[2:].strip() for l in (read(b + ".out") or "").splitlines()
                       if l.startswith("# note:") and l[2:].strip() not in d["notes"]]
        d["footer"] += footer or 0
        d["runs"] += 1
        why = failure(b)
        if why:
            d["failed"] += 1
            whys.append(why)
        for key, sizes in rows.items():
            merged = d["rows"].setdefault(key, {})
            for size, (t, wrong, algo) in sizes.items():
                if size not in merged:
                    merged[size] = (t, wrong, algo)
                    continue
                t0, w0, a0 = merged[size]
                w = str(int(w0) + int(wrong)) if w0.isdigit() and wrong.isdigit() else (
                    wrong if w0 == "N/A" else w0)
                merged[size] = (t, w, algo) if t < t0 else (t0, w, a0)
    if not bases:
        d["why"] = "not run"
    elif d["failed"] == d["runs"]:
        d["why"] = whys[0]
    elif whys:
        d["partial"] = f"{d['failed']} of {d['runs']} runs failed: {whys[0]}"
    return d


def busbw(size, t, p):
    return size / t / 1e3 * 2 * (p - 1) / p if t and t > 0 and p > 1 else None


def fmt(v, spec, width):
    return format(format(v, spec) if v is not None else "n/a", f">{width}")


def fmt_t(v, width):
    """A time in us: 2 decimals, fewer for large values, always within width."""
    if v is None:
        return format("n/a", f">{width}")
    return format(f"{v:.2f}" if v < 10000 else f"{v:.0f}", f">{width}")


def fmt_r(v, width):
    """A ratio: 3 decimals below 10, 2 below 100, then 1 or none."""
    if v is None:
        return format("n/a", f">{width}")
    s = f"{v:.3f}" if v < 10 else f"{v:.2f}" if v < 100 else f"{v:.1f}" if v < 1000 else f"{v:.0f}"
    return format(s, f">{width}")


def fmt_size(b):
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("res")
    ap.add_argument("nps", nargs="+", type=int)
    ap.add_argument("--place", choices=("oop", "ip"), default="oop")
    ap.add_argument("--cpu", default="")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    res, nps = a.res, a.nps

    data = {p: {impl: load(res, impl, p, 9 if (a.place == "ip" and impl in ("zcoll", "mpi")) else 5)
                for impl, _ in IMPLS} for p in nps}

    status = 0
    summaries, sections = [], []
    place = "in-place" if a.place == "ip" else "out-of-place"
    for p in nps:
        d = data[p]
        keys = []
        for impl, _ in IMPLS:
            keys += [k for k in d[impl]["rows"] if k not in keys]
        z = d["zcoll"]
        if z["why"] or z["partial"] or not z["rows"] or z["footer"]:
            status = 1
        best = f"; each the best of {a.reps} runs per size" if a.reps > 1 else ""
        print(f"# np {p}: zcoll and MPI {place}; Gloo in place on its input (the only way it runs){best}")
        for impl, label in IMPLS:
            x = d[impl]
            state = f"n/a: {x['why']}" if x["why"] else x["partial"] or "ok"
            print(f"#   {label + ':':11s}{x['banner'] or 'no output'} [{state}]")
        if not keys:
            print("#   no rows to compare\n#")
        for key in keys:
            if key not in sections:
                sections.append(key)
            r = {impl: d[impl]["rows"].get(key, {}) for impl, _ in IMPLS}
            # a peer that has no row for this section: say why
            for impl, label in IMPLS:
                if not r[impl] and not d[impl]["why"]:
                    why = [n for n in d[impl]["notes"] if key[0] in n.split() or key[0] + "," in n
                           or key[1] in n.split()]
                    print(f"#   {label}: n/a for {key[0]} {key[1]}: "
                          f"{why[0] if why else 'not in its output (see its .out)'}")
            print(f"# {key[0]} {key[1]}, np {p}")
            print("#%10s %s  %s  %s %s" % (
                "", " time (us) ".center(39, "-"), " busbw (GB/s) ".center(35, "-"),
                " zcoll/MPI ".center(13, "-"), "zcoll/gloo".rjust(11)))
            print("#%10s %9s %9s %9s %9s  %8s %8s %8s %8s  %6s %6s %11s  %s" % (
                "size(B)", "zcoll", "MPI", "gloo-ring", "gloo-hd", "zcoll", "MPI", "gloo-ring",
                "gloo-hd", "busbw", "time", "busbw(best)", "zcoll algorithm"))
            sizes = sorted(set().union(*[set(v) for v in r.values()]))
            tr_all, gr_all, at = [], [], {}
            for size in sizes:
                t = {impl: (r[impl][size][0] if size in r[impl] else None) for impl, _ in IMPLS}
                bw = {impl: busbw(size, t[impl], p) for impl, _ in IMPLS}
                zt, mt = t["zcoll"], t["mpi"]
                bw_zm = mt / zt if zt and mt and p > 1 else None  # same bytes, same p
                t_zm = zt / mt if zt and mt else None
                gl = [(t[g], g) for g in ("gloo-ring", "gloo-hd") if t[g]]
                best = min(gl) if gl else None
                bw_zg = best[0] / zt if best and zt and p > 1 else None
                tg = f"{fmt_r(bw_zg, 0)} {'r' if best[1] == 'gloo-ring' else 'hd'}" if bw_zg else None
                if t_zm:
                    tr_all.append(t_zm)
                if best and zt:
                    gr_all.append(zt / best[0])
                at[size] = {"bw_zm": bw_zm, "t_zm": t_zm, "bw_zg": bw_zg}
                note = r["zcoll"][size][2] if size in r["zcoll"] else "n/a"
                bad = [f"{label}={r[impl][size][1]}" for impl, label in IMPLS
                       if size in r[impl] and r[impl][size][1] not in ("0", "N/A")]
                if any(b.startswith("zcoll=") for b in bad):
                    status = 1
                if bad:
                    note += "  WRONG: " + " ".join(bad)
                print(" %10d %9s %9s %9s %9s  %8s %8s %8s %8s  %6s %6s %11s  %s" % (
                    size, *(fmt_t(t[i], 9) for i, _ in IMPLS),
                    *(fmt(bw[i], ".3f", 8) for i, _ in IMPLS),
                    fmt_r(bw_zm, 6), fmt_r(t_zm, 6), tg or "n/a", note))
            for what, v in (("zcoll/MPI", tr_all), ("zcoll/gloo(best)", gr_all)):
                if v:
                    g = math.exp(sum(math.log(x) for x in v) / len(v))
                    print(f"# geometric mean of time {what} over {len(v)} sizes: {g:.3f}")
            s = {"np": p, "type": key[0], "op": key[1], "place": place, "runs": a.reps}
            for name, size in SUMMARY_SIZES:
                s[f"busbw_ratio_{name}"] = at.get(size, {}).get("bw_zm")
            s["lat_ratio_8B"] = at.get(8, {}).get("t_zm")
            for name, size in SUMMARY_SIZES:
                s[f"gloo_busbw_ratio_{name}"] = at.get(size, {}).get("bw_zg")
            s["gloo_lat_ratio_8B"] = (1 / at[8]["bw_zg"] if at.get(8, {}).get("bw_zg") else None)
            wrong = {}
            for impl, label in IMPLS:
                w = [r[impl][x][1] for x in r[impl]]
                wrong[label] = (sum(int(x) for x in w if x.isdigit()) if w else None)
            s["wrong"] = wrong
            s["zcoll_algorithms"] = sorted({v[2] for v in r["zcoll"].values() if v[2]})
            summaries.append(s)
            print("#")

    print("# summary: busbw_ratio = zcoll busbw / MPI busbw (> 1: zcoll faster), lat_ratio_8B ="
          " zcoll time / MPI time at 8 B (< 1: zcoll faster); gloo_* against the better Gloo")
    for s in summaries:
        def v(k):
            return f"{s[k]:.3f}" if s[k] is not None else "n/a"
        wr = ",".join(f"{k}:{'n/a' if x is None else x}" for k, x in s["wrong"].items())
        print(f"summary np={s['np']} type={s['type']} op={s['op']}"
              f" busbw_ratio_8MiB={v('busbw_ratio_8MiB')} busbw_ratio_32MiB={v('busbw_ratio_32MiB')}"
              f" lat_ratio_8B={v('lat_ratio_8B')}"
              f" gloo_busbw_ratio_8MiB={v('gloo_busbw_ratio_8MiB')}"
              f" gloo_busbw_ratio_32MiB={v('gloo_busbw_ratio_32MiB')}"
              f" gloo_lat_ratio_8B={v('gloo_lat_ratio_8B')} wrong={wr}")
    for p in nps:
        z = data[p]["zcoll"]
        if z["why"] or z["partial"]:
            print(f"# zcoll np {p} FAILED: {z['why'] or z['partial']}")
        elif not z["rows"]:
            print(f"# zcoll np {p} FAILED: no table in its output")
    with open(f"{res}/summary.json", "w") as f:
        json.dump({"zcoll_ok": status == 0, "summaries": summaries}, f, indent=1)

    if not a.no_plot:
        try:
            plot(res, nps, data, sections, a.cpu, place, a.reps)
        except Exception as e:  # no plot must never hide the tables or the status
            print(f"# plots: not drawn: {type(e).__name__}: {e}", file=sys.stderr)
    return status


def plot(res, nps, data, sections, cpu, place, reps):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullLocator

    colors = {"zcoll": "tab:red", "mpi": "tab:blue", "gloo-ring": "tab:green", "gloo-hd": "tab:olive"}
    styles = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D", "v"]
    date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    ncpu = os.cpu_count() or 0
    for key in sections:
        suffix = "" if len(sections) == 1 else f"_{key[0]}_{key[1]}"
        for kind in ("busbw", "latency"):
            fig, ax = plt.subplots(figsize=(11, 6.5))
            allsizes = set()
            for pi, p in enumerate(nps):
                for impl, label in IMPLS:
                    rows = data[p][impl]["rows"].get(key, {})
                    pts = []
                    for size in sorted(rows):
                        t = rows[size][0]
                        y = busbw(size, t, p) if kind == "busbw" else t
                        if size > 0 and y:
                            pts.append((size, y))
                    if not pts:
                        continue
                    allsizes.update(x for x, _ in pts)
                    ax.plot([x for x, _ in pts], [y for _, y in pts], color=colors[impl],
                            linestyle=styles[pi % len(styles)], marker=markers[pi % len(markers)],
                            markersize=3.5, linewidth=1.4, label=f"{label} np={p}")
            if not allsizes:
                plt.close(fig)
                continue
            ax.set_xscale("log", base=2)
            if kind == "latency":
                ax.set_yscale("log")
                ax.set_ylabel("time per allreduce (us, blocking, mean over ranks)")
            else:
                ax.set_ylabel("busbw (GB/s) = size/time * 2(p-1)/p")
                ax.set_ylim(bottom=0)
            ticks = sorted(allsizes)  # the measured sizes, thinned to at most 14 labels
            step = max(1, math.ceil(len(ticks) / 14))
            ticks = ticks[::step]
            ax.xaxis.set_major_locator(FixedLocator(ticks))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xticklabels([fmt_size(t) for t in ticks], rotation=45, ha="right")
            ax.set_xlabel("vector size")
            ax.grid(True, which="major", alpha=0.35)
            if kind == "latency":
                ax.grid(True, which="minor", axis="y", alpha=0.12)
            best = f", best of {reps} runs" if reps > 1 else ""
            ax.set_title(f"allreduce {kind}: {key[0]} {key[1]}, zcoll and MPI {place}, Gloo in place{best}\n"
                         f"{cpu or 'unknown CPU'}, {ncpu} cpus, {date}", fontsize=11)
            ax.legend(fontsize=8, ncol=len(nps), loc="best")
            fig.tight_layout()
            fig.savefig(f"{res}/{kind}{suffix}.png", dpi=110)
            plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
