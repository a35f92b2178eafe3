#!/usr/bin/python3
"""The README and path check (ci/readmes.py) passes on the tree and fails where it must.

On a scratch copy of the source tree (no build trees, no .git):
  1. the copy as it is passes;
  2. a file added to lib/core/ that lib/core/README.md does not name fails, naming the
     README, the file and the folder;
  3. a comment in a C file naming a path under lib/core that does not exist fails, naming
     the file, its line and the path;
  4. a line of a doc naming a missing test under tests/ fails the same way;
  5. a README naming a bare file that exists nowhere fails.
So the check cannot pass by finding nothing to check.

Usage: readmes_test.py SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.abspath(sys.argv[1])
failures = []


def check(what, cond, out=""):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
        print(out)


def run(tree):
    r = subprocess.run(["/usr/bin/python3", os.path.join(tree, "ci", "readmes.py"), tree],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def fresh(tmp):
    tree = os.path.join(tmp, "tree")
    shutil.rmtree(tree, ignore_errors=True)
    skip = shutil.ignore_patterns(".git", "build", "build-*", "*.o", "__pycache__")

    def ignore(d, names):  # and perf/results (run output), as .gitignore has it
        return set(skip(d, names)) | ({"results"} if d == os.path.join(SRC, "perf") else set())
    shutil.copytree(SRC, tree, ignore=ignore)
    return tree


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


with tempfile.TemporaryDirectory() as tmp:
    rc, out = run(fresh(tmp))
    check("the tree as it is passes", rc == 0 and "READMEs name their files" in out, out)

    tree = fresh(tmp)
    with open(os.path.join(tree, "lib/core/unnamed.c"), "w") as f:
        f.write("/* unnamed.c -- a file its README does not name */\n")
    rc, out = run(tree)
    check("a file its README misses fails",
          rc == 1 and "lib/core/README.md:" in out and "does not name unnamed.c" in out and
          "lib/core/" in out, out)

    tree = fresh(tmp)
    append(os.path.join(tree, "lib/core/channel.c"), "\n/* see lib/core/gone.c */\n")
    with open(os.path.join(tree, "lib/core/channel.c")) as f:
        line = f.read().count("\n") - 1 + 1
    rc, out = run(tree)
    check("a comment naming a missing path fails, with its line",
          rc == 1 and "lib/core/channel.c:%d: names lib/core/gone.c" % line in out, out)

    tree = fresh(tmp)
    append(os.path.join(tree, "docs/errors.md"), "\nTests: `tests/nowhere/test_x.c`.\n")
    rc, out = run(tree)
    check("a doc naming a missing path fails",
          rc == 1 and "docs/errors.md:" in out and "names tests/nowhere/test_x.c" in out, out)

    tree = fresh(tmp)
    append(os.path.join(tree, "lib/tl/README.md"), "\nSee `vanished.c`.\n")
    rc, out = run(tree)
    check("a README naming a bare file that exists nowhere fails",
          rc == 1 and "lib/tl/README.md:" in out and "names vanished.c" in out, out)

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
