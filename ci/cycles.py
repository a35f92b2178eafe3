#!/usr/bin/python3
"""Calls go down only: the circles of C files that call each other, and the calls uphill,
from a build's object files.

A -> B when A's object uses (nm: undefined) a symbol that B's object defines: a non-static
function or global. Over the objects of lib/, algorithms/ and transports/. The script fails

  - when a file calls one of a layer above its own, or of a layer beside it: B's layer must be
    A's own or one that A's layer may include, directly or through the layers under it (the
    layers and their order are ci/layers.py's, from the READMEs' "May include" lines;
    algorithms/ and transports/ are layers of their own). A lower layer that needs a higher
    one's work takes a function pointer from it instead;
  - when the largest circle (strongly connected component of the graph) has more than LIMIT
    files. It prints every circle of more than one file, largest first.

Usage: ci/cycles.py BUILD_DIR [LIMIT]      (LIMIT: 3)
"""
import collections
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layers  # noqa: E402  (ci/layers.py: the layers and what each may include)

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


def below(src):
    """({layer: its folder}, {layer: the layers it may call: itself and all under it})."""
    lays = layers.layers(src)
    errors = []
    may = layers.allowed(src, lays, errors)
    layers.order(may, errors)
    if errors:
        sys.exit("cycles.py: the layers are not in order (run ci/layers.py): " + errors[0])
    reach = {}
    for name in lays:
        seen, todo = {name}, [name]
        while todo:
            for m in may[todo.pop()]:
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        reach[name] = seen
    return lays, reach


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 3
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
    calls = collections.defaultdict(set)  # (from, to): the symbols
    for src in objs:
        for s in uses[src]:
            if s in owner and owner[s] != src:
                edges[src].add(owner[s])
                calls[(src, owner[s])].add(s)
    lays, reach = below(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    uphill = []
    for (a, b), syms in sorted(calls.items()):
        la, lb = layers.layer_of(a, lays), layers.layer_of(b, lays)
        if la and lb and lb not in reach[la]:
            uphill.append(f"{a} ({la}) calls {b} ({lb}): {', '.join(sorted(syms))}")
    comps = sorted((c for c in sccs(sorted(objs), edges) if len(c) > 1),
                   key=lambda c: (-len(c), c))
    largest = len(comps[0]) if comps else 1
    print(f"cycles: {len(objs)} C files; largest circle of files that call each other: "
          f"{largest} (limit {limit})")
    for c in comps:
        print(f"  {len(c)}: {' '.join(re.sub(r'[.]c$', '', x) for x in c)}")
    for u in uphill:
        print(f"cycles: FAIL: a call uphill or sideways: {u}")
    if largest > limit:
        print(f"cycles: FAIL: a circle of {largest} files is over the limit of {limit}")
    return 1 if uphill or largest > limit else 0


if __name__ == "__main__":
    sys.exit(main())
