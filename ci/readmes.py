#!/usr/bin/python3
"""The READMEs name their files, and no comment or doc names a path that is not there.

Two checks over the source tree, each failure printed as FILE:LINE: what is wrong.

1. Every folder that has a README.md (the repository's root aside: its README.md is the
   user's guide, and docs/layout.md names the root's files) names each file of that folder
   in it, as the whole name (`exec_run.c`, not `exec_*.c` or `exec_{run,wait}.c`); a .c
   and the .h of the same stem are one unit, either name covers both (`log.h`). Not
   counted as the folder's files: README.md itself, hidden files (.gitignore, ...),
   files and folders the root .gitignore ignores (build trees, *.o, __pycache__,
   perf/results, generated fault_matrix*.md), *.pyc, and subfolders (each names its own
   files in its own README.md). The failure's line is the README's last line.
2. No comment names a path that does not exist: comments of .c, .h, .cc (// and /* */),
   of .py (# and triple-quoted strings), of shell files (.sh, .bash, .awk, files whose
   first line is a #! shell) and of CMake files (#), and every line of a .md file and of a
   man page source (man/) -- a doc is all comment. A path is a word whose first component
   is a top-level folder of the repository (`lib/core/channel.c`, `tests/progs/`,
   `docs/errors.md`, `ci/test.sh`), not preceded by `/`, `.`, `$` or a letter (so
   `build/ci/tests/test_verbs`, `/usr/lib/x` and `$src/tests/x` are not checked). It
   exists if it names a file or folder relative to the root or to the naming file's own
   folder; `*`, `?`, `<placeholder>` and `{a,b}` are patterns that must match something.
   In a README.md, a bare file name (`log.c`, `setup.py`: a word with one of EXTS and no
   `/`) must also exist: in the README's folder or below it, or anywhere in the tree (code
   blocks aside: their names are a command's arguments). Paths under a folder .gitignore
   ignores (`perf/build/...`, `perf/results/...`) are what builds and runs make and are not
   checked; a path without an extension may name a program by its source
   (`examples/asgd` is examples/asgd.c).

Usage: ci/readmes.py [SOURCE_DIR]   (exit 1 on any failure; the tree takes well under 2 s)
"""
import fnmatch
import os
import re
import sys

C_EXT = (".c", ".h", ".cc", ".cpp")
HASH_EXT = (".py", ".sh", ".bash", ".awk", ".cmake")
EXTS = ("c", "h", "cc", "py", "sh", "md", "txt", "cmake", "supp", "awk", "json", "toml")
BARE = re.compile(r"(?<![\w./$<{*-])([A-Za-z0-9_][\w-]*\.(?:%s))(?![\w/-]|\.\w)" % "|".join(EXTS))
C_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# Where a library installs (`lib/python3.X/site-packages` under a prefix), not this tree.
NOT_REPO = re.compile(r"lib/python3")
# A program is named by the source it is built from: examples/asgd is examples/asgd.c.
PROGRAM_EXT = (".c", ".cc", ".py", ".sh")
PY_STRING = re.compile(r'"""(.*?)"""|\'\'\'(.*?)\'\'\'', re.S)


def ignores(src):
    """The root .gitignore's patterns: (folder patterns, file patterns), '/x' anchored."""
    dirs, files = [".*", "__pycache__"], [".*", "*.pyc", "README.md"]
    try:
        with open(os.path.join(src, ".gitignore")) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if line.endswith("/"):
                    dirs.append(line.rstrip("/"))
                else:
                    files.append(line)
    except OSError:
        pass
    return dirs, files


def ignored(rel, patterns):
    name = os.path.basename(rel)
    for p in patterns:
        if p.startswith("/"):
            if fnmatch.fnmatch(rel, p[1:]):
                return True
        elif fnmatch.fnmatch(name, p):
            return True
    return False


def walk(src):
    """{folder (relative): [file names]} of the tree, ignored ones left out."""
    dirpats, filepats = ignores(src)
    tree = {}
    for d, subdirs, names in os.walk(src):
        rel = os.path.relpath(d, src)
        rel = "" if rel == "." else rel
        subdirs[:] = sorted(s for s in subdirs
                            if not ignored(os.path.join(rel, s), dirpats))
        tree[rel] = sorted(n for n in names if n == "README.md" or
                           not ignored(os.path.join(rel, n), filepats))
    return tree


def comments(path, text):
    """[(line number, text)] of the parts of a file that are prose about the code."""
    name = os.path.basename(path)
    if name.endswith(".md") or path.startswith("man" + os.sep):
        return list(enumerate(text.split("\n"), 1))
    spans = []
    if name.endswith(C_EXT):
        spans = [(m.start(), m.group(0)) for m in C_COMMENT.finditer(text)]
    elif (name.endswith(HASH_EXT) or name == "CMakeLists.txt" or
          re.match(r"#!.*\b(ba)?sh\b", text)):
        if name.endswith(".py"):
            spans = [(m.start(), m.group(0)) for m in PY_STRING.finditer(text)]
        for m in re.finditer(r"(?m)(?:^|\s)(#[^\n]*)", text):
            if not m.group(1).startswith(("#!", "#include")):
                spans.append((m.start(1), m.group(1)))
    out = []
    for start, body in spans:
        first = text.count("\n", 0, start) + 1
        out.extend((first + i, line) for i, line in enumerate(body.split("\n")))
    return out


