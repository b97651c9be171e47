#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Self-managed webhook certificates end to end against the real kube-apiserver: component-webhook
# starts with no Secret, creates it, injects the CA bundle into the webhook configurations and
# the Component CRD's conversion stanza, and kubectl's requests go through it (the API server
# trusts the chain). With validities of seconds, the CA and the serving certificate rotate
# while a loop of kubectl creates (v1alpha1 through admission, v1beta1 through conversion too)
# runs: no request may fail. Then two replicas started at once end up with one Secret and one
# CA, and a deleted Secret is recreated. Everything registered is removed again on exit.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"
# shellcheck source=../support/e2e.sh
. "$ROOT/tests/support/e2e.sh"

WEBHOOK=${CO_WEBHOOK_BIN:-$ROOT/build/test/component-webhook}
MIN_REQUESTS=${CO_CERTS_E2E_REQUESTS:-500}

e2e_need_cluster
if [ ! -x "$WEBHOOK" ]; then
    tap_fail "component-webhook is built" "missing $WEBHOOK; run make test-build"
    tap_done
    exit
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/co-e2e-certs-XXXXXX")
suffix=$$-$RANDOM
ns=co-certs-$suffix
apps=co-certs-apps-$suffix
name=co-certs-$suffix
pids=()
crd_existed=0

stop_all() {
    local p
    for p in "${pids[@]}"; do
        kill -TERM "$p" 2>/dev/null
    done
    for p in "${pids[@]}"; do
        wait "$p" 2>/dev/null
    done
    pids=()
}

# install_crds: the repository's CRDs, the Component CRD with the opt-in v1beta1 (crds/v1beta1/,
# converted by the webhook), replacing whatever an earlier run left (a conversion stanza
# switched to url cannot be applied over: url and service would both be set).
install_crds() {
    local f
    for f in "$ROOT"/crds/core.cs.sap.com_componentpolicies.yaml \
        "$ROOT"/crds/v1beta1/core.cs.sap.com_components.yaml; do
        k replace -f "$f" >/dev/null 2>&1 || k create -f "$f" || return 1
    done
}

cleanup() {
    k delete validatingwebhookconfiguration "$name" --ignore-not-found >/dev/null 2>&1
    k delete mutatingwebhookconfiguration "$name" --ignore-not-found >/dev/null 2>&1
    for c in $(k -n "$apps" get components.v1alpha1.core.cs.sap.com -o name 2>/dev/null); do
        k -n "$apps" patch "$c" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
    done
    if [ "$crd_existed" = 1 ]; then
        k replace -f "$ROOT/crds/core.cs.sap.com_components.yaml" >/dev/null 2>&1
    else
        # Wait: the next suite may install them again.
        k delete -f "$ROOT/crds/" --ignore-not-found --timeout=60s >/dev/null 2>&1
    fi
    stop_all
    k delete namespace "$ns" "$apps" --wait=false >/dev/null 2>&1
    if [ "$TAP_FAILED" != 0 ]; then
        for f in "$work"/webhook-*.log; do
            [ -e "$f" ] || continue
            echo "# --- $(basename "$f") (last 40 lines)"
            tail -n 40 "$f" | sed 's/^/# /'
        done
    fi
    rm -rf "$work"
}
trap cleanup EXIT

wait_for() {
    local secs=$1
    shift
    local i
    for i in $(seq 1 $((secs * 2))); do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.5
    done
    return 1
}

# start_webhook TAG PORT PROBE [flags...]: one replica, self-managed, logs in webhook-TAG.log.
start_webhook() {
    local tag=$1 port=$2 probe=$3
    shift 3
    "$WEBHOOK" --kubeconfig "$CO_TEST_KUBECONFIG" --namespace "$ns" \
        --cert-extra-name 127.0.0.1 --validating-webhook-configuration "$name" \
        --mutating-webhook-configuration "$name" --conversion-crd components.core.cs.sap.com \
        --webhook-bind-address "127.0.0.1:$port" --health-probe-bind-address "127.0.0.1:$probe" \
        --metrics-bind-address "127.0.0.1:$probe" --cert-check-interval 2s \
        --shutdown-timeout-seconds 5 --log-level debug "$@" >"$work/webhook-$tag.log" 2>&1 &
    pids+=("$!")
}

secret_field() { # KEY: the decoded value of a data key of the Secret
    k -n "$ns" get secret component-webhook-certs -o "jsonpath={.data.${1//./\\.}}" | base64 -d
}
metric() { # PROBE NAME-AND-LABELS: a metric's value, 0 when absent
    curl -sf "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2; f=1} END {if (!f) print 0}'
}

