#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# Checks that comments and strings cite only documents of the repository, and that what they
# cite exists. The design lives in docs/; a citation names the file and the section title,
# `docs/behaviour.md, "Apply waves"` (several titles may follow: `, "A", "B" and "C"`, or in
# parentheses). Every file under the checked directories is read, and each problem is printed
# as FILE:LINE: message:
#
#   - a section sign (a numbered section of some document: nothing in the repository is
#     numbered that way);
#   - a path ending in .md that is neither a file of the repository (from its root or from the
#     citing file's directory) nor a link elsewhere (an URL);
#   - a path into ../shared, the directory beside the checkout, other than ../shared/fixtures,
#     the conformance lane's data;
#   - `reference/...`, the old home of the design documents;
#   - `docs/NAME.md` where docs/NAME.md does not exist, or a quoted title after it that is not
#     a heading of that file.
#
# In C and Go sources only comments and string literals are read (`x.md` there is a member).
# Comment leaders (` * `, `//`, `#`) are removed and lines joined before titles are read, so a
# title may wrap across comment lines; it is reported at the line where its citation starts.
# This file, which has to name what it looks for, is not checked.
#
#   tests/support/doc_refs.py [--skip DIR]... [ROOT]
#
# ROOT defaults to this checkout; --skip leaves a directory (relative to ROOT) out. Exit status
# 0 when nothing is reported, 1 otherwise.
import os
import re
import sys

CHECKED = ["shared", "webhook", "certs", "controller", "tests/support", "docs"]
SELF = "tests/support/doc_refs.py"

SECTION_SIGN = "\u00a7"
MD_PATH = re.compile(r"(?<![\w./:-])((?:\.\.?/)*(?:[\w-]+/)*[\w.-]*\w\.md)\b")
SHARED_DIR = re.compile(r"\.\./shared(?![\w-])(/[\w.-]+)?")
OLD_REFERENCE = re.compile(r"(?<![\w-])reference/")
QUOTE = r'\\?"([^"\\\n]+)\\?"'
CITE = re.compile(r"docs/([\w.-]+\.md)((?:\s*(?:,|\(|;|and|or)?\s*" + QUOTE + r")*)")
TITLE = re.compile(QUOTE)
LEADER = re.compile(r"^\s*(?:/\*+|\*+(?!/)|//+|#+)?\s?")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def headings(path, cache={}):
    """The section titles of a markdown file (fenced code skipped), as written and without
    backticks."""
    if path not in cache:
        titles = set()
        fenced = False
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("```"):
                    fenced = not fenced
                    continue
                m = None if fenced else HEADING.match(line)
                if m:
                    titles.add(m.group(1))
                    titles.add(m.group(1).replace("`", ""))
        cache[path] = titles
    return cache[path]


def code_masked(text):
    """@text with everything but comments and string literals blanked (newlines kept), for C
    and Go."""
    out = list(text)
    i, n = 0, len(text)
    state = "code"
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if state == "code":
            if c == "/" and nxt == "*":
                state = "block"
                i += 2
                continue
            if c == "/" and nxt == "/":
                state = "line"
                i += 2
                continue
            if c == '"':
                state = "string"
            elif c == "'" or c == "`":
                state = "char" if c == "'" else "raw"
                out[i] = " "
            elif c != "\n":
                out[i] = " "
        elif state == "block":
            if c == "*" and nxt == "/":
                state = "code"
                i += 2
                continue
        elif state == "line":
            if c == "\n":
                state = "code"
        elif state == "string":
            if c == "\\":
                i += 2
                continue
            if c == '"' or c == "\n":
                state = "code"
        elif state == "char":
            if c == "\\":
                out[i] = " "
                if i + 1 < n and text[i + 1] != "\n":
                    out[i + 1] = " "
                i += 2
                continue
            if c == "'" or c == "\n":
                state = "code"
            if c != "\n":
                out[i] = " "
        elif state == "raw":
            if c == "`":
                state = "code"
        i += 1
    return "".join(out)


def is_text(path):
    try:
        with open(path, "rb") as f:
            return b"\0" not in f.read(8192)
    except OSError:
        return False


def check_file(root, rel, out):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        text = f.read()
    if rel.endswith((".c", ".h", ".go")):
        text = code_masked(text)
    lines = text.split("\n")
    here = os.path.dirname(rel)

    for n, line in enumerate(lines, 1):
        if SECTION_SIGN in line:
            out.append(f"{rel}:{n}: cites a numbered section ({SECTION_SIGN}) of a document "
                       "outside the repository; cite docs/FILE.md, \"Section title\"")
        for m in MD_PATH.finditer(line):
            doc = m.group(1)
            if any(os.path.isfile(os.path.normpath(os.path.join(root, base, doc)))
                   for base in (here, "")):
                continue
            if doc.startswith("docs/"):
                continue  # reported below, with its titles
            out.append(f"{rel}:{n}: cites {doc}, which is not a file of the repository")
        for m in SHARED_DIR.finditer(line):
            if m.group(1) and m.group(1).startswith("/fixtures"):
                continue
            if m.group(1) and m.group(1).endswith(".md"):
                continue  # reported above
            out.append(f"{rel}:{n}: cites {m.group(0)}, outside the repository")
        if OLD_REFERENCE.search(line) and not MD_PATH.search(line):
            out.append(f"{rel}:{n}: cites reference/, outside the repository")

    # docs/ citations, over the text with comment leaders removed and lines joined
    starts = []
    parts = []
    pos = 0
    for line in lines:
        stripped = LEADER.sub("", line, count=1)
        starts.append(pos)
        parts.append(stripped)
        pos += len(stripped) + 1
    text = " ".join(parts)
    for m in CITE.finditer(text):
        n = next(i for i in range(len(starts) - 1, -1, -1) if starts[i] <= m.start()) + 1
        doc = os.path.join(root, "docs", m.group(1))
        if not os.path.isfile(doc):
            out.append(f"{rel}:{n}: cites docs/{m.group(1)}, which does not exist")
            continue
        for t in TITLE.finditer(m.group(2)):
            title = re.sub(r"\s+", " ", t.group(1)).strip()
            if title not in headings(doc):
                out.append(f"{rel}:{n}: docs/{m.group(1)} has no section \"{title}\"")


def main(argv):
    skip = []
    args = []
    i = 0
    while i < len(argv):
        if argv[i] == "--skip" and i + 1 < len(argv):
            skip.append(argv[i + 1].strip("/"))
            i += 2
            continue
        args.append(argv[i])
        i += 1
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
    root = os.path.abspath(root)
    out = []
    for top in CHECKED:
        if top in skip or not os.path.isdir(os.path.join(root, top)):
            continue
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if d not in ("build", ".git"))
            for name in sorted(filenames):
                rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                if rel == SELF or any(rel == s or rel.startswith(s + "/") for s in skip):
                    continue
                if is_text(os.path.join(root, rel)):
                    check_file(root, rel, out)
    for line in out:
        print(line)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
