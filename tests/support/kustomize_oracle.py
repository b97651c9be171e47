#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the reference kustomize (`kubectl kustomize [FLAG...] DIR`) and prints its output as one JSON
array, so that tests can compare it with our engine's objects. Exit status 3 when kustomize
itself fails (its message goes to stderr), 2 when no kubectl with kustomize v5 (or no Go
yamltojson oracle) is found.

The output documents are converted the way the Go operator reads them: each one through
sigs.k8s.io/yaml's YAMLToJSON (tests/oracle/yamltojson), so scalars are typed exactly as in
Go (`1e+30` is a float, `1000` an integer), which a YAML 1.1 reader like PyYAML does not do.

Results are cached under ${XDG_CACHE_HOME:-~/.cache}/component-operator/kustomize-oracle/,
keyed by the kubectl version and every path and byte of the directory tree, so suites that
compare against the same cases run kustomize once per machine. `--tree ROOT DIR [FLAG...]` builds
DIR, a directory inside ROOT, and keys the cache on all of ROOT: an overlay reads its bases
from outside DIR."""
import hashlib
import json
import os
import shutil
import subprocess
import sys



def cache_dir():
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                        "component-operator", "kustomize-oracle")


def tree_key(kubectl, version, root, build_dir, flags):
    h = hashlib.sha256()
    h.update(b"raw-output\0" + os.path.realpath(kubectl).encode() + b"\0" + version.encode() + b"\0")
    if build_dir != root:
        h.update(b"dir:" + os.path.relpath(build_dir, root).encode() + b"\0")
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


def yaml_to_json(docs):
    """The documents through sigs.k8s.io/yaml's YAMLToJSON; None when the oracle is missing."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    built = subprocess.run([os.path.join(root, "tests", "oracle", "build.sh"), "yamltojson"],
                           capture_output=True, text=True, timeout=600)
    if built.returncode != 0 or not built.stdout.strip():
        return None
    res = subprocess.run([built.stdout.strip()], input=b"\0".join(docs), capture_output=True,
                         timeout=300, check=True)
    out = []
    for line in res.stdout.decode().splitlines():
        if not line.startswith("ok "):
            raise ValueError("yamltojson cannot convert kustomize's output: " + line)
        # "-0" is the float -0 in Go, not the integer 0
        out.append(json.loads(line[3:], parse_int=lambda t: -0.0 if t == "-0" else int(t)))
    return out


def split_documents(text):
    docs, cur = [], []
    for line in text.splitlines(keepends=True):
        if line.rstrip("\r\n") == "---":
            docs.append("".join(cur).encode())
            cur = []
        else:
            cur.append(line)
    docs.append("".join(cur).encode())
    return docs


def main():
    kubectl, version = find_kubectl()
    if not kubectl:
        print("no kubectl with kustomize v5 found", file=sys.stderr)
        return 2
    args = sys.argv[1:]
    root = None
    if len(args) >= 3 and args[0] == "--tree":
        root, args = args[1], args[2:]
    build_dir, flags = args[0], args[1:]
    key = tree_key(kubectl, version, root or build_dir, build_dir, flags)
    cached = os.path.join(cache_dir(), key + ".json")
    try:
        with open(cached) as f:
            entry = json.load(f)
    except (OSError, ValueError):
        res = subprocess.run([kubectl, "kustomize", *flags, build_dir], capture_output=True,
                             timeout=300)
        if res.returncode != 0:
            entry = {"error": res.stderr.decode(errors="replace")}
        else:
            entry = {"output": res.stdout.decode()}
        os.makedirs(cache_dir(), exist_ok=True)
        tmp = cached + ".%d.tmp" % os.getpid()
        with open(tmp, "w") as f:
            json.dump(entry, f)
        os.replace(tmp, cached)
    if "error" in entry:
        sys.stderr.write(entry["error"])
        return 3
    objects = yaml_to_json(split_documents(entry["output"]))
    if objects is None:
        print("the yamltojson oracle cannot be built (tests/oracle/build.sh)", file=sys.stderr)
        return 2
    json.dump([o for o in objects if o is not None], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