# --- cluster side: CRDs, namespaces, webhook configurations without a CA bundle ----------------

if k get crd components.core.cs.sap.com >/dev/null 2>&1; then
    crd_existed=1
fi
tap_check "test_certs__crds_install" install_crds
tap_check "test_certs__crds_established" k wait --for=condition=Established --timeout=60s \
    crd/components.core.cs.sap.com crd/componentpolicies.core.cs.sap.com
k create namespace "$ns" >/dev/null
k create namespace "$apps" >/dev/null

port=$(free_port)
probe=$(free_port)
base="https://127.0.0.1:$port"
k patch crd components.core.cs.sap.com --type=json \
    -p "[{\"op\":\"replace\",\"path\":\"/spec/conversion/webhook/clientConfig\",\"value\":{\"url\":\"$base/convert\"}}]" \
    >/dev/null
"$KUBECTL" kustomize "$ROOT/deploy/webhook" >"$work/deploy.yaml"
k create --dry-run=client -o json -f "$work/deploy.yaml" |
    jq --arg base "$base" --arg name "$name" '
      (if .kind == "List" then .items else [.] end)[]
      | select(.kind | test("WebhookConfiguration$"))
      | .metadata.name = $name
      | .webhooks[] |= (.clientConfig = {url: ($base + .clientConfig.service.path)})
    ' >"$work/webhooks.json"
tap_check "test_certs__configurations_without_ca_bundle_register" k apply -f "$work/webhooks.json"

# --- bootstrap: no Secret; the webhook creates it and injects the bundle ----------------------

tap_check_fails "test_certs__no_secret_at_start" "NotFound|not found" \
    k -n "$ns" get secret component-webhook-certs
start_webhook a "$port" "$probe" --ca-validity 90s --cert-validity 30s --cert-backdate 0s \
    --ca-publish-delay 3s
tap_check "test_certs__ready_once_certificate_served_and_injected" \
    wait_for 120 curl -sf "http://127.0.0.1:$probe/readyz"
tap_eq "test_certs__secret_created_and_labelled" "component-webhook kubernetes.io/tls" \
    "$(k -n "$ns" get secret component-webhook-certs -o \
        jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by} {.type}' 2>&1)"
bundle_b64=$( (secret_field ca.crt && secret_field ca-previous.crt 2>/dev/null) | base64 -w0)
tap_eq "test_certs__bundle_injected_into_validating" "$bundle_b64" \
    "$(k get validatingwebhookconfiguration "$name" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')"
tap_eq "test_certs__bundle_injected_into_mutating" "$bundle_b64" \
    "$(k get mutatingwebhookconfiguration "$name" -o jsonpath='{.webhooks[1].clientConfig.caBundle}')"
tap_eq "test_certs__bundle_injected_into_crd_conversion" "$bundle_b64" \
    "$(k get crd components.core.cs.sap.com -o jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}')"
secret_field tls.crt >"$work/tls.crt"
secret_field ca.crt >"$work/ca.crt"
tap_check "test_certs__served_certificate_verifies_with_openssl" \
    openssl verify -CAfile "$work/ca.crt" -purpose sslserver "$work/tls.crt"
tap_check "test_certs__serving_certificate_names" \
    "$WEBHOOK" certs verify --ca "$work/ca.crt" --cert "$work/tls.crt" \
    --name "component-webhook.$ns.svc"

component() { # NAME VERSION [ROUND]
    if [ "$2" = v1alpha1 ]; then
        printf 'apiVersion: core.cs.sap.com/v1alpha1\nkind: Component\nmetadata:\n  name: %s\n  namespace: %s\n  labels:\n    round: "%s"\nspec:\n  sourceRef:\n    fluxGitRepository:\n      name: repo\n' "$1" "$apps" "${3:-0}"
    else
        printf 'apiVersion: core.cs.sap.com/v1beta1\nkind: Component\nmetadata:\n  name: %s\n  namespace: %s\n  labels:\n    round: "%s"\nspec:\n  source:\n    fluxGitRepository:\n      name: repo\n' "$1" "$apps" "${3:-0}"
    fi
}
# Only the webhook refuses a self-dependency (the CRD schema cannot express it).
out=$( (component self v1alpha1 && printf '  dependencies:\n  - name: self\n') | k apply -f - 2>&1)
if grep -q "admission webhook \"validate.components.core.cs.sap.com\" denied the request: spec.dependencies\\[0\\]: Invalid value: \"$apps/self\": a Component cannot depend on itself" <<<"$out"; then
    tap_ok "test_certs__api_server_trusts_the_chain"
