#!/usr/bin/python3
"""The layering check: a folder of the library includes only the folders it may.

The library's folders are its layers: lib/<layer>/, algorithms/ and transports/ (with one
folder per transport). Each has a README.md whose line

    May include: base, tl

names the layers its files may include (include/zcoll.h and system headers always). The
check reads every `#include "..."` of every .c and .h file in those folders, resolves it
(the including file's own folder, then lib/, then the top of the tree, as the compiler's
-I order does), and fails on

  - an include of a folder that is not in the includer's "May include" line (an upward or
    sideways include), or of a header it cannot find;
  - a cycle among the "May include" lines themselves (two layers that may include each
    other are one layer).

It prints the layers in order, lowest first. Usage: ci/layers.py [SOURCE_DIR]
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
MAY = re.compile(r"^May include:\s*(.*)$", re.M)


def layers(src):
    """{layer name: its folder}, from lib/*/, algorithms/ and transports/."""
    out = {}
    lib = os.path.join(src, "lib")
    for d in sorted(os.listdir(lib)):
        if os.path.isdir(os.path.join(lib, d)):
            out[d] = os.path.join("lib", d)
    out["algorithms"] = "algorithms"
    out["transports"] = "transports"
    return out


def layer_of(rel, lays):
    """The layer a path (relative to the source tree) lies in, or None."""
    for name, folder in lays.items():
        if rel == folder or rel.startswith(folder + "/"):
            return name
    return None


def allowed(src, lays, errors):
    may = {}
    for name, folder in lays.items():
        readme = os.path.join(src, folder, "README.md")
        try:
            text = open(readme).read()
        except OSError:
            errors.append(f"{folder}/README.md: missing (it says what the layer owns and "
                          "what it may include)")
            may[name] = set()
            continue
        m = MAY.search(text)
        if not m:
            errors.append(f"{folder}/README.md: no 'May include:' line")
            may[name] = set()
            continue
        names = {x.strip() for x in m.group(1).split(",") if x.strip() and x.strip() != "-"}
        for x in sorted(names - set(lays)):
            errors.append(f"{folder}/README.md: 'May include' names {x}, which is no layer")
        may[name] = names & set(lays)
    return may


def order(may, errors):
    """The layers lowest first; a cycle among them is an error."""
    done, out, state = set(), [], {}

    def visit(n, path):
        if state.get(n) == 1:
            errors.append("layers that may include each other: " +
                          " -> ".join(path[path.index(n):] + [n]))
            return
        if n in done:
            return
        state[n] = 1
        for m in sorted(may[n]):
            visit(m, path + [n])
        state[n] = 2
        done.add(n)
        out.append(n)

    for n in sorted(may):
        visit(n, [])
    return out


def resolve(src, rel_file, inc):
    """The included file relative to src, as the compiler finds it, or None."""
    for base in (os.path.dirname(rel_file), "lib", "", "include"):
        cand = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(src, cand)):
            return cand
    return None


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                          os.path.join(os.path.dirname(__file__), ".."))
    lays = layers(src)
    errors = []
    may = allowed(src, lays, errors)
    ranked = order(may, errors)
    nfiles = nincs = 0
    for name, folder in lays.items():
        for d, _, files in os.walk(os.path.join(src, folder)):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(d, f)
                rel = os.path.relpath(path, src)
                nfiles += 1
                for inc in INCLUDE.findall(open(path, errors="replace").read()):
                    nincs += 1
                    got = resolve(src, rel, inc)
                    if got is None:
                        errors.append(f"{rel}: #include \"{inc}\": no such file in its folder, "
                                      "lib/ or the top of the tree")
                        continue
                    to = layer_of(got, lays)
                    if to is None or to == name:
                        continue  # include/, or its own layer
                    if to not in may[name]:
                        errors.append(f"{rel}: #include \"{inc}\": {name} may not include {to} "
                                      f"({lays[name]}/README.md: May include: "
                                      f"{', '.join(sorted(may[name])) or 'nothing'})")
    print(f"layers: {nfiles} files, {nincs} includes; lowest first: {' < '.join(ranked)}")
    for e in errors:
        print("layers: FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
