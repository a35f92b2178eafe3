#!/usr/bin/python3
"""perf/tune.py writes a selection table the library takes as it was meant.

perf/tune.py runs against the build with tiny sizes and counts (-np "2 3", 8 bytes to
4K), then:
1. the table has allreduce and broadcast rules; each names an algorithm zcoll has
   (zcoll_info's list for the allreduce; tree or chain for the broadcast); each
   collective's rank ranges are 1..2 and 3..inf, in that order, and within each range
   max_bytes grows and ends at inf, so that every rank count and size has a rule.
2. the library takes it: with ZCOLL_TUNING_FILE set, zcoll_info -s -np P (P = 2, 3)
   reports for every size the algorithm and the file's line that this test's own reading
   of the table picks (the first rule of the collective covering P and the size), and
   under ZCOLL_LOG=info each broadcast of zcoll_perf -t broadcast names that line too.
3. a table with a bad line (an allreduce algorithm in a broadcast rule, a rule without
   its size) is refused by zcoll_info with a message naming the file and the line.
4. --no-broadcast writes allreduce rules only.

Usage: tune_test.py BUILD_DIR SOURCE_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

BUILD, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
NPS = [2, 3]
RANGES = [(1, 2), (3, None)]  # what -np "2 3" must give: None is inf
BCAST_ALGOS = {"tree", "chain"}
# No choice of the caller's may leak into the runs: each sets what it needs.
ENV = {k: v for k, v in os.environ.items() if not k.startswith("ZCOLL_")}
failures = []
ONEHOST_MAX_BYTES = 512  # ZCOLL_ONEHOST_MAX_BYTES: zcoll_info says "onehost" up to it


def fail(what):
    failures.append(what)
    print("FAIL:", what, flush=True)


def run(cmd, env=None, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(ENV, **(env or {})))


def tune(path, *extra):
    r = run([sys.executable, os.path.join(SRC, "perf", "tune.py"), "--build", BUILD,
             "-b", "8", "-e", "4K", "-n", "3", "-w", "1", "-o", path, *extra])
    if r.returncode:
        sys.exit(f"tune_test: perf/tune.py {' '.join(extra)} exited {r.returncode}:\n"
                 f"{r.stdout}{r.stderr}")


def read_table(path):
    """The rules of a table: dicts of coll, lo, hi (None: inf), max (None: inf), algo, line."""
    rules = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            w = line.split("#")[0].split()
            if not w:
                continue
            coll = "allreduce"
            if w[0] in ("allreduce", "broadcast"):
                coll, w = w[0], w[1:]
            if len(w) != 4 or not re.fullmatch(r"\d+", w[0]) or \
                    not all(re.fullmatch(r"\d+|inf", x) for x in w[1:3]):
                fail(f"{path} line {n}: not '[broadcast] lo hi max_bytes algorithm': {line!r}")
                continue
            inf = lambda x: None if x == "inf" else int(x)
            rules.append(dict(coll=coll, lo=int(w[0]), hi=inf(w[1]), max=inf(w[2]),
                              algo=w[3], line=n))
    return rules


def pick(rules, coll, p, size):
    """The first rule of coll covering p ranks and size bytes, as the library reads it."""
    for r in rules:
        if r["coll"] == coll and r["lo"] <= p and (r["hi"] is None or p <= r["hi"]) and \
                (r["max"] is None or size <= r["max"]):
            return r
    return None


def span(lo, hi):
    return f"{lo}..{'inf' if hi is None else hi}"


def expected(want, path):
    return f"{want['algo']} from {path} line {want['line']}" if want else "a rule of the file"


def check_rules(rules, algos, path):
    for coll, known in (("allreduce", algos), ("broadcast", BCAST_ALGOS)):
        mine = [r for r in rules if r["coll"] == coll]
        if not mine:
            fail(f"{path}: no {coll} rules")
            continue
        for r in mine:
            if r["algo"] not in known:
                fail(f"{path} line {r['line']}: {coll} algorithm {r['algo']} is none of "
                     f"{' '.join(sorted(known))}")
        ranges = []
        for r in mine:
            if (r["lo"], r["hi"]) not in ranges:
                ranges.append((r["lo"], r["hi"]))
        if ranges != RANGES:
            fail(f"{path}: {coll} rank ranges {' '.join(span(*r) for r in ranges)}, not "
                 f"{' '.join(span(*r) for r in RANGES)}")
        for lo, hi in ranges:
            sizes = [r["max"] for r in mine if (r["lo"], r["hi"]) == (lo, hi)]
            finite = sizes[:-1]
            if sizes[-1] is not None or None in finite or finite != sorted(set(finite)):
                fail(f"{path}: {coll} ranks {span(lo, hi)}: max_bytes {sizes} do not grow "
                     "to inf (None)")


def check_info(rules, path):
    """zcoll_info -s reports, per size, the algorithm and line this reading picks."""
    for p in NPS:
        r = run([os.path.join(BUILD, "zcoll_info"), "-s", "-np", str(p), "-b", "8", "-e", "4K"],
                {"ZCOLL_TUNING_FILE": path})
        if r.returncode:
            fail(f"zcoll_info -s -np {p} refused {path}: {r.stderr.strip()}")
            continue
        rows = [l.split(None, 4) for l in r.stdout.splitlines() if re.match(r"\s*\d+\s", l)]
        if len(rows) != 10:
            fail(f"zcoll_info -s -np {p}: {len(rows)} sizes, not 10 (8..4K):\n{r.stdout}")
        for size, algo, _, _, why in rows:
            want = pick(rules, "allreduce", p, int(size))
            if int(size) <= ONEHOST_MAX_BYTES:
                # blocking calls of one host go through the mailboxes; a request still
                # runs the table's choice (lib/core/onehost.h)
                if not want or algo != "onehost" or f"a request runs {want['algo']})" not in why:
                    fail(f"zcoll_info -s -np {p}, {size} bytes: {algo} ({why}); expected "
                         f"onehost, a request running {expected(want, path)}")
                continue
            if not want or algo != want["algo"] or \
                    not why.startswith(f"{path} line {want['line']}:"):
                fail(f"zcoll_info -s -np {p}, {size} bytes: {algo} ({why}); expected "
                     f"{expected(want, path)}")


def check_broadcast_log(rules, path):
    """Each broadcast of zcoll_perf -t broadcast logs the line this reading picks."""
    for p in NPS:
        r = run([os.path.join(BUILD, "zcoll_run"), "-np", str(p), os.path.join(BUILD, "zcoll_perf"),
                 "-t", "broadcast", "-b", "8", "-e", "4K", "-n", "1", "-w", "0", "-c", "0", "-z", "1"],
                {"ZCOLL_TUNING_FILE": path, "ZCOLL_LOG": "info", "ZCOLL_LOG_SUBSYS": "coll"})
        # One line per rank and broadcast: each distinct one is checked once.
        logged = set(re.findall(r"broadcast of (\d+) x float32 from rank \d+ on (\d+) ranks: "
                                r"(\w+) \((.*)\)", r.stdout + r.stderr))
        seen = set()
        for count, ranks, algo, why in sorted(logged, key=lambda m: int(m[0])):
            size = int(count) * 4
            want = pick(rules, "broadcast", p, size)
            seen.add(size)
            if int(ranks) != p or not want or algo != want["algo"] or \
                    not why.startswith(f"{path} line {want['line']}:"):
                fail(f"zcoll_perf -t broadcast on {p} ranks, {size} bytes: {algo} on {ranks} "
                     f"ranks ({why}); expected {expected(want, path)}")
        if r.returncode or len(seen) != 10:
            fail(f"zcoll_perf -t broadcast on {p} ranks: exit {r.returncode}, logged "
                 f"{len(seen)} of 10 sizes:\n{r.stdout}{r.stderr}")


def check_refused(rules, path, work):
    """A bad line makes zcoll_info refuse the table, naming the line."""
    lines = open(path).read().splitlines(True)
    words = lambda r: lines[r["line"] - 1].split()
    first = rules[0]
    bad = [(first["line"], words(first)[:2] + words(first)[3:])]  # no max_bytes
    for r in rules:
        if r["coll"] == "broadcast":  # an allreduce algorithm in a broadcast rule
            bad.append((r["line"], words(r)[:-1] + ["ring"]))
            break
    for n, w in bad:
        text = " ".join(w)
        broken = os.path.join(work, f"broken-{n}.txt")
        with open(broken, "w") as f:
            f.writelines(lines[:n - 1] + [text + "\n"] + lines[n:])
        r = run([os.path.join(BUILD, "zcoll_info"), "-s", "-np", "3", "-b", "8", "-e", "4K"],
                {"ZCOLL_TUNING_FILE": broken})
        if r.returncode == 0 or f"{broken} line {n}:" not in r.stderr:
            fail(f"zcoll_info took {broken} (line {n}: {text!r}): exit {r.returncode}, "
                 f"stderr {r.stderr.strip()!r}")


def main():
    info = run([os.path.join(BUILD, "zcoll_info")]).stdout
    algos = set(re.search(r"accepts for ZCOLL_ALGO: auto (.*)", info)[1].split())
    with tempfile.TemporaryDirectory(prefix="zcoll-tune-test.") as work:
        path = os.path.join(work, "tuning.txt")
        tune(path, "-np", " ".join(map(str, NPS)))
        print(open(path).read(), end="", flush=True)
        rules = read_table(path)
        check_rules(rules, algos, path)
        check_info(rules, path)
        check_broadcast_log(rules, path)
        check_refused(rules, path, work)
        plain = os.path.join(work, "no-broadcast.txt")
        tune(plain, "-np", "2", "--no-broadcast")
        kinds = {r["coll"] for r in read_table(plain)}
        if kinds != {"allreduce"}:
            fail(f"tune.py --no-broadcast wrote {' and '.join(sorted(kinds)) or 'no'} rules")
    if failures:
        sys.exit(f"tune_test: {len(failures)} failure(s)")
    print("tune_test: ok")


if __name__ == "__main__":
    main()
