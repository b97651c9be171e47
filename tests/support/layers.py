#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# Checks the include graph of the C sources against the layering of shared/ (shared/README.md,
# "Layers"). Every quoted #include of every .c and .h file under shared/, controller/,
# webhook/, certs/ and tests/ is resolved as the compiler resolves it (beside the including
# file, then -Ishared/include, then -I.), and a violation is printed as FILE:LINE: message:
#
#   - a file in a lower layer includes a header of a higher one (public or library-internal);
#   - a header under shared/src/ is included from another directory, unless it is a
#     library-internal interface (*_lib.h) included from shared/ or a test;
#   - a public header includes anything under shared/src/;
#   - a file of shared/ sits outside the known layers, or names a co/ header that does not
#     exist.
#
# Tests (tests/) may include private headers: white-box tests of a module are deliberate.
#
#   tests/support/layers.py [ROOT]     check the tree at ROOT (default: this checkout)
#   tests/support/layers.py --order    print the layer order, lowest first
#
# Exit status 0 when the tree is clean, 1 when anything is reported.
import os
import re
import sys

# The layers of shared/, lowest first: a file may include headers of its own layer and of the
# layers before it. shared/README.md states the same order.
LAYERS = ["util", "json", "kube", "source", "api", "render"]

SCANNED = ["shared", "controller", "webhook", "certs", "tests"]
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def rel(root, path):
    return os.path.relpath(path, root).replace(os.sep, "/")


def layer_of(path):
    """The layer of a repository-relative path under shared/, '' for an unknown one, None
    outside shared/."""
    parts = path.split("/")
    if parts[:2] == ["shared", "src"] and len(parts) >= 4:
        return parts[2] if parts[2] in LAYERS else ""
    if parts[:3] == ["shared", "include", "co"] and len(parts) >= 5:
        return parts[3] if parts[3] in LAYERS else ""
    if parts[0] == "shared":
        return ""
    return None


def resolve(root, including, name):
    """The repository-relative path an #include "name" of @including reaches, or None."""
    for base in (os.path.dirname(including), "shared/include", "."):
        cand = os.path.normpath(os.path.join(root, base, name))
        if os.path.isfile(cand):
            return rel(root, cand)
    return None


def check_include(path, lineno, name, target):
    """Violations of one resolved include of @path (both repository-relative)."""
    where = "%s:%d" % (path, lineno)
    src_layer = layer_of(path)
    dst_layer = layer_of(target)
    out = []
    if dst_layer is not None and target.startswith("shared/src/"):
        if path.startswith("shared/include/"):
            out.append('%s: public header includes "%s", which is not public' % (where, name))
        elif os.path.dirname(path) != os.path.dirname(target) and not path.startswith("tests/"):
            if not target.endswith("_lib.h"):
                out.append('%s: includes "%s", a private header of %s/' %
                           (where, name, os.path.dirname(target)))
            elif not path.startswith("shared/"):
                out.append('%s: includes "%s", a library-internal header of shared/' %
                           (where, name))
    if src_layer and dst_layer and LAYERS.index(dst_layer) > LAYERS.index(src_layer):
        out.append('%s: layer %s includes "%s" of the higher layer %s' %
                   (where, src_layer, name, dst_layer))
    return out


def check_file(root, path):
    out = []
    if layer_of(path) == "":
        out.append("%s:1: not in a layer of shared/ (%s)" % (path, ", ".join(LAYERS)))
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            name = m.group(1)
            target = resolve(root, path, name)
            if target is None:
                if name.startswith("co/") or name.startswith("shared/"):
                    out.append('%s:%d: "%s" does not exist' % (path, lineno, name))
                continue
            out.extend(check_include(path, lineno, name, target))
    return out


def main(argv):
    if argv[1:] == ["--order"]:
        print(" ".join(LAYERS))
        return 0
    root = os.path.abspath(argv[1] if len(argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    problems = []
    nfiles = 0
    for top in SCANNED:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    nfiles += 1
                    problems.extend(check_file(root, rel(root, os.path.join(d, f))))
    for p in problems:
        print(p)
    if nfiles == 0:
        print("%s: no C files found" % root)
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
