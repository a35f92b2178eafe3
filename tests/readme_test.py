#!/usr/bin/python3
"""The README and docs/*.md cannot drift from the code, and the README stays short.

1. Every fenced C block of README.md and docs/*.md (and of include/zcoll.h's comments, if it
   has any) is
   compiled against the *installed* library (a scratch prefix, pkg-config only) with
   -std=c11 -Wall -Wextra -Werror. A complete program (it has a main) is then run under the
   installed zcoll_run -np 2 and must exit 0. A fragment must be preceded by an HTML
   comment `<!-- doc-test context: ... -->` that declares what it uses; it is compiled as
   the body of a function after that context (compile only: it is not a program).
2. Every command line these pages show for zcoll_perf, zcoll_run and zcoll_info (inline
   code spans and lines of shell blocks that start with the tool), and every option span
   (`-z 0|1`, `--blocking`) in the zcoll_perf and zcoll_info items of a tools list, is
   accepted by the built tool: placeholders (N, SIZE, FILE, ...) get a sample value, the
   first of "0|1" is taken, [optional] parts are kept; zcoll_perf and zcoll_info parse
   the options and stop at -h, zcoll_run starts `true` with them.
3. README.md has at most README_MAX_LINES lines: it is the user's guide, and the details
   (fault matrix, figures, every option) live in docs/, linked from it.
5. Every fenced block preceded by `<!-- doc-test file: PATH -->` is PATH's code as it is
   (PATH relative to the source tree; its leading docstring or comment lines aside), and
   PATH is an example a test runs: the page cannot show what the example no longer does.
4. Every relative link of these pages ([text](path), [text](path#anchor), [text](#anchor))
   points to a file that exists and, for a .md file, to a heading of it (GitHub's slugs).

Usage: readme_test.py BUILD_DIR SOURCE_DIR [EXTRA_CFLAGS]
"""
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

BUILD, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
EXTRA = sys.argv[3].split() if len(sys.argv) > 3 and sys.argv[3] else []
TOOLS = ("zcoll_perf", "zcoll_run", "zcoll_info")
README_MAX_LINES = 400
failures = []


def pages():
    """The pages checked, relative to SRC: README.md, then docs/*.md."""
    docs = sorted(os.path.relpath(p, SRC) for p in glob.glob(os.path.join(SRC, "docs", "*.md")))
    return ["README.md"] + docs


def read(page):
    with open(os.path.join(SRC, page)) as f:
        return f.read()


def fail(what):
    failures.append(what)
    print("FAIL:", what, flush=True)


WORK = None  # the scratch directory: tools run there, so files they write go nowhere else


def run(cmd, timeout=120, **kw):
    kw.setdefault("cwd", WORK)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


# ---- the C blocks ----------------------------------------------------------------------

FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([^\s`]*)")


def c_blocks(path, text, comment=False):
    """(line, code, context or None) for each C block (```c, ```C, ~~~c, ```c title=...);
    comment: the text is a header whose blocks sit in comment lines (" * ")."""
    lines = text.split("\n")
    if comment:
        lines = [re.sub(r"^\s*\*\s?", "", l) for l in lines]
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, start = len(m.group(1)), m.group(2), i + 1
        j = start
        while j < len(lines) and not re.match(r"^\s*" + re.escape(fence) + r"\s*$", lines[j]):
            j += 1
        if m.group(3).lower() in ("c", "h"):
            code = "\n".join(l[indent:] for l in lines[start:j])
            # the context comment ends on the line right before the fence (or is that line)
            ctx, k = None, i - 1
            if k >= 0 and lines[k].strip().endswith("-->"):
                while k >= 0 and "<!-- doc-test context" not in lines[k]:
                    k -= 1
                if k >= 0:
                    body = "\n".join(lines[k:i]).strip()
                    ctx = body[body.index(":") + 1:body.rindex("-->")].strip()
            out.append((f"{path}:{i + 1}", code, ctx))
        i = j + 1
    return out


def check_c_blocks(prefix, work):
    pc = glob.glob(f"{prefix}/**/zcoll.pc", recursive=True)
    if not pc:
        fail("no zcoll.pc installed")
        return
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pc[0]))
    flags = run(["pkg-config", "--cflags", "--libs", "zcoll"], env=env).stdout.split()
    libdir = os.path.dirname(glob.glob(f"{prefix}/**/libzcoll.so", recursive=True)[0])
    blocks = []
    for page in pages():
        blocks += c_blocks(page, read(page))
    with open(os.path.join(SRC, "include", "zcoll.h")) as f:
        blocks += c_blocks("include/zcoll.h", f.read(), comment=True)
    programs = 0
    for n, (where, code, ctx) in enumerate(blocks):
        src = os.path.join(work, f"block{n}.c")
        complete = re.search(r"\bint\s+main\s*\(", code) is not None
        if not complete and ctx is None:
            fail(f"{where}: a fragment without a '<!-- doc-test context: ... -->' comment")
            continue
        with open(src, "w") as f:
            if complete:
                f.write(code + "\n")
            else:
                f.write("#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
                        f"#include <zcoll.h>\n{ctx}\n"
                        f"void readme_block(void);\nvoid readme_block(void) {{\n{code}\n}}\n")
        exe = os.path.join(work, f"block{n}")
        cc = (["cc", "-std=c11", "-Wall", "-Wextra", "-Werror"] + EXTRA + [src] + flags +
              (["-o", exe] if complete else ["-c", "-o", exe + ".o"]))
        r = run(cc)
        if r.returncode:
            fail(f"{where}: does not compile: {' '.join(cc)}\n{r.stderr}")
            continue
        print(f"{where}: compiles ({'program' if complete else 'fragment'})")
        if not complete:
            continue
        programs += 1
        r = run([os.path.join(prefix, "bin", "zcoll_run"), "-np", "2", "--timeout", "60", exe],
                env=dict(os.environ, LD_LIBRARY_PATH=libdir), cwd=work)
        if r.returncode:
            fail(f"{where}: zcoll_run -np 2 exited {r.returncode}\n{r.stdout}{r.stderr}")
        else:
            print(f"{where}: runs under zcoll_run -np 2")
    if not programs:
        fail("README.md and docs/ have no complete C program: nothing ran")


# ---- the tools' command lines ----------------------------------------------------------

PLACEHOLDERS = {"N": "2", "S": "10", "SECONDS": "10", "SIZE": "8", "NAME": "ring",
                "ALGO": "ring", "OP": "sum", "TYPE": "float", "VAR": "ZCOLL_LOG",
                "VAR=VAL": "ZCOLL_LOG=warn", "VAR=VALUE": "ZCOLL_LOG=warn", "P": "2",
                "MIN": "8", "MAX": "64M", "FACTOR": "2"}


def normalize(tok, csv):
    tok = tok.replace("[", "").replace("]", "").replace("…", "").replace("...", "")
    if tok == "FILE":
        return csv
    if "|" in tok and not tok.startswith("|"):
        tok = tok.split("|")[0]
    return PLACEHOLDERS.get(tok, tok)


def tool_argv(tokens, csv):
    """The tool's argv from a command's tokens (the first is a tool), or None."""
    tokens = [normalize(t, csv) for t in tokens]
    tokens = [t for t in tokens if t]
    if "#" in tokens:
        tokens = tokens[:tokens.index("#")]
    return tokens


def check_command(tokens, where, csv):
    """tokens[0] is a tool (maybe a path); zcoll_run's program may be another tool."""
    tool = os.path.basename(tokens[0])
    exe = os.path.join(BUILD, tool)
    args = tool_argv(tokens[1:], csv)
    if tool == "zcoll_run":
        opts, i = [], 0
        while i < len(args) and args[i].startswith("-"):
            takes = args[i] in ("-np", "-n", "-x", "--timeout")
            opts += args[i:i + 1 + takes]
            i += 1 + takes
        if i < len(args) and os.path.basename(args[i]) in TOOLS:
            check_command(args[i:], where, csv)
        cmd = [exe] + opts + ["true"]
    else:
        cmd = [exe] + args + ["-h"]
    r = run(cmd, env={k: v for k, v in os.environ.items() if not k.startswith("ZCOLL_")})
    if r.returncode == 0 and tool != "zcoll_run" and not r.stdout.startswith("usage:"):
        fail(f"{where}: `{' '.join(tokens)}` ran instead of printing the usage: {' '.join(cmd)}")
    elif r.returncode:
        fail(f"{where}: `{' '.join(tokens)}` is refused: {' '.join(cmd)} exited "
             f"{r.returncode}: {r.stderr.strip()}")
    else:
        print(f"{where}: accepted: {' '.join(tokens)}")


def check_option_span(tool, span, where, csv):
    if re.match(r"^-[\w-]+(/--?[\w-]+)+$", span):  # "-b/--minbytes": each form alone
        for form in span.split("/"):
            check_option_span(tool, form, where, csv)
        return
    args = tool_argv(span.split(), csv)
    r = run([os.path.join(BUILD, tool)] + args + ["-h"])
    # the usage, not a run: a lone option that takes a value would take -h as its value
    known = r.returncode == 0 and r.stdout.startswith("usage:")
    if not known and len(args) == 1:
        # a lone option that takes a value ("--blocking") took -h as its value: it is known
        # if, alone, it asks for one
        r = run([os.path.join(BUILD, tool)] + args, timeout=30)
        known = "needs a value" in r.stderr
    if not known:
        fail(f"{where}: {tool} refuses `{span}`: {r.stderr.strip()}")
    else:
        print(f"{where}: {tool} accepts `{span}`")


def check_flags(work):
    for page in pages():
        check_page_flags(page, work)


def check_page_flags(page, work):
    csv = os.path.join(work, "out.csv")
    lines = read(page).split("\n")
    in_sh, item = False, None
    for n, line in enumerate(lines, 1):
        where = f"{page}:{n}"
        fence = re.match(r"^\s*```(\w*)\s*$", line)
        if fence:
            in_sh = not in_sh and fence.group(1) in ("sh", "console", "bash")
            continue
        if in_sh:
            try:
                tokens = shlex.split(line, comments=True)
            except ValueError:
                tokens = line.split()
            # a prompt and the variables set for the command come before it
            while tokens and (tokens[0] == "$" or re.match(r"^[A-Za-z_]\w*=", tokens[0])):
                tokens = tokens[1:]
            if tokens and os.path.basename(tokens[0]) in TOOLS:
                check_command(tokens, where, csv)
            continue
        # which item of the Tools list this line is in: its option spans are its tool's
        m = re.match(r"^- `(zcoll_\w+)", line)
        if m:
            item = m.group(1)
        elif re.match(r"^(- |#)", line):
            item = None
        for span in re.findall(r"`([^`]+)`", line):
            words = span.split()
            if len(words) > 1 and os.path.basename(words[0]) in TOOLS:
                check_command(words, where, csv)
            elif words and item in ("zcoll_perf", "zcoll_info") and \
                    re.match(r"^--?[A-Za-z]", words[0]):
                check_option_span(item, span, where, csv)


# ---- the README's length and the pages' links -----------------------------------------

FILE_MARK = re.compile(r"^\s*<!-- doc-test file: (\S+) -->\s*$")  # a line of its own


def example_code(path):
    """PATH's text without its leading docstring (Python) or comment lines."""
    with open(os.path.join(SRC, path)) as f:
        text = f.read()
    if path.endswith(".py"):
        import ast
        body = ast.parse(text).body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None),
                                                                 ast.Constant):
            text = "\n".join(text.split("\n")[body[0].end_lineno:])
    return text.strip("\n")


