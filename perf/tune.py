#!/usr/bin/python3
"""Measure every allreduce algorithm on this machine and write a selection table.

    perf/tune.py -np "2 4 8" -o zcoll-tuning.txt [-b 8] [-e 64M] [-n 20] [-w 5]
    ZCOLL_TUNING_FILE=zcoll-tuning.txt zcoll_run -np 4 app

For each rank count it runs zcoll_perf once per algorithm (zcoll_info lists them), in
the same invocation, takes the fastest algorithm at each size (out-of-place time, the
slowest rank's mean), and writes rules "ranks_min ranks_max max_bytes algorithm": a
rank count between two measured ones uses the smaller one's rules, the largest
measured count's rules extend to any count. Uses Debian's python3, standard library.
"""
import argparse
import datetime
import os
import platform
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def table(text):
    """size -> out-of-place time (us) from a zcoll_perf table."""
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 13 and re.fullmatch(r"\d+", f[0]) and not line.startswith("#"):
            rows[int(f[0])] = float(f[5])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-np", default="2 4", help="rank counts, space separated")
    ap.add_argument("-o", "--output", default="zcoll-tuning.txt")
    ap.add_argument("-b", default="8")
    ap.add_argument("-e", default="64M")
    ap.add_argument("-n", default="20")
    ap.add_argument("-w", default="5")
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
    env = dict(os.environ)
    env.pop("ZCOLL_ALGO", None)
    env.pop("ZCOLL_TUNING_FILE", None)

    rules = []
    for i, p in enumerate(nps):
        times = {}
        for a in algos:
            out = run([os.path.join(args.build, "zcoll_run"), "-np", str(p),
                       os.path.join(args.build, "zcoll_perf"), "-A", a, "-z", "1", "-a", "3", "-b", args.b,
                       "-e", args.e, "-f", "2", "-n", args.n, "-w", args.w, "-c", "0"], env=env)
            times[a] = table(out)
            print(f"tune: p={p} {a}: {len(times[a])} sizes", file=sys.stderr)
        sizes = sorted(set.intersection(*(set(t) for t in times.values())))
        best = [(s, min(algos, key=lambda a: times[a][s])) for s in sizes]
        lo = 1 if i == 0 else p
        hi = "inf" if i == len(nps) - 1 else str(nps[i + 1] - 1)
        for k, (s, a) in enumerate(best):
            last = k == len(best) - 1
            if last or best[k + 1][1] != a:
                rules.append(f"{lo} {hi} {'inf' if last else s} {a}")
        print("tune: p=%d: %s" % (p, " ".join(f"{s}:{a}" for s, a in best)), file=sys.stderr)

    with open(args.output, "w") as f:
        f.write(f"# zcoll selection table: ranks_min ranks_max max_bytes algorithm\n")
        f.write(f"# measured by perf/tune.py on {platform.node()} "
                f"({os.cpu_count()} cores), {datetime.date.today()}, ranks {args.np}\n")
        f.write("\n".join(rules) + "\n")
    print(f"tune: wrote {args.output}: use it with ZCOLL_TUNING_FILE={os.path.abspath(args.output)}")


if __name__ == "__main__":
    main()