def expand(word):
    """A path word as shell-like patterns: {a,b} expanded, <placeholder> as *."""
    word = re.sub(r"<[^<>/]*>", "*", word)
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    out = []
    for alt in m.group(1).split(","):
        out.extend(expand(word[:m.start()] + alt + word[m.end():]))
    return out


def exists(src, tree, base, word):
    """Does `word` name something relative to the root or to the folder `base`?"""
    for pat in expand(word):
        pat = pat.rstrip("/")
        for root in ("", base):
            rel = os.path.normpath(os.path.join(root, pat))
            if not re.search(r"[*?\[]", rel):
                if any(os.path.exists(os.path.join(src, rel + e)) for e in ("",) + (
                        PROGRAM_EXT if "." not in os.path.basename(rel) else ())):
                    break
            else:
                d, n = os.path.split(rel)
                if re.search(r"[*?\[]", d):
                    # a pattern in a folder part: match the whole relative path
                    paths = [os.path.join(k, f) for k in tree for f in tree[k] + [""]]
                    if any(fnmatch.fnmatch(p.rstrip("/"), rel) for p in paths):
                        break
                elif d in tree and (fnmatch.filter(tree[d], n) or any(
                        fnmatch.fnmatch(os.path.basename(s), n) for s in tree
                        if s and os.path.dirname(s) == d)):
                    break
        else:
            return False
    return True


def trim(word):
    """A path word without the punctuation of the sentence around it."""
    while True:
        w = word.rstrip(".,;:'`\"")
        for o, c in ("()", "<>", "{}"):
            if w.endswith(c) and w.count(o) < w.count(c):
                w = w[:-1]
        if w == word:
            return w
        word = w


def generated(word, dirpats):
    """Is the path under a folder .gitignore ignores (perf/build, perf/results/...)?"""
    parts = word.split("/")
    return any(ignored("/".join(parts[:i + 1]), dirpats) for i in range(len(parts)))


def main(src):
    src = os.path.abspath(src)
    tree = walk(src)
    dirpats = ignores(src)[0]
    tops = sorted(os.path.basename(k) for k in tree if k and os.sep not in k)
    path_word = re.compile(r"(?<![\w./$<{*@~-])((?:%s)/[\w./*?<>{},+-]*)" %
                           "|".join(re.escape(t) for t in tops))
    everywhere = {n for names in tree.values() for n in names}
    fails = []

    for d in sorted(tree):
        if d == "" or "README.md" not in tree[d]:
            continue
        readme = os.path.join(d, "README.md")
        with open(os.path.join(src, readme), errors="replace") as f:
            text = f.read()
        last = text.count("\n") or 1
        for n in tree[d]:
            if n == "README.md":
                continue
            stem, ext = os.path.splitext(n)
            alts = [n] + ([stem + (".h" if ext == ".c" else ".c")] if ext in (".c", ".h") else [])
            if not any(re.search(r"(?<![\w.-])%s(?![\w-]|\.\w)" % re.escape(a), text)
                       for a in alts):
                fails.append("%s:%d: does not name %s, a file of %s/" %
                             (readme, last, n, d))
        below = {n for k in tree if k == d or k.startswith(d + os.sep) for n in tree[k]}
        fence = False
        for i, line in enumerate(text.split("\n"), 1):
            if line.lstrip().startswith("```"):
                fence = not fence
            if fence or line.startswith("    "):
                continue  # a command's arguments (A.txt), not a file of the tree
            for m in BARE.finditer(line):
                n = m.group(1)
                if n not in below and n not in everywhere:
                    fails.append("%s:%d: names %s, which is not in %s/ nor anywhere in the"
                                 " tree" % (readme, i, n, d))

    for d in sorted(tree):
        for n in tree[d]:
            rel = os.path.join(d, n)
            try:
                with open(os.path.join(src, rel), errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            if "\0" in text[:4096]:
                continue
            for i, line in comments(rel, text):
                for m in path_word.finditer(line):
                    word = trim(m.group(1))
                    if word.count("/") == 1 and word.endswith("/") or NOT_REPO.match(word):
                        continue  # a top-level folder alone, or an install path
                    if generated(word, dirpats):
                        continue
                    if not exists(src, tree, d, word):
                        fails.append("%s:%d: names %s, which does not exist" % (rel, i, word))

    for f in fails:
        print(f)
    if fails:
        print("ci/readmes.py: %d stale or missing name(s)" % len(fails), file=sys.stderr)
        return 1
    print("ci/readmes.py: %d READMEs name their files; no comment or doc names a missing path"
          % sum(1 for d in tree if d and "README.md" in tree[d]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else
                  os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