def check_file_blocks():
    for page in pages():
        lines = read(page).split("\n")
        for i, line in enumerate(lines):
            m = FILE_MARK.match(line)
            if not m:
                continue
            j = i + 1
            fence = re.match(r"^\s*(```+)\w*\s*$", lines[j]) if j < len(lines) else None
            if not fence:
                fail(f"{page}:{i + 1}: '{m.group(0)}' is not right before a fenced block")
                continue
            k = j + 1
            while k < len(lines) and lines[k].strip() != fence.group(1):
                k += 1
            block = "\n".join(lines[j + 1:k]).strip("\n")
            if not os.path.exists(os.path.join(SRC, m.group(1))):
                fail(f"{page}:{i + 1}: {m.group(1)} does not exist")
            elif block != example_code(m.group(1)):
                fail(f"{page}:{j + 1}: the block differs from {m.group(1)} (its code after the "
                     "docstring): copy the file's code into the page, or the page's into it")
            else:
                print(f"{page}:{j + 1}: the block is {m.group(1)}")


def check_length():
    n = len(read("README.md").split("\n")) - 1  # the text ends with a newline
    if n > README_MAX_LINES:
        fail(f"README.md has {n} lines, more than {README_MAX_LINES}: it is the user's guide; "
             "move the detail to a page of docs/ and link it from the README with a line")
    else:
        print(f"README.md: {n} lines (at most {README_MAX_LINES})")


def prose_lines(text, blank_spans=True):
    """(line number, line) of the text outside fenced code blocks, code spans blanked."""
    out, fence = [], None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(2)
        elif fence is not None:
            if re.match(r"^\s*" + re.escape(fence) + r"\s*$", line):
                fence = None
        else:
            out.append((n, re.sub(r"`[^`]*`", lambda s: " " * len(s.group(0)), line)
                        if blank_spans else line))
    return out


def slug(heading):
    """GitHub's anchor for a heading: its text, lower case, punctuation but - and _ dropped,
    spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page):
    out = set()
    for _, line in prose_lines(read(page), blank_spans=False):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base, k = slug(m.group(1).replace("`", "")), 1
            s = base
            while s in out:  # a repeated heading gets -1, -2, ...
                s, k = f"{base}-{k}", k + 1
            out.add(s)
    return out


# [text](target), [text](<target> "title"), and a reference definition "[id]: target"
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)"
                  r"|^\s*\[[^\]]+\]:\s*(\S+)")


def check_links():
    for page in pages():
        links = 0
        for n, line in prose_lines(read(page)):
            for m in LINK.finditer(line):
                target = m.group(1) or m.group(2)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, mailto:, ...
                    continue
                links += 1
                path, _, anchor = target.partition("#")
                where = f"{page}:{n}"
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path \
                    else page
                if dest.startswith("..") or not os.path.exists(os.path.join(SRC, dest)):
                    fail(f"{where}: the link to `{target}` points to no file ({dest})")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    fail(f"{where}: the link to `{target}`: {dest} has no heading "
                         f"whose anchor is #{anchor}")
        print(f"{page}: {links} relative links checked")


def main():
    global WORK
    check_length()
    check_links()
    check_file_blocks()
    with tempfile.TemporaryDirectory() as work:
        WORK = work
        prefix = os.path.join(work, "prefix")
        r = run(["cmake", "--install", BUILD, "--prefix", prefix], timeout=300)
        if r.returncode:
            print(r.stdout, r.stderr)
            sys.exit("readme_test: cmake --install failed")
        check_c_blocks(prefix, work)
        check_flags(work)
    if failures:
        sys.exit(f"readme_test: {len(failures)} failure(s)")
    print("readme_test: OK")


main()
