#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# What the mutating webhook writes into stored Components, against the real kube-apiserver:
# a Component stored before the webhook was registered (as one a cluster switching from the
# Go operator brings along) keeps its spec and metadata.generation through label, annotation
# and finalizer writes, through both served versions, a server-side apply of the same manifest
# and a PUT of it; a new Component is stored without retryInterval and timeout, so that a later
# change of requeueInterval still moves them (they derive from it at reconcile time); and the
# exemption record of ComponentPolicies (docs/security.md) is set only from the authenticated
# requester: a tenant cannot write it (only remove it, which makes the Component stricter), an
# exempt user's spec or record write sets it, other writes keep it.
# Everything it registers is removed again on exit (the control plane is shared).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"
# shellcheck source=../support/e2e.sh
. "$ROOT/tests/support/e2e.sh"

WEBHOOK=${CO_WEBHOOK_BIN:-$ROOT/build/test/component-webhook}
EXEMPT_KEY=component-operator.cs.sap.com/exempt-requester

e2e_need_cluster
if [ ! -x "$WEBHOOK" ]; then
    tap_fail "component-webhook is built" "missing $WEBHOOK; run make test-build"
    tap_done
    exit
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/co-e2e-webhook-defaults-XXXXXX")
suffix=$$-$RANDOM
ns=co-whd-$suffix
policy=co-e2e-exempt-$suffix
pid=""
crd_existed=0

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
    k delete validatingwebhookconfiguration "co-e2e-$suffix" --ignore-not-found >/dev/null 2>&1
    k delete mutatingwebhookconfiguration "co-e2e-$suffix" --ignore-not-found >/dev/null 2>&1
    k delete componentpolicy "$policy" --ignore-not-found >/dev/null 2>&1
    k delete clusterrolebinding "co-e2e-$suffix" --ignore-not-found >/dev/null 2>&1
    k delete clusterrole "co-e2e-$suffix" --ignore-not-found >/dev/null 2>&1
    # No finalizer may stay behind: nothing here would ever remove it.
    for c in $(k -n "$ns" get components.v1alpha1.core.cs.sap.com -o name 2>/dev/null); do
        k -n "$ns" patch "$c" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
    done
    k delete namespace "$ns" --wait=false >/dev/null 2>&1
    if [ "$crd_existed" = 1 ]; then
        k replace -f "$ROOT/crds/core.cs.sap.com_components.yaml" >/dev/null 2>&1
    else
        k delete -f "$ROOT/crds/" --ignore-not-found --timeout=60s >/dev/null 2>&1
    fi
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    fi
    if [ "$TAP_FAILED" != 0 ]; then
        echo "# --- webhook log (last 40 lines)"
        grep -v 'msg=request' "$work/webhook.log" 2>/dev/null | tail -n 40 | sed 's/^/# /'
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

# --- certificates, CRDs, the webhook process and its registration ---------------------------

(
    cd "$work" &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
            -out ca.crt -days 2 -subj "/CN=co-e2e-defaults-ca" &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout tls.key \
            -out tls.csr -subj "/CN=127.0.0.1" &&
        printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' \
            >ext.cnf &&
        openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
            -extfile ext.cnf -out tls.crt
) >"$work/openssl.log" 2>&1 || {
    tap_fail "test certificates are generated" "$(cat "$work/openssl.log")"
    tap_done
    exit
}
ca_b64=$(base64 -w0 <"$work/ca.crt")

if k get crd components.core.cs.sap.com >/dev/null 2>&1; then
    crd_existed=1
fi
tap_check "test_webhook_defaults__crds_install" install_crds
tap_check "test_webhook_defaults__crds_established" k wait --for=condition=Established \
    --timeout=60s crd/components.core.cs.sap.com crd/componentpolicies.core.cs.sap.com

