#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The CustomResourceDefinitions of crds/ against a real kube-apiserver, driven with kubectl:
# both install and become Established, the Component CRD serving v1alpha1 only and converting
# nothing; every valid Component and ComponentPolicy fixture is
# accepted (server-side dry run, then a real create that must read back without a single
# pruned field); objects that break the schema are rejected with a message naming the field
# (for enums, exactly the message the model itself produces); unknown fields are pruned
# everywhere except spec.values; the status subresources (a policy's audit report included) and
# the Component status default work; `kubectl
# explain` shows the descriptions; `kubectl get comp` shows State, Reason and Age.
#
# v1beta1: the Component CRD of crds/v1beta1/ (the opt-in) is applied over that of crds/ and
# serves both versions, v1beta1 preferred. Without a conversion webhook the apiserver cannot
# store or list v1beta1 objects while the CRD names the webhook, so the v1beta1 checks apply
# the same CRD with the conversion stanza replaced by strategy None (the apiserver then only
# relabels apiVersion). Real conversion is checked end to end with the webhook (tests/e2e).
#
# The control plane is shared with other suites: everything lives in a namespace of its own
# and the CRDs are put back the way they were found (deleted if they did not exist).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/component-operator"
KUBECTL=${KUBECTL:-$(command -v kubectl || echo "$CACHE/bin/kubectl")}
FIX=$ROOT/tests/fixtures
GROUP=core.cs.sap.com
COMP_CRD=components.$GROUP
POLICY_CRD=componentpolicies.$GROUP
BP_CRD=blueprints.$GROUP
BPV_CRD=blueprintversions.$GROUP
CRDS=("$COMP_CRD" "$POLICY_CRD" "$BP_CRD" "$BPV_CRD")
V1=components.v1alpha1.$GROUP

if [ -z "${CO_TEST_KUBECONFIG:-}" ]; then
    echo "CO_TEST_KUBECONFIG is not set (run through tests/run.sh)" >&2
    exit 1
fi
command -v jq >/dev/null 2>&1 || {
    echo "jq is missing (make deps)" >&2
    exit 1
}

k() { "$KUBECTL" --kubeconfig "$CO_TEST_KUBECONFIG" --request-timeout=60s "$@"; }

ns=co-crds-$$-$RANDOM
tmp=$(mktemp -d "${TMPDIR:-/tmp}/co-test-crds-XXXXXX")
policies=()

# The CRDs as they were before this suite (a file per CRD that existed).
for crd in "${CRDS[@]}"; do
    k get crd "$crd" -o json >"$tmp/before-$crd.json" 2>/dev/null || rm -f "$tmp/before-$crd.json"
done

# put_back NAME: restores the CRD as found, or deletes it when it did not exist.
put_back() {
    local crd=$1
    if [ -f "$tmp/before-$crd.json" ]; then
        local rv
        rv=$(k get crd "$crd" -o jsonpath='{.metadata.resourceVersion}' 2>/dev/null) || return
        jq --arg rv "$rv" 'del(.status, .metadata.managedFields, .metadata.uid,
            .metadata.creationTimestamp, .metadata.generation) | .metadata.resourceVersion = $rv' \
            "$tmp/before-$crd.json" | k replace -f - >/dev/null 2>&1
    else
        k delete crd "$crd" --ignore-not-found --timeout=120s >/dev/null 2>&1
    fi
}