else
    tap_fail "test_certs__api_server_trusts_the_chain" "$out"
fi
tap_check "test_certs__component_created_through_the_webhooks" \
    sh -c "$(declare -f component); apps=$apps; component first v1beta1 | \"$KUBECTL\" --kubeconfig \"$CO_TEST_KUBECONFIG\" create -f -"

# --- rotation under load ----------------------------------------------------------------------

ca_before=$(metric "$probe" 'component_webhook_certificate_rotations_total{certificate="ca"}')
serving_before=$(metric "$probe" 'component_webhook_certificate_rotations_total{certificate="serving"}')
first_ca=$(secret_field ca.crt | openssl x509 -noout -fingerprint -sha256)
sent=0
failed=0
batch=0
start=$(date +%s)
# At least MIN_REQUESTS writes, and long enough for the CA (90 s, rotated at 60 s) to rotate
# and the serving certificate to be re-issued by the new CA. The first 20 rounds create 500
# Components; later rounds apply them again with a new label (updates through the webhooks), so
# the number of objects stays bounded however long it takes.
while :; do
    elapsed=$(($(date +%s) - start))
    now_ca=$(secret_field ca.crt | openssl x509 -noout -fingerprint -sha256)
    if [ "$sent" -ge "$MIN_REQUESTS" ] && [ "$now_ca" != "$first_ca" ] &&
        secret_field tls.crt | openssl verify -CAfile <(secret_field ca.crt) >/dev/null 2>&1 &&
        [ "$elapsed" -ge 70 ]; then
        break
    fi
    if [ "$elapsed" -ge 400 ]; then
        break
    fi
    batch=$((batch + 1))
    : >"$work/batch.yaml"
    for i in $(seq 1 25); do
        v=v1alpha1
        [ $((i % 2)) = 0 ] && v=v1beta1
        component "c-$((batch % 20))-$i" "$v" "$batch" >>"$work/batch.yaml"
        echo --- >>"$work/batch.yaml"
    done
    if ! k apply -f "$work/batch.yaml" >"$work/batch.out" 2>&1; then
        n=$(grep -c '^Error\|error' "$work/batch.out")
        failed=$((failed + ${n:-1}))
        cat "$work/batch.out" >>"$work/failures.log"
    fi
    sent=$((sent + 25))
done
ca_after=$(metric "$probe" 'component_webhook_certificate_rotations_total{certificate="ca"}')
serving_after=$(metric "$probe" 'component_webhook_certificate_rotations_total{certificate="serving"}')
echo "# $sent writes in $(($(date +%s) - start)) s; CA rotations $ca_before -> $ca_after," \
    "serving certificates $serving_before -> $serving_after"
if [ "$sent" -ge "$MIN_REQUESTS" ]; then
    tap_ok "test_certs__at_least_${MIN_REQUESTS}_writes_during_rotation"
else
    tap_fail "test_certs__at_least_${MIN_REQUESTS}_writes_during_rotation" "only $sent"
fi
tap_eq "test_certs__no_request_failed_during_rotation" 0 "$failed"
if [ "$failed" != 0 ]; then
    head -n 20 "$work/failures.log" | sed 's/^/# /'
fi
tap_eq "test_certs__every_component_stored" 501 \
    "$(k -n "$apps" get components.v1alpha1.core.cs.sap.com -o name | wc -l | tr -d ' ')"
if awk -v a="$ca_after" -v b="$ca_before" 'BEGIN { exit !(a >= b + 1) }' &&
    awk -v a="$serving_after" -v b="$serving_before" 'BEGIN { exit !(a >= b + 2) }'; then
    tap_ok "test_certs__ca_and_serving_certificate_rotated"
else
    tap_fail "test_certs__ca_and_serving_certificate_rotated" \
        "CA $ca_before -> $ca_after, serving $serving_before -> $serving_after"
fi
# The log tells the story: a CA rotation, then (after publication) the serving certificate
# re-issued by the new CA, and expired CAs leaving the bundle.
if grep -q 'msg="certificates rotated".*reason="CA rotated' "$work/webhook-a.log" &&
    grep -q 'reason="serving certificate re-issued by the new CA"' "$work/webhook-a.log"; then
    tap_ok "test_certs__rotation_logged"
else
    tap_fail "test_certs__rotation_logged" "$(grep 'rotated' "$work/webhook-a.log" | tail -n 3)"
fi
expiry=$(metric "$probe" 'component_webhook_certificate_expiry_seconds{certificate="serving"}')
if awk -v e="$expiry" 'BEGIN { exit !(e > 0 && e <= 30) }'; then
    tap_ok "test_certs__expiry_metric"