port=$(free_port)
probe=$(free_port)
metrics=$(free_port)
base="https://127.0.0.1:$port"
"$WEBHOOK" --kubeconfig "$CO_TEST_KUBECONFIG" --tls-cert-file "$work/tls.crt" \
    --tls-key-file "$work/tls.key" --webhook-bind-address "127.0.0.1:$port" \
    --health-probe-bind-address "127.0.0.1:$probe" --metrics-bind-address "127.0.0.1:$metrics" \
    --shutdown-timeout-seconds 10 --log-level debug >"$work/webhook.log" 2>&1 &
pid=$!
tap_check "test_webhook_defaults__webhook_ready" \
    wait_for 90 curl -sf "http://127.0.0.1:$probe/readyz"

k create namespace "$ns" >/dev/null
# (kube-apiserver before 1.21 sets no kubernetes.io/metadata.name label to select by)
k label namespace "$ns" "co-e2e-whd=$suffix" >/dev/null

# As the Go operator's users stored them: no webhook, so no defaults, and a dependency without
# its namespace. A tenant's forged exemption record rides along.
cat >"$work/migrated.yaml" <<EOF
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: migrated
  namespace: $ns
  annotations:
    $EXEMPT_KEY: '{"groups":["co-e2e-platform"]}'
spec:
  sourceRef:
    fluxGitRepository:
      name: repo
  requeueInterval: 5m
  dependencies:
  - name: base
EOF
tap_check "test_webhook_defaults__migrated_component_stored_before_registration" \
    k create -f "$work/migrated.yaml"

tap_check "test_webhook_defaults__crd_conversion_points_at_the_webhook" \
    k patch crd components.core.cs.sap.com --type=json -p "[{\"op\":\"replace\",\"path\":\"/spec/conversion/webhook/clientConfig\",\"value\":{\"url\":\"$base/convert\",\"caBundle\":\"$ca_b64\"}}]"
"$KUBECTL" kustomize "$ROOT/deploy/webhook" >"$work/deploy.yaml"
k create --dry-run=client -o json -f "$work/deploy.yaml" |
    jq --arg base "$base" --arg ca "$ca_b64" --arg name "co-e2e-$suffix" '
      (if .kind == "List" then .items else [.] end)[]
      | select(.kind | test("WebhookConfiguration$"))
      | .metadata.name = $name
      | .webhooks[] |= (.clientConfig = {url: ($base + .clientConfig.service.path), caBundle: $ca})
    ' >"$work/webhooks.json"
tap_check "test_webhook_defaults__configurations_register" k apply -f "$work/webhooks.json"

# The configurations take effect once the API server's informer has seen them: a self-dependency
# is something only the validating webhook refuses.
self_dep="apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata: {name: self, namespace: $ns}
spec:
  sourceRef: {fluxGitRepository: {name: repo}}
  dependencies: [{name: self}]"
# (the output is captured first: under pipefail a refused kubectl fails the pipeline)
active_now() {
    local out
    out=$(printf '%s\n' "$self_dep" | k apply --dry-run=server -f - 2>&1)
    grep -q 'admission webhook' <<<"$out"
}
tap_check "test_webhook_defaults__configuration_becomes_active" wait_for 60 active_now

# get VERSION NAME JSONPATH
get() { k -n "$ns" get "components.$1.core.cs.sap.com" "$2" -o "jsonpath=$3" 2>&1; }
spec_json() { k -n "$ns" get components.v1alpha1.core.cs.sap.com "$1" -o json | jq -cS .spec; }

# --- a migrated Component: metadata writes leave spec and generation alone -------------------

gen0=$(get v1alpha1 migrated '{.metadata.generation}')
spec0=$(spec_json migrated)
tap_check "test_webhook_defaults__label_v1alpha1" \
    k -n "$ns" label components.v1alpha1.core.cs.sap.com migrated team=a
tap_check "test_webhook_defaults__label_v1beta1" \
    k -n "$ns" label components.v1beta1.core.cs.sap.com migrated tier=b
tap_check "test_webhook_defaults__annotate" \
    k -n "$ns" annotate components.v1alpha1.core.cs.sap.com migrated note=x
