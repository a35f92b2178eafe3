#!/usr/bin/python3
"""The layering check (ci/layers.py) passes on the tree and fails where it must.

On a scratch copy of lib/, algorithms/ and transports/ (sources and READMEs):
  1. the copy as it is passes;
  2. an upward include planted in a lower layer (base including coll) fails, naming the
     file, the include and the rule;
  3. a header that does not exist fails;
  4. two layers whose "May include" lines name each other fail as a cycle;
  5. a layer without a "May include" line fails.
And ci/cycles.py on this build: the largest circle of C files calling each other is within
its limit, and a limit below it fails.

Usage: layers_test.py SOURCE_DIR BUILD_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

SRC, BUILD = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
LAYERS = os.path.join(SRC, "ci", "layers.py")
failures = []


def check(what, cond, out=""):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
        print(out)


def layers(tree):
    r = subprocess.run(["/usr/bin/python3", LAYERS, tree], capture_output=True, text=True,
                       timeout=120)
    return r.returncode, r.stdout + r.stderr


def fresh(tmp):
    tree = os.path.join(tmp, "tree")
    shutil.rmtree(tree, ignore_errors=True)
    for d in ("lib", "algorithms", "transports", "include"):
        shutil.copytree(os.path.join(SRC, d), os.path.join(tree, d),
                        ignore=shutil.ignore_patterns("*.o", "__pycache__"))
    return tree


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


with tempfile.TemporaryDirectory() as tmp:
    rc, out = layers(fresh(tmp))
    check("the tree as it is passes", rc == 0 and "lowest first: base" in out, out)

    tree = fresh(tmp)
    append(os.path.join(tree, "lib/base/log.c"), '\n#include "coll/tasks.h"\n')
    rc, out = layers(tree)
    check("an upward include (base -> coll) fails, naming file and rule",
          rc == 1 and 'lib/base/log.c: #include "coll/tasks.h": base may not include coll' in out,
          out)

    tree = fresh(tmp)
    append(os.path.join(tree, "transports/shm/ep.c"), '\n#include "core/exec.h"\n')
    rc, out = layers(tree)
    check("a transport including the core fails",
          rc == 1 and "transports may not include core" in out, out)

    tree = fresh(tmp)
    append(os.path.join(tree, "lib/core/place.c"), '\n#include "nonesuch.h"\n')
    rc, out = layers(tree)
    check("an include of a missing header fails", rc == 1 and "nonesuch.h" in out, out)

    tree = fresh(tmp)
    p = os.path.join(tree, "lib/base/README.md")
    text = open(p).read().replace("May include: -", "May include: kernels")
    open(p, "w").write(text)
    rc, out = layers(tree)
    check("layers that may include each other fail as a cycle",
          rc == 1 and "layers that may include each other" in out, out)

    tree = fresh(tmp)
    p = os.path.join(tree, "lib/tl/README.md")
    text = "\n".join(l for l in open(p).read().split("\n") if not l.startswith("May include"))
    open(p, "w").write(text)
    rc, out = layers(tree)
    check("a layer without a 'May include' line fails",
          rc == 1 and "lib/tl/README.md: no 'May include:' line" in out, out)

cycles = os.path.join(SRC, "ci", "cycles.py")
r = subprocess.run(["/usr/bin/python3", cycles, BUILD], capture_output=True, text=True,
                   timeout=300)
check("ci/cycles.py: the largest circle is within its limit (8)", r.returncode == 0,
      r.stdout + r.stderr)
largest = None
for line in r.stdout.splitlines():
    if "largest circle" in line:
        largest = int(line.split(":")[-1].split("(")[0])
check("ci/cycles.py prints the largest circle", largest is not None and largest >= 2, r.stdout)
if largest:
    r = subprocess.run(["/usr/bin/python3", cycles, BUILD, str(largest - 1)],
                       capture_output=True, text=True, timeout=300)
    check("ci/cycles.py fails with a limit below the largest circle",
          r.returncode == 1 and "FAIL" in r.stdout, r.stdout)

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("all passed")
