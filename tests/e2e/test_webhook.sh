#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# component-webhook end to end: the daemon runs as a process on 127.0.0.1 with a certificate
# from a test CA, the real kube-apiserver calls it through the webhook configurations of
# deploy/webhook (clientConfig switched to url + caBundle) and through the Component CRD's
# conversion stanza, and everything is driven with kubectl: invalid Components are refused
# with the precise message, a valid one is stored with defaults, a Warn policy yields a
# kubectl warning, Components written in one version read back in the other, and the
# controller's finalizer and status writes pass even when a policy would refuse the spec.
# Everything it registers is removed again on exit (the control plane is shared).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"
# shellcheck source=../support/e2e.sh
. "$ROOT/tests/support/e2e.sh"

WEBHOOK=${CO_WEBHOOK_BIN:-$ROOT/build/test/component-webhook}

e2e_need_cluster
if [ ! -x "$WEBHOOK" ]; then
    tap_fail "component-webhook is built" "missing $WEBHOOK; run make test-build"
    tap_done
    exit
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/co-e2e-webhook-XXXXXX")
suffix=$$-$RANDOM
ns1=co-wh-a-$suffix
ns2=co-wh-b-$suffix
pid=""
crd_existed=0

# install_crds: the repository's CRDs, the Component CRD with the opt-in v1beta1 (crds/v1beta1/,
# converted by the webhook), replacing whatever an earlier run left (a conversion stanza
# switched to url cannot be applied over: url and service would both be set).
install_crds() {
    local f
    for f in "$ROOT"/crds/core.cs.sap.com_componentpolicies.yaml \
        "$ROOT"/crds/core.cs.sap.com_blueprints.yaml \
        "$ROOT"/crds/core.cs.sap.com_blueprintversions.yaml \
        "$ROOT"/crds/v1beta1/core.cs.sap.com_components.yaml; do
        k replace -f "$f" >/dev/null 2>&1 || k create -f "$f" || return 1
    done
}

