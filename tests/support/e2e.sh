# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# Sourced by the end-to-end suites, after tap.sh: what every one of them starts with.
#   KUBECTL, CACHE      the kubectl the suites drive (Debian's, else the cached one)
#   e2e_need_cluster    stops the suite unless tests/run.sh gave it a control plane
#   k ARGS...           kubectl against that control plane
#   free_port           a loopback TCP port nobody listens on now, given to no other suite

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/component-operator"
KUBECTL=${KUBECTL:-$(command -v kubectl || echo "$CACHE/bin/kubectl")}

e2e_need_cluster() {
    if [ -z "${CO_TEST_KUBECONFIG:-}" ]; then
        echo "CO_TEST_KUBECONFIG is not set (run through tests/run.sh)" >&2
        exit 1
    fi
}

k() { "$KUBECTL" --kubeconfig "$CO_TEST_KUBECONFIG" --request-timeout=60s "$@"; }

free_port() {
    python3 "$ROOT/tests/support/free_port.py"
}
