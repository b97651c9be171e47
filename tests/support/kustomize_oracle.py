#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the reference kustomize (`kubectl kustomize DIR`) and prints its output as one JSON
array, so that tests can compare it with our engine's objects. Exit status 3 when kustomize
itself fails (its message goes to stderr), 2 when no kubectl with kustomize v5 is found."""
import json
import os
import shutil
import subprocess
import sys

import yaml


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
            return cand
    return None


def main():
    kubectl = find_kubectl()
    if not kubectl:
        print("no kubectl with kustomize v5 found", file=sys.stderr)
        return 2
    res = subprocess.run([kubectl, "kustomize", sys.argv[1]], capture_output=True, timeout=300)
    if res.returncode != 0:
        sys.stderr.write(res.stderr.decode(errors="replace"))
        return 3
    docs = [d for d in yaml.safe_load_all(res.stdout) if d is not None]
    json.dump(docs, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