cleanup() {
    k delete validatingwebhookconfiguration "co-e2e-$suffix" --ignore-not-found >/dev/null 2>&1
    k delete mutatingwebhookconfiguration "co-e2e-$suffix" --ignore-not-found >/dev/null 2>&1
    k delete componentpolicy "co-e2e-warn-$suffix" "co-e2e-deny-$suffix" --ignore-not-found \
        >/dev/null 2>&1
    for ns in "$ns1" "$ns2"; do
        # No finalizer may stay behind: nothing here would ever remove it.
        for c in $(k -n "$ns" get components.v1alpha1.core.cs.sap.com -o name 2>/dev/null); do
            k -n "$ns" patch "$c" --type=merge -p '{"metadata":{"finalizers":null}}' \
                >/dev/null 2>&1
        done
        k delete namespace "$ns" --wait=false >/dev/null 2>&1
    done
    if [ "$crd_existed" = 1 ]; then
        # Back to the conversion stanza of the repository's CRD.
        k replace -f "$ROOT/crds/core.cs.sap.com_components.yaml" >/dev/null 2>&1
    else
        # Wait: the next suite may install them again.
        k delete -f "$ROOT/crds/" --ignore-not-found --timeout=60s >/dev/null 2>&1
    fi
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    fi
    if [ "$TAP_FAILED" != 0 ]; then
        echo "# --- webhook log (last 60 lines)"
        tail -n 60 "$work/webhook.log" 2>/dev/null | sed 's/^/# /'
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# wait_for SECONDS CMD...: retries CMD every half second until it succeeds.
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

# check_eventually NAME SECONDS REGEX CMD...: passes once CMD's output matches REGEX (retried
# every half second); on failure the last output is the diagnostic.
check_eventually() {
    local name=$1 secs=$2 re=$3
    shift 3
    local i out=""
    for i in $(seq 1 $((secs * 2))); do
        out=$("$@" 2>&1)
        if grep -qE -- "$re" <<<"$out"; then
            tap_ok "$name"
            return 0
        fi
        sleep 0.5
    done
    tap_fail "$name" "no output matched /$re/ within ${secs}s; last output:" "$out"
    return 1
}

# --- certificates: a test CA and a serving certificate for 127.0.0.1 -------------------------

(
    cd "$work" &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
            -out ca.crt -days 2 -subj "/CN=co-e2e-webhook-ca" &&
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

# --- CRDs and the webhook process ----------------------------------------------------------

if k get crd components.core.cs.sap.com >/dev/null 2>&1; then
    crd_existed=1
fi
tap_check "test_webhook__crds_install" install_crds
tap_check "test_webhook__crds_established" k wait --for=condition=Established --timeout=60s \
    crd/components.core.cs.sap.com crd/componentpolicies.core.cs.sap.com \
    crd/blueprints.core.cs.sap.com crd/blueprintversions.core.cs.sap.com

port=$(free_port)
probe=$(free_port)
metrics=$(free_port)
base="https://127.0.0.1:$port"
"$WEBHOOK" --kubeconfig "$CO_TEST_KUBECONFIG" --tls-cert-file "$work/tls.crt" \
    --tls-key-file "$work/tls.key" --webhook-bind-address "127.0.0.1:$port" \
    --health-probe-bind-address "127.0.0.1:$probe" --metrics-bind-address "127.0.0.1:$metrics" \
    --shutdown-timeout-seconds 10 --log-level debug >"$work/webhook.log" 2>&1 &
pid=$!

tap_check "test_webhook__ready_once_caches_synced" \
    wait_for 90 curl -sf "http://127.0.0.1:$probe/readyz"
tap_check "test_webhook__serves_tls_with_the_test_ca" \
    curl -sf --cacert "$work/ca.crt" -o /dev/null -X POST -H 'Content-Type: application/json' \
    --data-binary '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"probe","operation":"DELETE","kind":{"group":"core.cs.sap.com","version":"v1alpha1","kind":"Component"}}}' \
    "$base/validate/v1alpha1/components"

k create namespace "$ns1" >/dev/null
k create namespace "$ns2" >/dev/null
# Made before the webhook is registered: only the watch can tell the webhook about it.
tap_check "test_webhook__component_created_before_registration" k apply -f - <<EOF
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: early
  namespace: $ns1
spec:
  sourceRef:
    fluxGitRepository:
      name: repo
  dependencies:
  - namespace: $ns2
    name: late
EOF

# The CRD converts through us; the webhook configurations of deploy/webhook point at us.
tap_check "test_webhook__crd_conversion_points_at_the_webhook" \
    k patch crd components.core.cs.sap.com --type=json -p "[{\"op\":\"replace\",\"path\":\"/spec/conversion/webhook/clientConfig\",\"value\":{\"url\":\"$base/convert\",\"caBundle\":\"$ca_b64\"}}]"
"$KUBECTL" kustomize "$ROOT/deploy/webhook" >"$work/deploy.yaml"
k create --dry-run=client -o json -f "$work/deploy.yaml" |
    jq --arg base "$base" --arg ca "$ca_b64" --arg name "co-e2e-$suffix" '
      (if .kind == "List" then .items else [.] end)[]
      | select(.kind | test("WebhookConfiguration$"))
      | .metadata.name = $name
      | .webhooks[] |= (.clientConfig = {url: ($base + .clientConfig.service.path), caBundle: $ca})
    ' >"$work/webhooks.json"
tap_check "test_webhook__deploy_configurations_register" k apply -f "$work/webhooks.json"
tap_eq "test_webhook__rules_name_components_only" \
    "components,components,componentpolicies,blueprints,blueprintversions" \
    "$(jq -sr '[.[].webhooks[]? | select(.name|startswith("validate")) | .rules[].resources[]] | join(",")' \
        "$work/webhooks.json")"

# component NS NAME VERSION SPEC-YAML (indented by 2): prints a Component manifest.
component() {
    printf 'apiVersion: core.cs.sap.com/%s\nkind: Component\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n%s\n' \
        "$3" "$2" "$1" "$4"
}
apply() { # apply MANIFEST-TEXT [kubectl flags...]
    local text=$1
    shift
    printf '%s\n' "$text" | k apply "$@" -f -
}

git_src='  sourceRef:
    fluxGitRepository:
      name: shop-repo
      namespace: flux-system'

# The webhooks take effect once the API server's own informer has seen the configuration. A
# self-dependency is something only the webhook refuses (the CRD schema cannot express it).
self_dep=$(component "$ns1" self v1alpha1 "$git_src
  dependencies:
  - name: self")
check_eventually "test_webhook__configuration_becomes_active" 60 'admission webhook' \
    apply "$self_dep" --dry-run=server

# --- invalid Components are refused with the precise message ---------------------------------

# The CRD schema (oneOf) may refuse this before the webhook is asked; either message is precise.
tap_check_fails "test_webhook__two_sources_refused" \
    'spec.sourceRef: Forbidden: exactly one of "fluxGitRepository", "fluxOciRepository", "fluxBucket", "fluxHelmChart", "httpRepository", "git", "blueprint" may be set, found "fluxGitRepository", "httpRepository"|"spec.sourceRef" must validate one and only one schema \(oneOf\). Found 2 valid alternatives' \
    apply "$(component "$ns1" two-sources v1alpha1 '  sourceRef:
    fluxGitRepository:
      name: r
    httpRepository:
      url: https://example.com/a.tar.gz')"
tap_check_fails "test_webhook__bad_enum_refused" \
    'spec.updatePolicy: Unsupported value: "Foo": supported values: "Recreate", "Replace", "SsaMerge", "SsaOverride"' \
    apply "$(component "$ns1" bad-enum v1alpha1 "$git_src
  updatePolicy: Foo")"
tap_check_fails "test_webhook__bad_duration_refused" \
    'spec.requeueInterval: Invalid value: "10 minutes"' \
    apply "$(component "$ns1" bad-duration v1alpha1 "$git_src
  requeueInterval: 10 minutes")"
tap_check_fails "test_webhook__self_dependency_refused_by_the_webhook" \
    "admission webhook \"validate.components.core.cs.sap.com\" denied the request: spec.dependencies\\[0\\]: Invalid value: \"$ns1/self\": a Component cannot depend on itself" \
    apply "$self_dep"

# A -> B across namespaces is admitted (B is missing: a warning), B -> A closes a cycle.
a_to_b=$(component "$ns1" a v1alpha1 "$git_src
  dependencies:
  - namespace: $ns2
    name: b")
b_to_a=$(component "$ns2" b v1alpha1 "$git_src
  dependencies:
  - namespace: $ns1
    name: a")
out=$(apply "$a_to_b" 2>&1)
if [ $? = 0 ] && grep -q "Warning: .*$ns2/b.* does not exist" <<<"$out"; then
    tap_ok "test_webhook__missing_dependency_admitted_with_warning"
else
    tap_fail "test_webhook__missing_dependency_admitted_with_warning" "$out"
fi
tap_check_fails "test_webhook__cycle_refused_in_dry_run_too" \
    "dependency cycle.*$ns2/b -> $ns1/a -> $ns2/b" apply "$b_to_a" --dry-run=server
tap_check_fails "test_webhook__cycle_across_namespaces_refused_with_path" \
    "admission webhook \"validate.components.core.cs.sap.com\" denied the request: .*$ns2/b -> $ns1/a -> $ns2/b" \
    apply "$b_to_a"
tap_check_fails "test_webhook__refused_component_not_stored" "NotFound|not found" \
    k -n "$ns2" get components.v1alpha1.core.cs.sap.com b
tap_check_fails "test_webhook__cycle_through_a_watched_component_refused" \
    "$ns2/late -> $ns1/early -> $ns2/late" \
    apply "$(component "$ns2" late v1alpha1 "$git_src
  dependencies:
  - namespace: $ns1
    name: early")"

# --- a valid Component is stored with defaults ----------------------------------------------

tap_check "test_webhook__valid_component_accepted" apply "$(component "$ns1" valid v1alpha1 "$git_src
  requeueInterval: 5m
  dependencies:
  - name: a")"
# retryInterval and timeout stay unset: they follow requeueInterval when it changes.
tap_eq "test_webhook__defaults_stored" \
    "5m   IfUnowned SsaOverride Delete Create $ns1" \
    "$(k -n "$ns1" get components.v1alpha1.core.cs.sap.com valid -o \
        jsonpath='{.spec.requeueInterval} {.spec.retryInterval} {.spec.timeout} {.spec.adoptionPolicy} {.spec.updatePolicy} {.spec.deletePolicy} {.spec.missingNamespacesPolicy} {.spec.dependencies[0].namespace}' 2>&1)"

# --- conversion through the webhook ----------------------------------------------------------

tap_check "test_webhook__v1beta1_component_accepted" apply "$(component "$ns1" beta v1beta1 '  source:
    http:
      url: https://example.com/shop.tar.gz
    path: deploy
  policies:
    update: Replace
  intervals:
    requeue: 2m')"
tap_eq "test_webhook__v1beta1_reads_back_as_v1alpha1" \
    "https://example.com/shop.tar.gz deploy Replace 2m" \
    "$(k -n "$ns1" get components.v1alpha1.core.cs.sap.com beta -o \
        jsonpath='{.spec.sourceRef.httpRepository.url} {.spec.path} {.spec.updatePolicy} {.spec.requeueInterval}{.spec.retryInterval}' 2>&1)"
tap_eq "test_webhook__v1alpha1_reads_back_as_v1beta1" \
    "shop-repo 5m SsaOverride $ns1/a" \
    "$(k -n "$ns1" get components.v1beta1.core.cs.sap.com valid -o \
        jsonpath='{.spec.source.fluxGitRepository.name} {.spec.intervals.requeue} {.spec.policies.update} {.spec.dependencies[0].namespace}/{.spec.dependencies[0].name}' 2>&1)"
tap_eq "test_webhook__list_converts_every_object" "a beta early valid" \
    "$(k -n "$ns1" get components.v1beta1.core.cs.sap.com -o jsonpath='{.items[*].metadata.name}' 2>&1)"

# --- lifecycle fields (docs/lifecycle.md, "Validation and policies") -------------------------

tap_check_fails "test_webhook__lifecycle_values_refused_with_v1alpha1_paths" \
    'spec.gracePeriod: Invalid value: "0s": must be a positive duration, spec.prerequisites\[0\].kind: Invalid value: "deploy_ment": must be a kind' \
    apply "$(component "$ns2" bad-lifecycle v1alpha1 "$git_src
  gracePeriod: 0s
  prerequisites:
  - {apiVersion: apps/v1, kind: deploy_ment, name: db}")"
tap_check_fails "test_webhook__lifecycle_values_refused_with_v1beta1_paths" \
    'spec.intervals.grace: Invalid value: "0s": must be a positive duration, spec.prerequisites\[1\]: Duplicate value: "apps/v1 Deployment db/postgres Ready"' \
    apply "$(component "$ns2" bad-lifecycle v1beta1 '  source:
    http:
      url: https://example.com/shop.tar.gz
  intervals:
    grace: 0s
  prerequisites:
  - {apiVersion: apps/v1, kind: Deployment, namespace: db, name: postgres}
  - {apiVersion: apps/v1, kind: Deployment, namespace: db, name: postgres, conditionType: Ready}')"
tap_check "test_webhook__lifecycle_component_accepted" apply "$(component "$ns2" lifecycle v1beta1 '  source:
    http:
      url: https://example.com/shop.tar.gz
  intervals:
    grace: 5m
  enabled: false
  managed: false
  suspendMode: ScaleDown
  prerequisites:
  - {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: certificates.cert-manager.io}')"
# stored as v1alpha1: the grace period moved back, the condition type defaulted, no namespace
tap_eq "test_webhook__lifecycle_fields_read_back_as_v1alpha1" \
    "5m false false ScaleDown CustomResourceDefinition Ready <>" \
    "$(k -n "$ns2" get components.v1alpha1.core.cs.sap.com lifecycle -o \
        jsonpath='{.spec.gracePeriod} {.spec.enabled} {.spec.managed} {.spec.suspendMode} {.spec.prerequisites[0].kind} {.spec.prerequisites[0].conditionType} <{.spec.prerequisites[0].namespace}>' 2>&1)"
tap_eq "test_webhook__lifecycle_fields_read_back_as_v1beta1" \
    "5m false ScaleDown Ready" \
    "$(k -n "$ns2" get components.v1beta1.core.cs.sap.com lifecycle -o \
        jsonpath='{.spec.intervals.grace} {.spec.enabled} {.spec.suspendMode} {.spec.prerequisites[0].conditionType}' 2>&1)"

# --- ComponentPolicies ------------------------------------------------------------------------

tap_check_fails "test_webhook__invalid_policy_refused" \
    'spec.rules.sourceKinds.action: Unsupported value: "Block"' \
    apply "apiVersion: core.cs.sap.com/v1alpha1
kind: ComponentPolicy
metadata:
  name: co-e2e-bad-$suffix
spec:
  rules:
    sourceKinds:
      action: Block
      allowed: [git]" --validate=false
tap_check "test_webhook__warn_policy_accepted" apply "apiVersion: core.cs.sap.com/v1alpha1
kind: ComponentPolicy
metadata:
  name: co-e2e-warn-$suffix
spec:
  exemptNamespaces: [$ns2]
  rules:
    sourceKinds:
      action: Warn
      allowed: [fluxGitRepository]"
http_comp=$(component "$ns1" http-source v1alpha1 '  sourceRef:
    httpRepository:
      url: https://example.com/other.tar.gz')
check_eventually "test_webhook__warn_policy_yields_kubectl_warning" 30 \
    "Warning: .*co-e2e-warn-$suffix" apply "$http_comp" --dry-run=server
out=$(apply "$http_comp" 2>&1)
if [ $? = 0 ] && grep -q "Warning: ComponentPolicy \"co-e2e-warn-$suffix\"" <<<"$out"; then
    tap_ok "test_webhook__warned_component_is_stored"
else
    tap_fail "test_webhook__warned_component_is_stored" "$out"
fi
out=$(apply "$(component "$ns2" http-exempt v1alpha1 '  sourceRef:
    httpRepository:
      url: https://example.com/other.tar.gz')" 2>&1)
if [ $? = 0 ] && ! grep -q "Warning:" <<<"$out"; then
    tap_ok "test_webhook__exempt_namespace_not_warned"
else
    tap_fail "test_webhook__exempt_namespace_not_warned" "$out"
fi

# A Deny policy forbids git sources from now on; "valid" (git) already exists.
tap_check "test_webhook__deny_policy_accepted" apply "apiVersion: core.cs.sap.com/v1alpha1
kind: ComponentPolicy
metadata:
  name: co-e2e-deny-$suffix
spec:
  exemptNamespaces: [$ns2]
  rules:
    sourceKinds:
      action: Deny
      allowed: [httpRepository]"
check_eventually "test_webhook__deny_policy_refuses_spec_changes" 30 "co-e2e-deny-$suffix" \
    k -n "$ns1" patch components.v1alpha1.core.cs.sap.com valid --type=merge \
    -p '{"spec":{"path":"elsewhere"}}' --dry-run=server

# --- the controller's writes are never blocked ----------------------------------------------

tap_check "test_webhook__finalizer_update_passes" \
    k -n "$ns1" patch components.v1alpha1.core.cs.sap.com valid --type=merge \
    -p '{"metadata":{"finalizers":["component-operator.cs.sap.com"]}}'
tap_check "test_webhook__status_update_passes" \
    k -n "$ns1" patch components.v1alpha1.core.cs.sap.com valid --subresource=status \
    --type=merge -p '{"status":{"state":"Error","observedGeneration":1}}'
tap_eq "test_webhook__status_stored" "Error" \
    "$(k -n "$ns1" get components.v1alpha1.core.cs.sap.com valid -o jsonpath='{.status.state}' 2>&1)"
tap_check "test_webhook__finalizer_removal_passes" \
    k -n "$ns1" patch components.v1alpha1.core.cs.sap.com valid --type=merge \
    -p '{"metadata":{"finalizers":null}}'
tap_check "test_webhook__delete_passes" \
    k -n "$ns1" delete components.v1alpha1.core.cs.sap.com valid --wait=true --timeout=30s

# --- Blueprints and BlueprintVersions (docs/blueprints.md) ------------------------------------

bp_fix=$ROOT/tests/fixtures/blueprint/valid
jq --arg ns "$ns1" '.metadata.namespace = $ns' "$bp_fix/blueprint.json" >"$work/bp.json"
jq '.spec.files["../x.yaml"] = ""' "$work/bp.json" >"$work/bp-bad.json"
jq --arg ns "$ns1" '.metadata.namespace = $ns' "$bp_fix/blueprintversion.json" >"$work/bpv.json"
tap_check "test_webhook__blueprint_admitted" k apply -f "$work/bp.json"
tap_check_fails "test_webhook__blueprint_path_refused" \
    'admission webhook "validate.blueprints.core.cs.sap.com" denied the request: spec.files\[\.\./x\.yaml\]: Invalid value: "\.\./x\.yaml": must not contain \. or \.\. segments' \
    k apply -f "$work/bp-bad.json"
tap_check "test_webhook__blueprintversion_admitted" k apply -f "$work/bpv.json"
bpv=$(jq -r .metadata.name "$bp_fix/blueprintversion.json")
tap_check_fails "test_webhook__blueprintversion_spec_immutable" \
    'spec.revision: Forbidden: field is immutable: a BlueprintVersion never changes' \
    k -n "$ns1" patch blueprintversions.core.cs.sap.com "$bpv" --type=merge \
    -p '{"spec":{"revision":"generation:2"}}'
tap_check "test_webhook__blueprintversion_labels_change" \
    k -n "$ns1" label blueprintversions.core.cs.sap.com "$bpv" extra=yes
# a blueprint source is one kind among the others: admitted where no policy restricts kinds
# ($ns2 is exempt), refused by the policy that allows httpRepository alone in $ns1
tap_check "test_webhook__component_on_blueprint_admitted" \
    apply "$(component "$ns2" on-blueprint v1alpha1 '  sourceRef:
    blueprint:
      name: web
      namespace: '"$ns1")" --dry-run=server
tap_check_fails "test_webhook__component_on_blueprint_meets_source_kind_policy" \
    'sourceKinds: source kind "blueprint" is not allowed; allowed: "httpRepository"' \
    apply "$(component "$ns1" on-blueprint v1alpha1 '  sourceRef:
    blueprint:
      name: web')" --dry-run=server

# --- metrics and shutdown ------------------------------------------------------------------------

m=$(curl -sf "http://127.0.0.1:$metrics/metrics")
validated=$(printf '%s\n' "$m" |
    sed -n 's|^controller_runtime_webhook_requests_total{webhook="/validate/v1alpha1/components",code="200"} ||p')
converted=$(printf '%s\n' "$m" |
    sed -n 's|^controller_runtime_webhook_requests_total{webhook="/convert",code="200"} ||p')
if [ "${validated:-0}" -gt 0 ] 2>/dev/null && [ "${converted:-0}" -gt 0 ] 2>/dev/null; then
    tap_ok "test_webhook__metrics_count_requests"
else
    tap_fail "test_webhook__metrics_count_requests" "validated=$validated converted=$converted"
fi

# Unregister before stopping (failurePolicy Fail), then SIGTERM drains and exits 0.
k delete validatingwebhookconfiguration "co-e2e-$suffix" >/dev/null 2>&1
k delete mutatingwebhookconfiguration "co-e2e-$suffix" >/dev/null 2>&1
k delete componentpolicy "co-e2e-warn-$suffix" "co-e2e-deny-$suffix" --ignore-not-found \
    >/dev/null 2>&1
if [ "$crd_existed" = 1 ]; then
    k replace -f "$ROOT/crds/core.cs.sap.com_components.yaml" >/dev/null 2>&1
fi
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=""
tap_eq "test_webhook__sigterm_exits_cleanly" 0 "$rc"
if grep -q 'msg=stopped' "$work/webhook.log"; then
    tap_ok "test_webhook__shutdown_logged"
else
    tap_fail "test_webhook__shutdown_logged" "$(tail -n 5 "$work/webhook.log")"
fi
tap_done
