#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Runs the benchmarks: every release-built build/release/tests/bench/bench_* program and every
# tests/bench/bench_*.sh script, or only those named (make bench BENCH='kustomize').
# Benchmarks print figures and ratios; they never fail on a time.
#
# Adding one: a tests/bench/bench_<name>.c (linked with the libraries, built in release by
# `make bench`) or an executable tests/bench/bench_<name>.sh. It gets its own "== bench <name>"
# section, prints its figures and a "ratio:" line against a reference it measures in the same
# run (CO_KUBECTL is exported for kustomize comparisons), and exits non-zero only when it
# cannot run at all.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"

# The reference kustomize for comparisons: a kubectl on PATH reporting Kustomize v5, else the
# one tests/env/deps.sh installs.
if [ -z "${CO_KUBECTL:-}" ]; then
    for k in "$(command -v kubectl 2>/dev/null)" \
        "${XDG_CACHE_HOME:-$HOME/.cache}/component-operator/bin/kubectl-v32"; do
        if [ -n "$k" ] && [ -x "$k" ] && "$k" version --client 2>/dev/null | grep 'Kustomize Version: v5' >/dev/null; then
            export CO_KUBECTL="$k"
            break
        fi
    done
fi

# The webhook benchmark drives the release daemon with wrk and h2load and compares it with
# nginx (all three from tests/env/deps.sh); it starts its own processes on free ports.
export CO_WEBHOOK_BIN=${CO_WEBHOOK_BIN:-$ROOT/build/release/component-webhook}

status=0
for b in build/release/tests/bench/bench_* tests/bench/bench_*.sh; do
    [ -x "$b" ] || continue
    name=$(basename "$b" .sh)
    name=${name#bench_}
    if [ $# -gt 0 ]; then
        keep=0
        for want in "$@"; do [ "$want" = "$name" ] && keep=1; done
        [ $keep = 1 ] || continue
    fi
    echo "== bench $name"
    "$b" || status=1
done
exit $status
