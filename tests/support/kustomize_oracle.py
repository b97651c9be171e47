#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the reference kustomize (`kubectl kustomize DIR [FLAG...]`) and prints its output as one JSON
array, so that tests can compare it with our engine's objects. Exit status 3 when kustomize
itself fails (its message goes to stderr), 2 when no kubectl with kustomize v5 is found.

Results are cached under ${XDG_CACHE_HOME:-~/.cache}/component-operator/kustomize-oracle/,
keyed by the kubectl version and every path and byte of the directory tree, so suites that
compare against the same cases run kustomize once per machine."""
import hashlib
import json
import os
import shutil
import subprocess
import sys

import yaml


def cache_dir():
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                        "component-operator", "kustomize-oracle")


def tree_key(kubectl, version, root, flags):
    h = hashlib.sha256()
    h.update(os.path.realpath(kubectl).encode() + b"\0" + version.encode() + b"\0")
    for flag in flags:
        h.update(b"flag:" + flag.encode() + b"\0")
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            h.update(os.path.relpath(path, root).encode() + b"\0")
            if os.path.islink(path):
                h.update(b"link:" + os.readlink(path).encode())
            else:
                with open(path, "rb") as f:
                    h.update(f.read())
            h.update(b"\0")
    return h.hexdigest()


def find_kubectl():
    env = os.environ.get("CO_KUBECTL")
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "component-operator", "bin", "kubectl-v32")
    for cand in (env, shutil.which("kubectl"), cache):
        if not cand or not os.access(cand, os.X_OK):
            continue
        try:
            out = subprocess.run([cand, "version", "--client"], capture_output=True,
                                 text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        if "Kustomize Version: v5" in out:
            return cand, out
    return None, None


def main():
    kubectl, version = find_kubectl()
    if not kubectl:
        print("no kubectl with kustomize v5 found", file=sys.stderr)
        return 2
    cached = os.path.join(cache_dir(), tree_key(kubectl, version, sys.argv[1], sys.argv[2:]) + ".json")
    try:
        with open(cached) as f:
            entry = json.load(f)
    except (OSError, ValueError):
        res = subprocess.run([kubectl, "kustomize", *sys.argv[2:], sys.argv[1]], capture_output=True,
                             timeout=300)
        if res.returncode != 0:
            entry = {"error": res.stderr.decode(errors="replace")}
        else:
            entry = {"objects": [d for d in yaml.safe_load_all(res.stdout) if d is not None]}
        os.makedirs(cache_dir(), exist_ok=True)
        tmp = cached + ".%d.tmp" % os.getpid()
        with open(tmp, "w") as f:
            json.dump(entry, f)
        os.replace(tmp, cached)
    if "error" in entry:
        sys.stderr.write(entry["error"])
        return 3
    json.dump(entry["objects"], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
