#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The test control plane itself (tests/env/controlplane.sh), driven with kubectl: the shared
# instance from tests/run.sh answers as admin, with a client certificate, and refuses the
# restricted user; a second, private control plane starts beside it on other ports, survives
# an apiserver restart with its data, and leaves nothing behind when stopped.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/component-operator"
KUBECTL=${KUBECTL:-$(command -v kubectl || echo "$CACHE/bin/kubectl")}
CP=$ROOT/tests/env/controlplane.sh

if [ -z "${CO_TEST_KUBECONFIG:-}" ]; then
    echo "CO_TEST_KUBECONFIG is not set (run through tests/run.sh)" >&2
    exit 1
fi

k() { "$KUBECTL" --kubeconfig "$CO_TEST_KUBECONFIG" --request-timeout=60s "$@"; }

ns=co-cp-$$-$RANDOM
private=""
cleanup() {
    k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
    if [ -n "$private" ]; then
        "$CP" stop "$private" >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT

# --- the shared control plane ---------------------------------------------------------------

tap_check "test_controlplane__env_names_the_directory" test -d "$CO_TEST_CONTROLPLANE_DIR"
tap_check "test_controlplane__default_namespace_exists" k get namespace default
tap_check "test_controlplane__kube_system_namespace_exists" k get namespace kube-system
tap_check "test_controlplane__admin_creates_namespace" k create namespace "$ns"
tap_check "test_controlplane__admin_creates_configmap" \
    k -n "$ns" create configmap probe --from-literal=answer=42
tap_eq "test_controlplane__configmap_reads_back" 42 \
    "$(k -n "$ns" get configmap probe -o 'jsonpath={.data.answer}' 2>&1)"
tap_eq "test_controlplane__client_certificate_is_admin" 42 \
    "$("$KUBECTL" --kubeconfig "$CO_TEST_CERT_KUBECONFIG" -n "$ns" get configmap probe \
        -o 'jsonpath={.data.answer}' 2>&1)"
tap_check_fails "test_controlplane__restricted_user_is_forbidden" \
    "Forbidden.*$CO_TEST_RESTRICTED_USER|$CO_TEST_RESTRICTED_USER.*cannot" \
    "$KUBECTL" --kubeconfig "$CO_TEST_RESTRICTED_KUBECONFIG" -n "$ns" get configmaps
# (the aggregated ClusterRoles view/edit/admin stay empty: aggregating them is the job of
# kube-controller-manager, which the test control plane does not run)
tap_check "test_controlplane__rbac_role_created" \
    k -n "$ns" create role probe-reader --verb=get,list --resource=configmaps
tap_check "test_controlplane__rbac_grant_takes_effect" \
    k -n "$ns" create rolebinding probe-reader --role=probe-reader \
    --user="$CO_TEST_RESTRICTED_USER"
ok=0
for _ in $(seq 1 30); do
    if "$KUBECTL" --kubeconfig "$CO_TEST_RESTRICTED_KUBECONFIG" -n "$ns" \
        get configmap probe >/dev/null 2>&1; then
        ok=1
        break
    fi
    sleep 1
done
tap_eq "test_controlplane__restricted_user_reads_after_grant" 1 "$ok"
tap_check_fails "test_controlplane__restricted_user_still_cannot_write" "[Ff]orbidden" \
    "$KUBECTL" --kubeconfig "$CO_TEST_RESTRICTED_KUBECONFIG" -n "$ns" \
    create configmap nope --from-literal=a=b

# --- a private control plane beside the shared one -------------------------------------------

private=$(mktemp -d "${TMPDIR:-/tmp}/co-cp-private-XXXXXX")
if out=$("$CP" start "$private" 2>&1); then
    tap_ok "test_controlplane__private_instance_starts"
else
    tap_fail "test_controlplane__private_instance_starts" "$out"
fi
if [ -f "$private/env" ]; then
    pk() { "$KUBECTL" --kubeconfig "$private/admin.kubeconfig" --request-timeout=60s "$@"; }
    shared_url=$CO_TEST_APISERVER_URL
    private_url=$(. "$private/env" && echo "$CO_TEST_APISERVER_URL")
    if [ "$shared_url" != "$private_url" ]; then
        tap_ok "test_controlplane__private_instance_has_its_own_port"
    else
        tap_fail "test_controlplane__private_instance_has_its_own_port" "both at $shared_url"
    fi
    tap_check_fails "test_controlplane__private_instance_has_its_own_data" "NotFound|not found" \
        pk get namespace "$ns"
    tap_check "test_controlplane__private_instance_stores" \
        pk -n default create configmap survivor --from-literal=k=v
    if out=$("$CP" restart "$private" 2>&1); then
        tap_ok "test_controlplane__apiserver_restarts"
    else
        tap_fail "test_controlplane__apiserver_restarts" "$out"
    fi
    tap_eq "test_controlplane__data_survives_apiserver_restart" v \
        "$(pk -n default get configmap survivor -o 'jsonpath={.data.k}' 2>&1)"
    rev=$("$CP" compact "$private" 2>&1)
    if [[ "$rev" =~ ^[0-9]+$ ]]; then
        tap_ok "test_controlplane__etcd_compacts"
    else
        tap_fail "test_controlplane__etcd_compacts" "$rev"
    fi
    # each pid file holds "PID MARKER", MARKER being a path on the process's command line
    procs=$(cat "$private/apiserver.pid" "$private/etcd.pid" 2>/dev/null)
    "$CP" stop "$private" >/dev/null 2>&1
    left=""
    while read -r p marker; do
        [ -n "$p" ] || continue
        if [ -r "/proc/$p/cmdline" ] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -F "$marker" >/dev/null; then
            left="$left $p"
        fi
    done <<<"$procs"
    if [ -z "$left" ] && [ ! -e "$private" ]; then
        tap_ok "test_controlplane__stop_leaves_nothing"
    else
        tap_fail "test_controlplane__stop_leaves_nothing" "processes:$left" "$(ls "$private" 2>&1)"
    fi
    private=""
fi
tap_check "test_controlplane__shared_instance_unaffected" k -n "$ns" get configmap probe

tap_done