else
    tap_fail "test_certs__expiry_metric" "serving expiry $expiry"
fi
# The CA's expiry is reported too and is never before the serving certificate's; the injection
# error counter is exported.
ca_expiry=$(metric "$probe" 'component_webhook_certificate_expiry_seconds{certificate="ca"}')
inject_errors=$(curl -sf "http://127.0.0.1:$probe/metrics" |
    awk '$1 == "component_webhook_ca_injection_errors_total" {print $2; f=1} END {if (!f) print "absent"}')
if awk -v c="$ca_expiry" -v e="$expiry" 'BEGIN { exit !(c > 0 && c >= e) }' &&
    [ "$inject_errors" != absent ]; then
    tap_ok "test_certs__ca_expiry_and_injection_error_metrics"
else
    tap_fail "test_certs__ca_expiry_and_injection_error_metrics" \
        "ca expiry $ca_expiry, serving expiry $expiry, injection errors $inject_errors"
fi
stop_all
# What is injected is exactly the Secret's bundle: the current CA and the earlier ones still
# valid (the old CA stays trusted until it expires).
bundle_b64=$( (secret_field ca.crt && secret_field ca-previous.crt 2>/dev/null) | base64 -w0)
tap_eq "test_certs__injected_bundle_is_the_secrets_after_rotations" "$bundle_b64" \
    "$(k get validatingwebhookconfiguration "$name" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')"

# --- two replicas at once: one Secret, one CA ------------------------------------------------

k -n "$ns" delete secret component-webhook-certs >/dev/null
probe_b=$(free_port)
port_b=$(free_port)
start_webhook b "$port" "$probe" --leader-elect
start_webhook c "$port_b" "$probe_b" --leader-elect
tap_check "test_certs__first_replica_ready" wait_for 120 curl -sf "http://127.0.0.1:$probe/readyz"
tap_check "test_certs__second_replica_ready" wait_for 120 curl -sf "http://127.0.0.1:$probe_b/readyz"
tap_eq "test_certs__one_secret" 1 \
    "$(k -n "$ns" get secrets -l app.kubernetes.io/managed-by=component-webhook -o name | wc -l | tr -d ' ')"
tap_eq "test_certs__one_ca" "1 1" \
    "$(secret_field ca.crt | grep -c 'BEGIN CERTIFICATE') $(($(metric "$probe" 'component_webhook_certificate_rotations_total{certificate="ca"}') + $(metric "$probe_b" 'component_webhook_certificate_rotations_total{certificate="ca"}')))"
secret_field ca.crt >"$work/ca2.crt"
same=0
for p in "$port" "$port_b"; do
    if curl -sf --cacert "$work/ca2.crt" -o /dev/null -X POST -H 'Content-Type: application/json' \
        --data-binary '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"DELETE","kind":{"group":"core.cs.sap.com","version":"v1alpha1","kind":"Component"}}}' \
        "https://127.0.0.1:$p/validate/v1alpha1/components"; then
        same=$((same + 1))
    fi
done
tap_eq "test_certs__both_replicas_serve_the_secret_certificate" 2 "$same"

# --- a deleted Secret is recreated and re-injected ----------------------------------------------

old_ca=$(secret_field ca.crt | openssl x509 -noout -fingerprint -sha256)
k -n "$ns" delete secret component-webhook-certs >/dev/null
tap_check "test_certs__deleted_secret_recreated" \
    wait_for 60 sh -c "\"$KUBECTL\" --kubeconfig \"$CO_TEST_KUBECONFIG\" -n $ns get secret component-webhook-certs -o jsonpath='{.metadata.annotations}' | grep -q ca-bundle-sha256"
tap_check "test_certs__recovered_replica_ready" wait_for 60 curl -sf "http://127.0.0.1:$probe/readyz"
new_ca=$(secret_field ca.crt | openssl x509 -noout -fingerprint -sha256)
if [ "$new_ca" != "$old_ca" ]; then
    tap_ok "test_certs__new_ca_after_deletion"
else
    tap_fail "test_certs__new_ca_after_deletion" "CA unchanged: $new_ca"
fi
tap_check "test_certs__requests_pass_after_recovery" \
    wait_for 60 sh -c "$(declare -f component); apps=$apps; component after v1beta1 | \"$KUBECTL\" --kubeconfig \"$CO_TEST_KUBECONFIG\" apply -f -"

k delete validatingwebhookconfiguration "$name" >/dev/null 2>&1
k delete mutatingwebhookconfiguration "$name" >/dev/null 2>&1
stop_all
tap_done