tap_check "test_webhook_defaults__finalizer_added" \
    k -n "$ns" patch components.v1alpha1.core.cs.sap.com migrated --type=merge \
    -p '{"metadata":{"finalizers":["component-operator.cs.sap.com"]}}'
# A PUT of the manifest as it was written (kubectl replace): what a GitOps tool re-applying it
# does; then a server-side apply of it with the field manager the Go operator's users had.
k -n "$ns" get components.v1alpha1.core.cs.sap.com migrated -o json |
    jq --slurpfile m <(k create --dry-run=client -o json -f "$work/migrated.yaml") \
        '.spec = $m[0].spec' >"$work/replace.json"
tap_check "test_webhook_defaults__replace_with_the_same_spec" k replace -f "$work/replace.json"
tap_check "test_webhook_defaults__server_side_apply_of_the_same_spec" \
    k apply --server-side --force-conflicts --field-manager=co-e2e -f "$work/migrated.yaml"
tap_eq "test_webhook_defaults__migrated_generation_unchanged" "$gen0" \
    "$(get v1alpha1 migrated '{.metadata.generation}')"
tap_eq "test_webhook_defaults__migrated_spec_unchanged" "$spec0" "$(spec_json migrated)"
tap_eq "test_webhook_defaults__metadata_writes_stored" "a b x" \
    "$(get v1alpha1 migrated '{.metadata.labels.team} {.metadata.labels.tier} {.metadata.annotations.note}')"

# --- derived intervals stay derived --------------------------------------------------------

tap_check "test_webhook_defaults__component_created" k apply -f - <<EOF
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: fresh
  namespace: $ns
spec:
  sourceRef:
    fluxGitRepository:
      name: repo
  requeueInterval: 5m
  dependencies:
  - name: base
EOF
tap_eq "test_webhook_defaults__created_without_retry_interval_and_timeout" \
    "5m||IfUnowned SsaOverride Delete Create $ns" \
    "$(get v1alpha1 fresh '{.spec.requeueInterval}|{.spec.retryInterval}|{.spec.timeout}{.spec.adoptionPolicy} {.spec.updatePolicy} {.spec.deletePolicy} {.spec.missingNamespacesPolicy} {.spec.dependencies[0].namespace}')"
gen1=$(get v1alpha1 fresh '{.metadata.generation}')
tap_check "test_webhook_defaults__requeue_interval_changed" \
    k -n "$ns" patch components.v1alpha1.core.cs.sap.com fresh --type=merge \
    -p '{"spec":{"requeueInterval":"7m"}}'
tap_eq "test_webhook_defaults__retry_interval_and_timeout_still_derived" "7m||" \
    "$(get v1alpha1 fresh '{.spec.requeueInterval}|{.spec.retryInterval}|{.spec.timeout}')"
tap_check "test_webhook_defaults__v1beta1_requeue_changed" \
    k -n "$ns" patch components.v1beta1.core.cs.sap.com fresh --type=merge \
    -p '{"spec":{"intervals":{"requeue":"3m"}}}'
tap_eq "test_webhook_defaults__v1beta1_retry_and_timeout_still_derived" "3m||" \
    "$(get v1alpha1 fresh '{.spec.requeueInterval}|{.spec.retryInterval}|{.spec.timeout}')"
tap_eq "test_webhook_defaults__spec_changes_move_generation" "$((gen1 + 2))" \
    "$(get v1alpha1 fresh '{.metadata.generation}')"

# --- the exemption record --------------------------------------------------------------------

# A policy with a group exemption; the requests below impersonate a tenant and a platform user.
tap_check "test_webhook_defaults__exempting_policy_created" k apply -f - <<EOF
apiVersion: core.cs.sap.com/v1alpha1
kind: ComponentPolicy
metadata:
  name: $policy
spec:
  namespaceSelector:
    matchLabels: {co-e2e-whd: "$suffix"}
  exemptGroups: [co-e2e-platform]
  rules:
    sourceKinds: {action: Warn, allowed: [httpRepository]}
