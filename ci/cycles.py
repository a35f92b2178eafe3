#!/usr/bin/python3
"""The largest circle of C files that call each other, from a build's object files.

A -> B when A's object uses (nm: undefined) a symbol that B's object defines: a non-static
function or global. Over the objects of lib/, algorithms/ and transports/. The strongly
connected components of that graph are the circles; the script prints every circle of more
than one file, largest first, and fails when the largest has more than LIMIT files.

Usage: ci/cycles.py BUILD_DIR [LIMIT]      (LIMIT: 8)
"""
import collections
import os
import re
import subprocess
import sys

DIRS = ("lib", "algorithms", "transports")


def objects(build):
    root = os.path.join(build, "CMakeFiles", "zcoll_objs.dir")
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            rel = os.path.relpath(os.path.join(d, f[:-2]), root)
            if rel.split(os.sep)[0] in DIRS:
                out[rel] = os.path.join(d, f)
    return out


def symbols(obj):
    """(defined, used): the object's global symbols, and those it needs from elsewhere."""
    text = subprocess.run(["nm", "-P", obj], capture_output=True, text=True,
                          check=True).stdout
    defined, used = set(), set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind in "TDBRVWGS" and kind.isupper():
            defined.add(name)
    return defined, used


def sccs(nodes, edges):
    """Tarjan's algorithm, iterative: the strongly connected components."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    objs = objects(build)
    if not objs:
        sys.exit(f"cycles.py: no objects of {', '.join(DIRS)} under {build}: build it first")
    owner, uses = {}, {}
    for src, obj in objs.items():
        defined, used = symbols(obj)
        for s in defined:
            owner[s] = src
        uses[src] = used
    edges = collections.defaultdict(set)
    for src in objs:
        edges[src] = {owner[s] for s in uses[src] if s in owner and owner[s] != src}
    comps = sorted((c for c in sccs(sorted(objs), edges) if len(c) > 1),
                   key=lambda c: (-len(c), c))
    largest = len(comps[0]) if comps else 1
    print(f"cycles: {len(objs)} C files; largest circle of files that call each other: "
          f"{largest} (limit {limit})")
    for c in comps:
        print(f"  {len(c)}: {' '.join(re.sub(r'[.]c$', '', x) for x in c)}")
    if largest > limit:
        print(f"cycles: FAIL: a circle of {largest} files is over the limit of {limit}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