cleanup() {
    for p in "${policies[@]}"; do
        k delete componentpolicies.$GROUP "$p" --ignore-not-found --wait=false >/dev/null 2>&1
    done
    k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
    for crd in "${CRDS[@]}"; do
        put_back "$crd"
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

# yaml_json FILE: a YAML manifest as JSON (through kubectl, so no extra tool is needed).
yaml_json() { k create --dry-run=client -o json -f "$1"; }

# retry SECONDS CMD...: runs CMD until it succeeds or SECONDS have passed; prints its output.
retry() {
    local deadline=$(($(date +%s) + $1)) out
    shift
    while :; do
        if out=$("$@" 2>&1); then
            printf '%s' "$out"
            return 0
        fi
        if [ "$(date +%s)" -ge "$deadline" ]; then
            printf '%s' "$out"
            return 1
        fi
        sleep 2
    done
}

# squash: whitespace runs to one space (kubectl explain wraps and indents descriptions).
squash() { tr -s ' \t\n' '   ' | sed 's/^ //; s/ $//'; }

# in_ns NAME: the object on stdin moved into the test namespace under NAME.
# (finalizers go: nothing here would remove them, and the namespace must be deletable)
in_ns() {
    jq --arg ns "$ns" --arg n "$1" \
        '.metadata.namespace = $ns | .metadata.name = $n | del(.metadata.finalizers)'
}

# --- install ---------------------------------------------------------------------------------

for f in "$ROOT"/crds/*.yaml "$ROOT"/crds/v1beta1/*.yaml; do
    out=$tmp/$(basename "$(dirname "$f")")-$(basename "$f" .yaml).json
    yaml_json "$f" >"$out" || {
        tap_fail "test_crds__committed_files_parse" "$f"
    }
done
comp_json=$tmp/crds-${GROUP}_components.json
policy_json=$tmp/crds-${GROUP}_componentpolicies.json
beta_json=$tmp/v1beta1-${GROUP}_components.json
# the Component CRD whose descriptions `kubectl explain` shows (explains() below)
explained_json=$comp_json

tap_check "test_crds__install" \
    k apply --server-side --force-conflicts --field-manager=co-test-crds -f "$comp_json" -f "$policy_json" \
    -f "$tmp/crds-${GROUP}_blueprints.json" -f "$tmp/crds-${GROUP}_blueprintversions.json"
for crd in "${CRDS[@]}"; do
    tap_check "test_crds__established__$crd" \
        k wait --for=condition=Established --timeout=120s "crd/$crd"
    tap_check "test_crds__names_accepted__$crd" \
        k wait --for=condition=NamesAccepted --timeout=120s "crd/$crd"
done

tap_eq "test_crds__component_versions_served_and_stored" \
    "$(jq -r '[.spec.versions[] | "\(.name):\(.served):\(.storage)"] | join(" ")' "$comp_json")" \
    "$(k get crd "$COMP_CRD" -o jsonpath='{range .spec.versions[*]}{.name}:{.served}:{.storage} {end}' | sed 's/ $//')"
tap_eq "test_crds__component_versions_v1alpha1_only" "v1alpha1:true:true" \
    "$(jq -r '[.spec.versions[] | "\(.name):\(.served):\(.storage)"] | join(" ")' "$comp_json")"
# conversion: the CRD in the cluster as in FILE
conversion_of_file() {
    jq -r '.spec.conversion | "\(.strategy) \(.webhook.clientConfig.service.namespace)/\(.webhook.clientConfig.service.name)\(.webhook.clientConfig.service.path)"' "$1"
}
conversion() {
    k get crd "$COMP_CRD" -o jsonpath='{.spec.conversion.strategy} {.spec.conversion.webhook.clientConfig.service.namespace}/{.spec.conversion.webhook.clientConfig.service.name}{.spec.conversion.webhook.clientConfig.service.path}'
}
tap_eq "test_crds__no_conversion_webhook" "None /" "$(conversion)"
tap_eq "test_crds__component_is_namespaced" Namespaced \
    "$(k get crd "$COMP_CRD" -o jsonpath='{.spec.scope}')"
tap_eq "test_crds__policy_is_cluster_scoped" Cluster \
    "$(k get crd "$POLICY_CRD" -o jsonpath='{.spec.scope}')"
comp_plural=$(jq -r .spec.names.plural "$comp_json")
policy_plural=$(jq -r .spec.names.plural "$policy_json")
# both_listed: the group's resources, once discovery lists both (it may lag behind Established)
both_listed() {
    local out
    out=$(k api-resources --api-group=$GROUP --no-headers 2>&1)
    printf '%s' "$out"
    grep -q "^$comp_plural " <<<"$out" && grep -q "^$policy_plural " <<<"$out"
}
api=$(retry 60 both_listed)
# discovered CRD-FILE PLURAL VERSION NAMESPACED: the resource is listed with its short names
discovered() {
    local plural=$2 short kind
    short=$(jq -r '.spec.names.shortNames // [] | join(",")' "$1")
    kind=$(jq -r .spec.names.kind "$1")
    grep -qE "^$plural +$short +$GROUP/$3 +$4 +$kind\$" <<<"$api"
}
if [ "$(jq -r '.spec.names.shortNames[0]' "$comp_json")" = comp ] &&
    discovered "$comp_json" "$comp_plural" v1alpha1 true; then
    tap_ok "test_crds__discovery_short_name_comp"
else
    tap_fail "test_crds__discovery_short_name_comp" "$api"
fi
if discovered "$policy_json" "$policy_plural" v1alpha1 false; then
    tap_ok "test_crds__discovery_component_policy"
else
    tap_fail "test_crds__discovery_component_policy" "$api"
fi
# group_versions: the group's versions in discovery, space-separated
group_versions() { k api-versions | grep "^$GROUP/" | sort | tr '\n' ' '; }
tap_eq "test_crds__only_v1alpha1_discovered" "$GROUP/v1alpha1 " "$(group_versions)"

tap_check "test_crds__namespace" k create namespace "$ns"

# kube-apiserver 1.20 built with Go 1.19 (tests/env/kube-apiserver.sh) refuses every empty
# string in a custom resource as `must be of type string: "null"`: its vendored kube-openapi
# validator compares reflect.Values, and Go 1.19 made "" equal to the zero value there. Such a
# build is detected here, and the checks whose objects hold an empty string are skipped by
# name instead of failing for the apiserver's sake.
empty_ok=1
jq '.spec.path = ""' "$FIX/component/valid/minimal.json" | in_ns probe-empty >"$tmp/probe.json"
out=$(k create --dry-run=server --validate=false -f "$tmp/probe.json" 2>&1)
if grep -qF 'must be of type string: "null"' <<<"$out"; then
    empty_ok=0
    tap_skip "test_crds__apiserver_accepts_empty_strings" \
        "this kube-apiserver build refuses empty strings (vendored kube-openapi validator)"
else
    tap_eq "test_crds__apiserver_accepts_empty_strings" "" "$(printf '%s' "$out" | grep -v created)"
fi
# needs_empty FILE: the spec of FILE (its status when it has no spec; a create drops the
# status) holds an empty string, and the apiserver cannot take it.
needs_empty() {
    [ "$empty_ok" = 0 ] &&
        jq -e '[(.spec // .status) | .. | select(. == "")] | length > 0' "$1" >/dev/null
}

# --- valid objects ---------------------------------------------------------------------------

# accept KIND-PLURAL NAME FILE: server-side dry run, real create, and the spec reads back
# unchanged (a field missing from the schema would have been pruned silently).
# --validate=false: the apiserver judges, not kubectl's copy of the published schema.
accept() {
    local what=$1 name=$2 file=$3 out back want
    if needs_empty "$file"; then
        tap_skip "test_crds__valid_accepted__$name" "holds an empty string (see above)"
        tap_skip "test_crds__valid_reads_back_unpruned__$name" "holds an empty string (see above)"
        return
    fi
    if ! out=$(k create --dry-run=server --validate=false -f "$file" 2>&1); then
        tap_fail "test_crds__valid_accepted__$name" "$out"
        return
    fi
    if ! out=$(k create --validate=false -f "$file" 2>&1); then
        tap_fail "test_crds__valid_accepted__$name" "$out"
        return
    fi
    tap_ok "test_crds__valid_accepted__$name"
    want=$(jq -S .spec "$file")
    back=$(k get "$what" -n "$ns" "$(jq -r .metadata.name "$file")" -o json | jq -S .spec)
    tap_eq "test_crds__valid_reads_back_unpruned__$name" "$want" "$back"
}

nvalid=0
for f in "$FIX"/component/valid/*.json "$FIX"/component/full.json; do
    name=$(basename "$f" .json)
    in_ns "$name" <"$f" >"$tmp/valid-$name.json"
    accept "$V1" "$name" "$tmp/valid-$name.json"
    nvalid=$((nvalid + 1))
done
for f in "$FIX"/policy/valid/*.json; do
    name=$ns-$(basename "$f" .json)
    jq --arg n "$name" '.metadata.name = $n' "$f" >"$tmp/policy-$name.json"
    policies+=("$name")
    accept componentpolicies.$GROUP "policy-$(basename "$f" .json)" "$tmp/policy-$name.json"
done
# Blueprints and BlueprintVersions (docs/blueprints.md): names kept, the version's is derived
# from its digest
nbp=0
for f in "$FIX"/blueprint/valid/*.json; do
    name=$(basename "$f" .json)
    jq --arg ns "$ns" '.metadata.namespace = $ns' "$f" >"$tmp/bp-$name.json"
    case $(jq -r .kind "$f") in
    Blueprint) accept "$BP_CRD" "blueprint-$name" "$tmp/bp-$name.json" ;;
    *) accept "$BPV_CRD" "blueprint-$name" "$tmp/bp-$name.json" ;;
    esac
    nbp=$((nbp + 1))
done
tap_eq "test_crds__blueprint_fixtures" 3 "$nbp"
tap_eq "test_crds__blueprintversion_printer_columns" "web generation:1" \
    "$(k get "$BPV_CRD" -n "$ns" --no-headers | awk '{print $2, $3}')"
tap_check_fails "test_crds__blueprint_files_are_strings" 'spec.files.a: Invalid value: "integer"' \
    k create --validate=false -f - <<<"{\"apiVersion\":\"$GROUP/v1alpha1\",\"kind\":\"Blueprint\",
    \"metadata\":{\"namespace\":\"$ns\",\"name\":\"bad\"},\"spec\":{\"files\":{\"a\":1}}}"
tap_check_fails "test_crds__blueprintversion_requires_its_fields" 'spec.digest: Required value' \
    k create --validate=false -f - <<<"{\"apiVersion\":\"$GROUP/v1alpha1\",\"kind\":\"BlueprintVersion\",
    \"metadata\":{\"namespace\":\"$ns\",\"name\":\"bad\"},\"spec\":{\"blueprint\":\"x\",
    \"revision\":\"generation:1\"}}"

if [ "$nvalid" -ge 20 ]; then
    tap_ok "test_crds__valid_corpus_is_not_empty"
else
    tap_fail "test_crds__valid_corpus_is_not_empty" "only $nvalid fixtures"
fi

# The schema's status default, and the status subresource taking a complete status.
tap_eq "test_crds__status_default_observed_generation" -1 \
    "$(k get "$V1" -n "$ns" minimal -o jsonpath='{.status.observedGeneration}')"
jq '{status: .status}' "$FIX/component/full.json" >"$tmp/status.json"
if needs_empty "$tmp/status.json"; then
    tap_skip "test_crds__status_subresource_accepts_full_status" "holds an empty string"
    tap_skip "test_crds__status_reads_back_unpruned" "holds an empty string"
else
    tap_check "test_crds__status_subresource_accepts_full_status" \
        k patch "$V1" -n "$ns" minimal --subresource=status --type=merge \
        --patch-file="$tmp/status.json"
    tap_eq "test_crds__status_reads_back_unpruned" "$(jq -S .status "$FIX/component/full.json")" \
        "$(k get "$V1" -n "$ns" minimal -o json | jq -S .status)"
fi
tap_check_fails "test_crds__status_state_enum" \
    'status\.state: Unsupported value: "Sleeping": supported values: "Ready", "Pending"' \
    k patch "$V1" -n "$ns" minimal --subresource=status --type=merge \
    -p '{"status":{"state":"Sleeping"}}'
jq '.spec.path = "elsewhere" | {spec: .spec}' "$tmp/valid-minimal.json" >"$tmp/spec-patch.json"
k patch "$V1" -n "$ns" minimal --subresource=status --type=merge \
    --patch-file="$tmp/spec-patch.json" >/dev/null 2>&1
tap_eq "test_crds__status_subresource_ignores_spec" "" \
    "$(k get "$V1" -n "$ns" minimal -o jsonpath='{.spec.path}')"

# The ComponentPolicy's audit report (docs/policy-audit.md): the status subresource takes the
# fixture's complete report and keeps every field of it; a violator's action is an enum.
everything=$ns-everything
jq '{status: .status}' "$FIX/policy/valid/everything.json" >"$tmp/policy-status.json"
tap_check "test_crds__policy_status_subresource_accepts_report" \
    k patch componentpolicies.$GROUP "$everything" --subresource=status --type=merge \
    --patch-file="$tmp/policy-status.json"
tap_eq "test_crds__policy_status_reads_back_unpruned" \
    "$(jq -S .status "$FIX/policy/valid/everything.json")" \
    "$(k get componentpolicies.$GROUP "$everything" -o json | jq -S .status)"
tap_check_fails "test_crds__policy_status_action_enum" \
    'status\.violators(\[0\])?\.action: Unsupported value: "Block"' \
    k patch componentpolicies.$GROUP "$everything" --subresource=status --type=merge \
    -p '{"status":{"violators":[{"namespace":"a","name":"b","action":"Block"}]}}'

# --- objects that break the schema ------------------------------------------------------------

# reject NAME FILE PATTERN...: the apiserver refuses FILE and its message matches every
# PATTERN (extended regular expressions).
reject() {
    local name=$1 file=$2 out p missing=()
    shift 2
    if out=$(k create --dry-run=server --validate=false -f "$file" 2>&1); then
        tap_fail "test_crds__invalid_rejected__$name" "accepted: $out"
        return
    fi
    for p in "$@"; do
        grep -qE -- "$p" <<<"$out" || missing+=("$p")
    done
    if [ ${#missing[@]} = 0 ]; then
        tap_ok "test_crds__invalid_rejected__$name"
    else
        tap_fail "test_crds__invalid_rejected__$name" "message: $out" "${missing[@]/#/missing: }"
    fi
}

# invalid FIXTURE: the fixture's object, moved into the test namespace.
invalid() {
    jq '.object' "$FIX/component/$1.json" | in_ns "bad-$(basename "$1")" >"$tmp/bad.json"
    echo "$tmp/bad.json"
}

# model_errors FIXTURE: the fixture's expected errors (the model's messages) as literal
# regular expressions, into the array pats.
model_errors() {
    pats=()
    local e
    while IFS= read -r e; do
        # shellcheck disable=SC2016 # a sed program, not an expansion
        pats+=("$(printf '%s' "$e" | sed 's/[][\.*^$(){}?+|/]/\\&/g')")
    done < <(jq -r '.errors[]' "$1")
}

# Enums: the apiserver's message is exactly the model's (co/field_error.h renders like it).
for fx in invalid/update-policy-unsupported invalid/adoption-policy-unsupported \
    invalid/delete-policy-unsupported; do
    f=$(invalid "$fx")
    model_errors "$FIX/component/$fx.json"
    reject "$(basename "$fx")" "$f" "${pats[@]}"
done
dur='in body should match .\^\(\[0-9\]\+'
reject duration-pattern "$(invalid invalid/duration-invalid)" \
    "spec\.requeueInterval: Invalid value: \"10 minutes\": spec\.requeueInterval $dur"
reject duration-forms "$(invalid invalid/durations-forms)" \
    "spec\.retryInterval: Invalid value: \"-5m\"" "spec\.reapplyInterval: Invalid value: \"1d\""
reject source-missing "$(invalid invalid/source-missing)" "spec\.sourceRef: Required value"
reject spec-missing "$(invalid invalid/spec-missing)" "spec: Required value"
reject source-none-set "$(invalid invalid/source-none-set)" \
    '"spec\.sourceRef" must validate one and only one schema \(oneOf\)\. Found none valid'
reject source-two-set "$(invalid invalid/source-two-set)" \
    '"spec\.sourceRef" must validate one and only one schema \(oneOf\)\. Found 2 valid'
reject git-ref-two "$(invalid invalid/git-ref-two)" \
    '"spec\.sourceRef\.git\.ref" must validate one and only one schema'
reject git-ref-missing "$(invalid invalid/git-ref-missing)" "spec\.sourceRef\.git\.ref: Required value"
reject http-url-missing "$(invalid invalid/http-url-missing)" \
    "spec\.sourceRef\.httpRepository\.url: Required value"
reject kubeconfig-secret-ref-missing "$(invalid invalid/kubeconfig-without-secret-ref)" \
    "spec\.kubeConfig\.secretRef: Required value"
reject kubeconfig-name-missing "$(invalid invalid/kubeconfig-name-missing)" \
    "spec\.kubeConfig\.secretRef\.name: Required value"
reject decryption-secret-ref "$(invalid invalid/decryption-secret-ref)" \
    "spec\.decryption\.secretRef: Required value"
reject values-from "$(invalid invalid/values-from)" "spec\.valuesFrom\.name: Required value" \
    'spec\.valuesFrom\.name: Invalid value: "": .*at least 1 chars long'
reject post-build-patches "$(invalid invalid/post-build-patches)" \
    "spec\.postBuild\.patches\.target: Required value" "spec\.postBuild\.patches\.patch: Required value"
reject post-build-images "$(invalid invalid/post-build-images)" \
    "spec\.postBuild\.images\.name: Required value"
reject post-build-substitute-type "$(invalid invalid/post-build-variables)" \
    'spec\.postBuild\.substitute\.OK: Invalid value: "integer": .*must be of type string'
reject managed-types "$(invalid invalid/managed-types)" \
    "spec\.additionalManagedTypes\.kind: Required value"
reject dependencies "$(invalid invalid/dependencies)" "spec\.dependencies\.name: Required value"
reject wrong-types "$(invalid invalid/wrong-types)" \
    'spec\.suspend: Invalid value: "string": .*must be of type boolean' \
    'spec\.dependencies: Invalid value: "object": .*must be of type array' \
    'spec\.values: Invalid value: "string": .*must be of type object' \
    'spec\.requeueInterval: Invalid value: "integer": .*must be of type string'
jq '.object' "$FIX/policy/invalid/action-unsupported.json" |
    jq --arg n "$ns-bad" '.metadata.name = $n' >"$tmp/bad-policy.json"
model_errors "$FIX/policy/invalid/action-unsupported.json"
reject policy-action-unsupported "$tmp/bad-policy.json" "${pats[@]}"

# Unknown fields: kubectl's own check against the published schema names each of them; the
# apiserver (1.20 has no strict field validation) prunes them, except inside spec.values.
f=$(invalid invalid/unknown-fields)
unknown=$(jq -r '.errors[] | capture("^(?<p>[^:]+): Forbidden: unknown field$").p |
    split(".") | last' "$FIX/component/invalid/unknown-fields.json")
pats=()
for u in $unknown; do pats+=("unknown field \"$u\""); done
tap_check_fails "test_crds__kubectl_reports_unknown_fields" "${pats[0]}" \
    k create --dry-run=server --validate=strict -f "$f"
out=$(k create --dry-run=server --validate=strict -f "$f" 2>&1)
for p in "${pats[@]}"; do
    if grep -qF -- "$p" <<<"$out"; then
        tap_ok "test_crds__kubectl_names_unknown_field__${p//[^a-z]/_}"
    else
        tap_fail "test_crds__kubectl_names_unknown_field__${p//[^a-z]/_}" "$out"
    fi
done
jq '.spec.values = {"free": {"form": [1, {"deep": true}]}}' "$f" |
    jq '.metadata.name = "pruned"' >"$tmp/pruned.json"
tap_check "test_crds__unknown_fields_created_without_validation" \
    k create --validate=false -f "$tmp/pruned.json"
got=$(k get "$V1" -n "$ns" pruned -o json)
left=""
for path in $(jq -r '.errors[] | capture("^(?<p>[^:]+): Forbidden").p' \
    "$FIX/component/invalid/unknown-fields.json"); do
    if printf '%s' "$got" | jq -e --arg p "$path" 'getpath($p | split(".")) != null' >/dev/null; then
        left="$left $path"
    fi
done
tap_eq "test_crds__unknown_fields_pruned" "" "$left"
tap_eq "test_crds__values_keep_unknown_fields" '{"free":{"form":[1,{"deep":true}]}}' \
    "$(printf '%s' "$got" | jq -c .spec.values)"

# --- kubectl explain ------------------------------------------------------------------------

# explains DESC VERSION FIELD: `kubectl explain component.FIELD` (for VERSION, or the preferred
# version when empty) shows FIELD's own description and that of every field directly below
# it, as the CRD states them.
explains() {
    local desc=$1 version=$2 field=$3 out want missing=() args=()
    [ -n "$version" ] && args=(--api-version="$GROUP/$version")
    out=$(retry 90 k explain "component.$field" "${args[@]}")
    [ -n "$version" ] || version=$(printf '%s\n' "$out" | sed -n "s|^VERSION: *$GROUP/||p")
    out=$(printf '%s' "$out" | squash)
    while IFS= read -r want; do
        [ -n "$want" ] || continue
        grep -qF -- "$(printf '%s' "$want" | squash)" <<<"$out" || missing+=("$want")
    done < <(jq -r --arg v "$version" --arg f "$field" '.spec.versions[] | select(.name == $v) |
        .schema.openAPIV3Schema | reduce ($f | split("."))[] as $k (.; .properties[$k]) |
        .description, (.properties // {} | .[].description)' "$explained_json")
    if [ -z "$version" ]; then
        tap_fail "$desc" "no version in the output of kubectl explain" "$out"
    elif [ ${#missing[@]} = 0 ] && [ -n "$out" ]; then
        tap_ok "$desc"
    else
        tap_fail "$desc" "kubectl explain component.$field (version $version):" "$out" \
            "${missing[@]/#/missing: }"
    fi
}
explains "test_crds__explain_spec" "" spec
explains "test_crds__explain_v1alpha1_spec" v1alpha1 spec
explains "test_crds__explain_v1alpha1_git_source" v1alpha1 spec.sourceRef.git
explains "test_crds__explain_v1alpha1_status" v1alpha1 status
# the preferred version is the only one: no --api-version needed for v1alpha1's fields
explains "test_crds__explain_update_policy" "" spec.updatePolicy

# --- printer columns ------------------------------------------------------------------------

# a Ready condition behind a decoy, so that the Reason column shows the right one
printf '%s' '{"status": {"state": "Error", "observedGeneration": 1, "conditions": [
  {"type": "Other", "status": "True", "reason": "Decoy", "message": "m",
   "lastTransitionTime": "2026-01-02T03:04:05Z"},
  {"type": "Ready", "status": "False", "reason": "ApplyFailed", "message": "m",
   "lastTransitionTime": "2026-01-02T03:04:05Z"}]}}' >"$tmp/printer-status.json"
tap_check "test_crds__status_for_printer_columns" \
    k patch "$V1" -n "$ns" minimal --subresource=status --type=merge \
    --patch-file="$tmp/printer-status.json"
columns_want="NAME $(jq -r '.spec.versions[0].additionalPrinterColumns | map(.name | ascii_upcase) |
    join(" ")' "$comp_json")"
# columns DESC RESOURCE: `kubectl get RESOURCE minimal` prints the CRD's columns and values.
columns() {
    local out
    out=$(k get "$2" -n "$ns" minimal 2>&1)
    if [ "$(printf '%s\n' "$out" | head -n 1 | squash)" = "$columns_want" ] &&
        printf '%s\n' "$out" | sed -n 2p | grep -E '^minimal +Error +ApplyFailed +[0-9]+[smhd]' >/dev/null; then
        tap_ok "$1"
    else
        tap_fail "$1" "expected columns: $columns_want" "$out"
    fi
}
columns "test_crds__printer_columns_v1alpha1" "$V1"
columns "test_crds__printer_columns_get_comp" comp
tap_eq "test_crds__get_comp_serves_v1alpha1" "$GROUP/v1alpha1" \
    "$(k get comp -n "$ns" minimal -o jsonpath='{.apiVersion}')"

# --- v1beta1: the CRD of crds/v1beta1/ applied over it ----------------------------------------

tap_check "test_crds__v1beta1_crd_applies_over_the_default" \
    k apply --server-side --force-conflicts --field-manager=co-test-crds -f "$beta_json"
tap_check "test_crds__v1beta1_crd_established" \
    k wait --for=condition=Established --timeout=120s "crd/$COMP_CRD"
tap_eq "test_crds__v1beta1_crd_versions_served_and_stored" "v1alpha1:true:true v1beta1:true:false" \
    "$(k get crd "$COMP_CRD" -o jsonpath='{range .spec.versions[*]}{.name}:{.served}:{.storage} {end}' | sed 's/ $//')"
tap_eq "test_crds__v1beta1_crd_conversion_webhook_kept" "$(conversion_of_file "$beta_json")" \
    "$(conversion)"
tap_eq "test_crds__v1beta1_crd_conversion_names_the_webhook" \
    "Webhook component-operator/component-webhook/convert" "$(conversion)"
# discovery lags behind the CRD
both_versions() { [ "$(group_versions)" = "$GROUP/v1alpha1 $GROUP/v1beta1 " ]; }
retry 60 both_versions >/dev/null
tap_eq "test_crds__v1beta1_crd_both_versions_discovered" "$GROUP/v1alpha1 $GROUP/v1beta1 " \
    "$(group_versions)"
# comp now names the preferred version, v1beta1
for _ in $(seq 30); do
    api=$(k api-resources --api-group=$GROUP --no-headers 2>&1)
    discovered "$beta_json" "$comp_plural" v1beta1 true && break
    sleep 2
done
if discovered "$beta_json" "$comp_plural" v1beta1 true; then
    tap_ok "test_crds__v1beta1_crd_discovery_short_name_comp"
else
    tap_fail "test_crds__v1beta1_crd_discovery_short_name_comp" "$api"
fi
explained_json=$beta_json
explains "test_crds__explain_v1beta1_spec" v1beta1 spec
explains "test_crds__explain_v1beta1_policies" v1beta1 spec.policies
explains "test_crds__explain_v1alpha1_spec_next_to_v1beta1" v1alpha1 spec

# With the webhook named in the CRD and no webhook running, the apiserver really calls it for
# v1beta1 (which is why the v1beta1 checks below switch conversion off).
jq '.v1beta1' "$FIX/component/conversion/git.json" | in_ns beta-webhook >"$tmp/beta-webhook.json"
tap_check_fails "test_crds__v1beta1_goes_through_the_conversion_webhook" \
    "conversion webhook for $GROUP/v1beta1, Kind=Component failed" \
    k create --dry-run=server --validate=false -f "$tmp/beta-webhook.json"

# --- v1beta1, conversion strategy None ------------------------------------------------------

if k get crd "$COMP_CRD" -o json | jq 'del(.status) | .spec.conversion = {"strategy": "None"}' |
    k replace -f - >"$tmp/replace.out" 2>&1; then
    tap_ok "test_crds__conversion_strategy_none_applied"
else
    tap_fail "test_crds__conversion_strategy_none_applied" "$(cat "$tmp/replace.out")"
fi
# the apiserver picks the new strategy up asynchronously
retry 60 k create --dry-run=server --validate=false -f "$tmp/beta-webhook.json" >/dev/null

for fx in conversion/all-moves conversion/git conversion/http-renamed; do
    name=beta-$(basename "$fx")
    jq '.v1beta1' "$FIX/component/$fx.json" | in_ns "$name" >"$tmp/$name.json"
    tap_check "test_crds__v1beta1_valid_accepted__$(basename "$fx")" \
        k create --dry-run=server --validate=false -f "$tmp/$name.json"
done
jq '.expected' "$FIX/component/defaults/v1beta1.json" | in_ns beta-defaulted >"$tmp/beta-defaulted.json"
tap_check "test_crds__v1beta1_defaulted_accepted" \
    k create --dry-run=server --validate=false -f "$tmp/beta-defaulted.json"

f=$(invalid invalid-v1beta1/beta-enum)
model_errors "$FIX/component/invalid-v1beta1/beta-enum.json"
reject v1beta1-enum "$f" "${pats[@]}"
reject v1beta1-empty-group "$(invalid invalid-v1beta1/empty-group)" \
    'spec\.policies in body should have at least 1 properties'
reject v1beta1-source-without-kind "$(invalid invalid-v1beta1/source-without-kind)" \
    '"spec\.source" must validate one and only one schema \(oneOf\)\. Found none valid'
reject v1beta1-group-not-object "$(invalid invalid-v1beta1/group-not-object)" \
    'spec\.target: Invalid value: "string": .*must be of type object'
tap_check_fails "test_crds__kubectl_reports_unknown_v1beta1_field" 'unknown field "foo"' \
    k create --dry-run=server --validate=strict -f "$(invalid invalid-v1beta1/unknown-group-member)"
tap_check_fails "test_crds__kubectl_reports_v1alpha1_name_in_v1beta1" \
    'unknown field "updatePolicy"' \
    k create --dry-run=server --validate=strict -f "$(invalid invalid-v1beta1/v1alpha1-name-in-v1beta1)"

columns "test_crds__printer_columns_get_comp_v1beta1" comp
tap_eq "test_crds__get_comp_serves_v1beta1" "$GROUP/v1beta1" \
    "$(k get comp -n "$ns" minimal -o jsonpath='{.apiVersion}')"

tap_done