EOF
tap_check "test_webhook_defaults__impersonated_users_may_write_components" k apply -f - <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: co-e2e-$suffix}
rules:
- apiGroups: [core.cs.sap.com]
  resources: [components]
  verbs: [get, list, create, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: co-e2e-$suffix}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: co-e2e-$suffix}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: co-e2e-tenant}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: co-e2e-admin}
EOF
tenant=(--as co-e2e-tenant)
admin=(--as co-e2e-admin --as-group co-e2e-platform)
warned() {
    local out
    out=$(printf '%s\n' "$1" | k "${tenant[@]}" apply --dry-run=server -f - 2>&1)
    grep -q "$policy" <<<"$out"
}
probe_git="apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata: {name: probe, namespace: $ns}
spec:
  sourceRef: {fluxGitRepository: {name: repo}}"
tap_check "test_webhook_defaults__policy_seen_by_the_webhook" wait_for 30 warned "$probe_git"

key_path="{.metadata.annotations.${EXEMPT_KEY//./\\.}}"
tap_eq "test_webhook_defaults__forged_record_kept_while_spec_unchanged" \
    '{"groups":["co-e2e-platform"]}' "$(get v1alpha1 migrated "$key_path")"
tap_check "test_webhook_defaults__tenant_spec_write" \
    k "${tenant[@]}" -n "$ns" patch components.v1alpha1.core.cs.sap.com migrated --type=merge \
    -p '{"spec":{"requeueInterval":"6m"}}'
tap_eq "test_webhook_defaults__tenant_spec_write_drops_the_record" "" \
    "$(get v1alpha1 migrated "$key_path")"
tap_check "test_webhook_defaults__tenant_writes_the_record" \
    k "${tenant[@]}" -n "$ns" annotate components.v1alpha1.core.cs.sap.com migrated \
    "$EXEMPT_KEY={\"groups\":[\"co-e2e-platform\"]}"
tap_eq "test_webhook_defaults__tenant_cannot_write_the_record" "" \
    "$(get v1alpha1 migrated "$key_path")"
tap_check "test_webhook_defaults__exempt_user_spec_write" \
    k "${admin[@]}" -n "$ns" patch components.v1alpha1.core.cs.sap.com migrated --type=merge \
    -p '{"spec":{"requeueInterval":"8m"}}'
tap_eq "test_webhook_defaults__exempt_user_spec_write_records_the_group" \
    '{"groups":["co-e2e-platform"]}' "$(get v1alpha1 migrated "$key_path")"
gen2=$(get v1alpha1 migrated '{.metadata.generation}')
tap_check "test_webhook_defaults__tenant_labels" \
    k "${tenant[@]}" -n "$ns" label components.v1beta1.core.cs.sap.com migrated later=yes
tap_eq "test_webhook_defaults__record_and_generation_kept_by_a_tenant_label" \
    "{\"groups\":[\"co-e2e-platform\"]} $gen2" \
    "$(get v1alpha1 migrated "$key_path {.metadata.generation}")"
# Removing the record only makes the Component stricter: a tenant may.
tap_check "test_webhook_defaults__tenant_removes_the_record" \
    k "${tenant[@]}" -n "$ns" annotate components.v1alpha1.core.cs.sap.com migrated "$EXEMPT_KEY-"
tap_eq "test_webhook_defaults__record_removed" "" "$(get v1alpha1 migrated "$key_path")"
# An exempt user writing the record itself gets their own, whatever they wrote.
tap_check "test_webhook_defaults__exempt_user_writes_the_record" \
    k "${admin[@]}" -n "$ns" annotate components.v1alpha1.core.cs.sap.com migrated \
    "$EXEMPT_KEY=anything"
tap_eq "test_webhook_defaults__exempt_user_gets_their_own_record" \
    '{"groups":["co-e2e-platform"]}' "$(get v1alpha1 migrated "$key_path")"

# Unregister before stopping (failurePolicy Fail).
k delete validatingwebhookconfiguration "co-e2e-$suffix" >/dev/null 2>&1
k delete mutatingwebhookconfiguration "co-e2e-$suffix" >/dev/null 2>&1
tap_done
