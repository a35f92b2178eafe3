#!/usr/bin/python3
"""Measure every allreduce and broadcast algorithm on this machine and write a selection table.

    perf/tune.py -np "2 4 8" -o zcoll-tuning.txt [-b 8] [-e 64M] [-n 20] [-w 5] [--no-broadcast]
    ZCOLL_TUNING_FILE=zcoll-tuning.txt zcoll_run -np 4 app

For each rank count it runs zcoll_perf once per allreduce algorithm (zcoll_info lists
them) and once per broadcast algorithm (-t broadcast with ZCOLL_BCAST_ALGO=tree, then
chain), over the same sizes, and takes the fastest algorithm at each size: the
allreduce's out-of-place time, the broadcast's in-place one (its only buffer), each the
slowest rank's mean. It writes rules "ranks_min ranks_max max_bytes algorithm" and
"broadcast ranks_min ranks_max max_bytes algorithm" (none with --no-broadcast: the
library then keeps its built-in broadcast rules): a rank count between two measured
ones uses the smaller one's rules, the largest measured count's rules extend to any
count. Uses Debian's python3, standard library.
"""
import argparse
import datetime
import os
import platform
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The library's broadcast algorithms (algorithms/table.c, zcoll__bcast_algos).
BCAST_ALGOS = ["tree", "chain"]


def run(cmd, **kw):
    """A command's stdout; if it fails, what it said on stderr, then exit 1."""
    p = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        sys.exit(f"tune: {' '.join(cmd)}: exit {p.returncode}")
    return p.stdout


def table(text, group):
    """size -> (time in us, algorithm) from a zcoll_perf table: the time column under
    `group` ("out-of-place" or "in-place"), found from the header rows; rows where it
    is N/A are left out."""
    groups, col, rows = [], None, {}
    for line in text.splitlines():
        f = line.split()
        if line.startswith("#"):
            if "out-of-place" in f:
                groups = [w for w in f if w.endswith("place")]
            elif "size" in f and "time" in f and group in groups:
                col = [i - 1 for i, w in enumerate(f) if w == "time"][groups.index(group)]
        elif col is not None and len(f) > col + 1 and re.fullmatch(r"\d+", f[0]):
            try:
                rows[int(f[0])] = (float(f[col]), f[-1])
            except ValueError:
                pass
    if col is None:
        sys.exit(f"tune: no '{group}' time column in zcoll_perf's header:\n{text}")
    return rows


def measure(args, p, coll, algos, env):
    """algorithm -> {size: time} for `coll` on p ranks, one zcoll_perf run per algorithm."""
    times = {}
    for a in algos:
        cmd = [os.path.join(args.build, "zcoll_run"), "-np", str(p),
               os.path.join(args.build, "zcoll_perf"), "-z", "1", "-a", "3", "-b", args.b,
               "-e", args.e, "-f", "2", "-n", args.n, "-w", args.w, "-c", "0"]
        if coll == "broadcast":
            out = run(cmd + ["-t", "broadcast"], env=dict(env, ZCOLL_BCAST_ALGO=a))
            rows = table(out, "in-place")
        else:
            rows = table(run(cmd + ["-A", a], env=env), "out-of-place")
        ran = {r[1] for r in rows.values()}
        if ran != {a}:
            sys.exit(f"tune: p={p} {coll} {a}: zcoll_perf ran {' '.join(sorted(ran)) or 'nothing'}")
        times[a] = {s: r[0] for s, r in rows.items()}
        print(f"tune: p={p} {coll} {a}: {len(times[a])} sizes", file=sys.stderr)
    return times


def rules(times, lo, hi, prefix=""):
    """The rules for ranks lo..hi from measured times: the fastest algorithm at each size
    measured by all, one rule per run of sizes with the same one, the last to any size."""
    algos = list(times)
    sizes = sorted(set.intersection(*(set(t) for t in times.values())))
    best = [(s, min(algos, key=lambda a: times[a][s])) for s in sizes]
    out = []
    for k, (s, a) in enumerate(best):
        last = k == len(best) - 1
        if last or best[k + 1][1] != a:
            out.append(f"{prefix}{lo} {hi} {'inf' if last else s} {a}")
    print(f"tune: {prefix}{lo}..{hi}: " + " ".join(f"{s}:{a}" for s, a in best), file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-np", default="2 4", help="rank counts, space separated")
    ap.add_argument("-o", "--output", default="zcoll-tuning.txt")
    ap.add_argument("-b", default="8")
    ap.add_argument("-e", default="64M")
    ap.add_argument("-n", default="20")
    ap.add_argument("-w", default="5")
    ap.add_argument("--no-broadcast", action="store_true",
                    help="write no broadcast rules (the library keeps its built-in ones)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    args = ap.parse_args()

    if not os.path.exists(os.path.join(args.build, "zcoll_perf")):
        subprocess.run(["cmake", "-S", ROOT, "-B", args.build, "-DCMAKE_BUILD_TYPE=Release",
                        "-DZCOLL_BUILD_TESTS=OFF"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", args.build, "-j"], check=True,
                       stdout=subprocess.DEVNULL)
    info = run([os.path.join(args.build, "zcoll_info")])
    algos = re.search(r"ZCOLL_ALGO: auto (.*)", info).group(1).split()
    nps = sorted(int(x) for x in args.np.split())
    # Every choice is the measurement's: no forced algorithm, no earlier table.
    env = dict(os.environ)
    for var in ("ZCOLL_ALGO", "ZCOLL_BCAST_ALGO", "ZCOLL_TUNING_FILE"):
        env.pop(var, None)

    allreduce, broadcast = [], []
    for i, p in enumerate(nps):
        lo = 1 if i == 0 else p
        hi = "inf" if i == len(nps) - 1 else str(nps[i + 1] - 1)
        allreduce += rules(measure(args, p, "allreduce", algos, env), lo, hi)
        if not args.no_broadcast:
            broadcast += rules(measure(args, p, "broadcast", BCAST_ALGOS, env), lo, hi,
                               "broadcast ")

    with open(args.output, "w") as f:
        f.write("# zcoll selection table: [broadcast] ranks_min ranks_max max_bytes algorithm\n")
        f.write(f"# measured by perf/tune.py on {platform.node()} "
                f"({os.cpu_count()} cores), {datetime.date.today()}, ranks {args.np}\n")
        f.write("\n".join(allreduce + broadcast) + "\n")
    print(f"tune: wrote {args.output}: use it with ZCOLL_TUNING_FILE={os.path.abspath(args.output)}")


if __name__ == "__main__":
    main()
