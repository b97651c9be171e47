#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Which versions the Component CRD serves, against the real kube-apiserver, driven with kubectl.
#
# Default install (the CRD of deploy/base, which the chart's defaults render too): v1alpha1
# only, no conversion. With no webhook anywhere, `kubectl get comp`, `kubectl explain
# comp.spec.updatePolicy`, and creating, getting, listing and watching Components through
# `comp` work; v1beta1 is not served; component-webhook started with --conversion-crd against
# this CRD becomes Ready and leaves the CRD as it is.
#
# Opt-in (the kustomize Component deploy/v1beta1 over the base), applied over the default:
# v1beta1 is served and preferred, the webhook injects its CA bundle, and a Component created
# as v1beta1 reads back as v1alpha1 and, written back in that form, as the same v1beta1. With
# the webhook down, every read of the preferred version fails naming the conversion webhook
# (`kubectl get comp`), `kubectl explain comp.spec.updatePolicy` needs --api-version, and the
# stored version components.v1alpha1.core.cs.sap.com stays readable and writable. Turned off
# again (conversion set to None, then the default applied), nothing is lost.
#
# The chart's template of the CRD under helm install and upgrade (a chart of the real chart's
# Chart.yaml, values.yaml and templates/crd-components.yaml, so that nothing else is installed):
# an existing CRD is taken over with --take-ownership only, crds.v1beta1 turns v1beta1 on and
# off (also after a CA bundle was injected), helm uninstall keeps the CRD and the Components,
# and a CRD that serves v1beta1 with a CA bundle (as an earlier version installed it) is taken
# over and turned off by a plain install.
#
# The control plane is shared with other suites: everything lives in a namespace of its own and
# the Component CRD is put back the way it was found (deleted if it did not exist).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"
# shellcheck source=../support/e2e.sh
. "$ROOT/tests/support/e2e.sh"

HELM=${CO_HELM:-$CACHE/bin/helm}
WEBHOOK=${CO_WEBHOOK_BIN:-$ROOT/build/test/component-webhook}
GROUP=core.cs.sap.com
CRD=components.$GROUP
POLICY_CRD=componentpolicies.$GROUP
V1=components.v1alpha1.$GROUP
V2=components.v1beta1.$GROUP
MANAGER=co-test-crd-versions

e2e_need_cluster

work=$(mktemp -d "${TMPDIR:-/tmp}/co-e2e-crd-versions-XXXXXX")
# A discovery cache of its own: kubectl keeps the versions it discovered on disk and goes on
# asking for a version that is no longer served (`kubectl api-versions`, in discovered() below,
# refreshes it).
k() {
    "$KUBECTL" --kubeconfig "$CO_TEST_KUBECONFIG" --cache-dir "$work/kube-cache" \
        --request-timeout=60s "$@"
}
helm() { "$HELM" --kubeconfig "$CO_TEST_KUBECONFIG" "$@"; }

suffix=$$-$RANDOM
ns=co-crdv-$suffix
release=co-crdv-$suffix
release2=co-crdv2-$suffix
pids=()
watch_pid=""

k get crd "$CRD" -o json >"$work/before.json" 2>/dev/null || rm -f "$work/before.json"
policy_crd_existed=0
k get crd "$POLICY_CRD" >/dev/null 2>&1 && policy_crd_existed=1

stop_webhook() {
    local p
    for p in "${pids[@]}"; do
        kill -TERM "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    pids=()
}

cleanup() {
    [ -n "$watch_pid" ] && kill "$watch_pid" 2>/dev/null
    stop_webhook
    if [ -x "$HELM" ]; then
        helm uninstall "$release" -n "$ns" --ignore-not-found >/dev/null 2>&1
        helm uninstall "$release2" -n "$ns" --ignore-not-found >/dev/null 2>&1
    fi
    k delete namespace "$ns" --wait=false >/dev/null 2>&1
    if [ -f "$work/before.json" ]; then
        jq 'del(.status, .metadata.managedFields, .metadata.uid, .metadata.resourceVersion,
            .metadata.creationTimestamp, .metadata.generation)' "$work/before.json" |
            k replace -f - >/dev/null 2>&1
    else
        k delete crd "$CRD" --ignore-not-found --timeout=120s >/dev/null 2>&1
    fi
    [ "$policy_crd_existed" = 1 ] || k delete crd "$POLICY_CRD" --ignore-not-found >/dev/null 2>&1
    if [ "$TAP_FAILED" != 0 ] && [ -f "$work/webhook.log" ]; then
        echo "# --- webhook log (last 30 lines)"
        tail -n 30 "$work/webhook.log" | sed 's/^/# /'
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# wait_for SECONDS CMD...: retries CMD every half second until it succeeds.
wait_for() {
    local end=$(($(date +%s) + $1))
    shift
    while :; do
        "$@" >/dev/null 2>&1 && return 0
        [ "$(date +%s)" -ge "$end" ] && return 1
        sleep 0.5
    done
}

# retry SECONDS CMD...: runs CMD until it succeeds or SECONDS have passed; prints its output.
retry() {
    local end=$(($(date +%s) + $1)) out
    shift
    while :; do
        if out=$("$@" 2>&1); then
            printf '%s' "$out"
            return 0
        fi
        if [ "$(date +%s)" -ge "$end" ]; then
            printf '%s' "$out"
            return 1
        fi
        sleep 1
    done
}

# squash: whitespace runs to one space (kubectl explain wraps and indents descriptions).
squash() { tr -s ' \t\n' '   ' | sed 's/^ //; s/ $//'; }

# crd_of FILE NAME OUT: the CRD NAME among the YAML documents of FILE, as JSON.
crd_of() {
    python3 - "$@" <<'PY'
import json, sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "CustomResourceDefinition" and d["metadata"]["name"] == sys.argv[2]:
        json.dump(d, open(sys.argv[3], "w"))
        break
else:
    sys.exit("no CRD " + sys.argv[2] + " in " + sys.argv[1])
PY
}

# served: the versions the CRD in the cluster serves, and its conversion strategy.
served() {
    k get crd "$CRD" -o json |
        jq -r '([.spec.versions[] | select(.served) | .name] | join(" ")) + " " + .spec.conversion.strategy'
}

# discovered WANT: the group's versions in discovery are WANT (space-separated); discovery
# lags behind the CRD.
discovered() {
    [ "$(k api-versions | grep "^$GROUP/" | sed "s|^$GROUP/||" | sort | tr '\n' ' ')" = "$1 " ]
}

# component NAME VERSION: a Component manifest; v1beta1 regroups the same spec.
component() {
    if [ "$2" = v1alpha1 ]; then
        printf 'apiVersion: %s/v1alpha1\nkind: Component\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  sourceRef:\n    httpRepository:\n      url: https://example.com/%s.tar.gz\n  path: deploy\n  updatePolicy: Replace\n  requeueInterval: 2m\n' \
            "$GROUP" "$1" "$ns" "$1"
    else
        printf 'apiVersion: %s/v1beta1\nkind: Component\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  source:\n    http:\n      url: https://example.com/%s.tar.gz\n    path: deploy\n  target:\n    namespace: %s\n  policies:\n    update: Replace\n  intervals:\n    requeue: 2m\n  values:\n    replicas: 3\n' \
            "$GROUP" "$1" "$ns" "$1" "$ns"
    fi
}

create() { # NAME VERSION
    component "$1" "$2" | k create -f -
}

# --- the CRDs of both installs ------------------------------------------------------------------

tap_check "test_crd_versions__base_renders" \
    sh -c "\"$KUBECTL\" kustomize \"$ROOT/deploy/base\" >\"$work/base.yaml\""
crd_of "$work/base.yaml" "$CRD" "$work/default.json" >/dev/null 2>&1
crd_of "$work/base.yaml" "$POLICY_CRD" "$work/policy.json" >/dev/null 2>&1
# the opt-in: an overlay of the base with the kustomize Component deploy/v1beta1 (kustomize
# takes relative paths only)
mkdir -p "$work/overlay"
rel=$(python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$ROOT/deploy" "$work/overlay")
printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s/base]\ncomponents: [%s/v1beta1]\n' \
    "$rel" "$rel" >"$work/overlay/kustomization.yaml"
tap_check "test_crd_versions__overlay_with_v1beta1_renders" \
    sh -c "\"$KUBECTL\" kustomize \"$work/overlay\" >\"$work/overlay.yaml\""
crd_of "$work/overlay.yaml" "$CRD" "$work/option.json" >/dev/null 2>&1

# --- default: v1alpha1 only, nothing converts, no webhook anywhere -----------------------------

# (the ComponentPolicy CRD too: component-webhook is Ready once it watches ComponentPolicies)
install_default() {
    k replace -f "$work/default.json" >/dev/null 2>&1 || k create -f "$work/default.json" >/dev/null &&
        { k get crd "$POLICY_CRD" >/dev/null 2>&1 || k create -f "$work/policy.json" >/dev/null; }
}
tap_check "test_crd_versions__default_installs" install_default
k wait --for=condition=Established --timeout=60s "crd/$CRD" "crd/$POLICY_CRD" >/dev/null 2>&1
tap_eq "test_crd_versions__default_serves_v1alpha1_only" "v1alpha1 None" "$(served)"
tap_check "test_crd_versions__default_discovery_lists_v1alpha1_only" wait_for 60 discovered v1alpha1
k create namespace "$ns" >/dev/null

tap_check "test_crd_versions__default_create" create a v1alpha1
tap_eq "test_crd_versions__default_get_comp" "$GROUP/v1alpha1 https://example.com/a.tar.gz" \
    "$(k -n "$ns" get comp a -o jsonpath='{.apiVersion} {.spec.sourceRef.httpRepository.url}' 2>&1)"
out=$(k -n "$ns" get comp 2>&1)
if grep -qE '^a +' <<<"$out"; then
    tap_ok "test_crd_versions__default_list_comp"
else
    tap_fail "test_crd_versions__default_list_comp" "$out"
fi
out=$(k get comp -A 2>&1)
if grep -qE "^$ns +a +" <<<"$out"; then
    tap_ok "test_crd_versions__default_list_comp_all_namespaces"
else
    tap_fail "test_crd_versions__default_list_comp_all_namespaces" "$out"
fi

# explain: the description of updatePolicy as the CRD states it
want=$(jq -r '.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.updatePolicy.description' \
    "$work/default.json" | squash)
if out=$(retry 90 k explain comp.spec.updatePolicy) && grep -qF -- "$want" <<<"$(squash <<<"$out")"; then
    tap_ok "test_crd_versions__default_explain_update_policy"
else
    tap_fail "test_crd_versions__default_explain_update_policy" "want: $want" "$out"
fi

# watch: kubectl lists, then watches; a Component created meanwhile arrives as an event
k -n "$ns" get comp --watch -o name >"$work/watch.out" 2>"$work/watch.err" &
watch_pid=$!
if wait_for 30 grep -q "^component.$GROUP/a\$" "$work/watch.out" &&
    create b v1alpha1 >/dev/null 2>&1 &&
    wait_for 30 grep -q "^component.$GROUP/b\$" "$work/watch.out"; then
    tap_ok "test_crd_versions__default_watch_comp"
else
    tap_fail "test_crd_versions__default_watch_comp" "$(cat "$work/watch.out" "$work/watch.err")"
fi
kill "$watch_pid" 2>/dev/null
wait "$watch_pid" 2>/dev/null
watch_pid=""
tap_check_fails "test_crd_versions__default_v1beta1_not_served" \
    "the server doesn't have a resource type" k -n "$ns" get "$V2"

# component-webhook against this CRD: Ready with nothing to inject, the CRD left as it is
if [ ! -x "$WEBHOOK" ]; then
    tap_fail "test_crd_versions__webhook_built" "missing $WEBHOOK; run make test-build"
fi
port=$(free_port)
probe=$(free_port)
"$WEBHOOK" --kubeconfig "$CO_TEST_KUBECONFIG" --namespace "$ns" --cert-extra-name 127.0.0.1 \
    --validating-webhook-configuration "" --mutating-webhook-configuration "" \
    --conversion-crd "$CRD" --webhook-bind-address "127.0.0.1:$port" \
    --health-probe-bind-address "127.0.0.1:$probe" --metrics-bind-address 0 \
    --cert-check-interval 2s --shutdown-timeout-seconds 5 --log-level debug \
    >"$work/webhook.log" 2>&1 &
pids+=("$!")
tap_check "test_crd_versions__webhook_ready_with_no_conversion_to_inject" \
    wait_for 90 curl -sf "http://127.0.0.1:$probe/readyz"
tap_eq "test_crd_versions__webhook_leaves_the_crd_alone" '{"strategy":"None"}' \
    "$(k get crd "$CRD" -o json | jq -c .spec.conversion)"
if grep -q 'cannot inject' "$work/webhook.log"; then
    tap_fail "test_crd_versions__webhook_injects_without_errors" "$(grep 'cannot inject' "$work/webhook.log" | head -3)"
else
    tap_ok "test_crd_versions__webhook_injects_without_errors"
fi

# --- the opt-in: v1beta1 through the conversion webhook ----------------------------------------

tap_check "test_crd_versions__option_applies_over_the_default" \
    k apply --server-side --force-conflicts --field-manager="$MANAGER" -f "$work/option.json"
tap_eq "test_crd_versions__option_serves_both_versions" "v1alpha1 v1beta1 Webhook" "$(served)"
# outside a cluster the API server reaches the webhook by URL instead of the Service; the
# webhook injects its CA bundle there
tap_check "test_crd_versions__option_conversion_points_at_the_webhook" \
    k patch crd "$CRD" --type=json \
    -p "[{\"op\":\"replace\",\"path\":\"/spec/conversion/webhook/clientConfig\",\"value\":{\"url\":\"https://127.0.0.1:$port/convert\"}}]"
bundle_injected() {
    [ -n "$(k get crd "$CRD" -o jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}')" ]
}
tap_check "test_crd_versions__option_ca_bundle_injected" wait_for 60 bundle_injected
tap_check "test_crd_versions__option_discovery_lists_v1beta1" wait_for 60 discovered "v1alpha1 v1beta1"

component beta v1beta1 >"$work/beta.yaml"
# the first conversions may wait for the API server to take the new CA bundle
tap_check "test_crd_versions__option_v1beta1_created" \
    wait_for 60 k create -f "$work/beta.yaml"
tap_eq "test_crd_versions__option_v1beta1_reads_as_v1alpha1" \
    "$GROUP/v1alpha1 https://example.com/beta.tar.gz deploy Replace 2m $ns 3" \
    "$(k -n "$ns" get "$V1" beta -o jsonpath='{.apiVersion} {.spec.sourceRef.httpRepository.url} {.spec.path} {.spec.updatePolicy} {.spec.requeueInterval} {.spec.namespace} {.spec.values.replicas}' 2>&1)"
# back: the v1alpha1 form written again, then read as v1beta1, equals what was created
k -n "$ns" get "$V1" beta -o json >"$work/beta-v1alpha1.json"
tap_check "test_crd_versions__option_v1alpha1_form_written_back" k replace -f "$work/beta-v1alpha1.json"
want=$(python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))["spec"], sort_keys=True, separators=(",", ":")))' "$work/beta.yaml")
tap_eq "test_crd_versions__option_round_trip_equal" "$want" \
    "$(k -n "$ns" get "$V2" beta -o json | jq -cS .spec)"
tap_eq "test_crd_versions__option_get_comp_is_v1beta1" "$GROUP/v1beta1 Replace" \
    "$(k -n "$ns" get comp a -o jsonpath='{.apiVersion} {.spec.policies.update}' 2>&1)"

# the webhook down: the preferred version is unreadable, the stored one is not
stop_webhook
tap_check_fails "test_crd_versions__option_get_comp_fails_while_the_webhook_is_down" \
    "conversion webhook for $GROUP/v1(alpha|beta)1, Kind=Component failed" k -n "$ns" get comp
out=$(k -n "$ns" get "$V1" -o name 2>&1)
tap_eq "test_crd_versions__option_stored_version_readable_while_the_webhook_is_down" \
    "component.$GROUP/a component.$GROUP/b component.$GROUP/beta" "$(tr '\n' ' ' <<<"$out" | sed 's/ $//')"
tap_check "test_crd_versions__option_stored_version_writable_while_the_webhook_is_down" \
    k -n "$ns" patch "$V1" a --type=merge -p '{"spec":{"path":"elsewhere"}}'
tap_check_fails "test_crd_versions__option_explain_reads_v1beta1" \
    'field "updatePolicy" does not exist|couldn.t find' k explain comp.spec.updatePolicy
tap_check "test_crd_versions__option_explain_v1alpha1_by_api_version" \
    k explain comp.spec.updatePolicy --api-version="$GROUP/v1alpha1"

# turned off again: conversion to None first (a server-side apply alone keeps the CA bundle
# the webhook injected under another field manager, and a CRD without a conversion webhook
# must not have one, even though the default names the webhook null), then the default applied
tap_check "test_crd_versions__option_off_ca_bundle_still_injected" bundle_injected
tap_eq "test_crd_versions__default_names_the_webhook_null" '{"strategy":"None","webhook":null}' \
    "$(jq -c .spec.conversion "$work/default.json")"
tap_check_fails "test_crd_versions__option_off_by_server_side_apply_alone_is_refused" \
    "should not be set when strategy is not set to Webhook" \
    k apply --server-side --force-conflicts --field-manager="$MANAGER" -f "$work/default.json"
tap_check "test_crd_versions__option_off_conversion_none" \
    k patch crd "$CRD" --type=json -p '[{"op":"replace","path":"/spec/conversion","value":{"strategy":"None"}}]'
tap_check "test_crd_versions__option_off_default_applied" \
    k apply --server-side --force-conflicts --field-manager="$MANAGER" -f "$work/default.json"
tap_eq "test_crd_versions__option_off_serves_v1alpha1_only" "v1alpha1 None" "$(served)"
tap_check "test_crd_versions__option_off_discovery" wait_for 60 discovered v1alpha1
tap_eq "test_crd_versions__option_off_components_kept" \
    "a b beta https://example.com/beta.tar.gz" \
    "$(k -n "$ns" get comp -o jsonpath='{.items[*].metadata.name} {.items[2].spec.sourceRef.httpRepository.url}' 2>&1)"

# --- Helm: the chart's template of the CRD ------------------------------------------------------

if [ ! -x "$HELM" ]; then
    tap_fail "test_crd_versions__helm_installed" "no helm at $HELM (run tests/env/deps.sh)"
    tap_done
    exit
fi
mkdir -p "$work/chart/templates"
cp "$ROOT/deploy/chart/Chart.yaml" "$ROOT/deploy/chart/values.yaml" "$work/chart/"
cp "$ROOT/deploy/chart/templates/crd-components.yaml" "$work/chart/templates/"
# the CRD exists (as after installing with kubectl, or the Go operator's chart)
tap_check_fails "test_crd_versions__helm_install_refuses_a_crd_it_does_not_own" \
    "invalid ownership metadata" helm install "$release" "$work/chart" -n "$ns"
tap_check "test_crd_versions__helm_install_takes_the_crd_over" \
    helm install "$release" "$work/chart" -n "$ns" --take-ownership
tap_eq "test_crd_versions__helm_default_serves_v1alpha1_only" "v1alpha1 None" "$(served)"
tap_eq "test_crd_versions__helm_crd_kept_on_uninstall" "keep $release" \
    "$(k get crd "$CRD" -o jsonpath='{.metadata.annotations.helm\.sh/resource-policy} {.metadata.annotations.meta\.helm\.sh/release-name}')"
tap_check "test_crd_versions__helm_upgrade_turns_v1beta1_on" \
    helm upgrade "$release" "$work/chart" -n "$ns" --set crds.v1beta1=true
tap_eq "test_crd_versions__helm_v1beta1_serves_both_versions" "v1alpha1 v1beta1 Webhook $ns" \
    "$(served) $(k get crd "$CRD" -o jsonpath='{.spec.conversion.webhook.clientConfig.service.namespace}')"
# as component-webhook injects it
tap_check "test_crd_versions__helm_ca_bundle_injected" \
    k patch crd "$CRD" --type=json \
    -p '[{"op":"add","path":"/spec/conversion/webhook/clientConfig/caBundle","value":"Zm9v"}]'
tap_check "test_crd_versions__helm_upgrade_turns_v1beta1_off" \
    helm upgrade "$release" "$work/chart" -n "$ns" --set crds.v1beta1=false
tap_eq "test_crd_versions__helm_v1beta1_off_serves_v1alpha1_only" "v1alpha1 None" "$(served)"
tap_check "test_crd_versions__helm_v1beta1_off_discovery" wait_for 60 discovered v1alpha1
tap_check "test_crd_versions__helm_uninstall" helm uninstall "$release" -n "$ns"
tap_eq "test_crd_versions__helm_uninstall_keeps_the_crd_and_the_components" "a b beta" \
    "$(k -n "$ns" get comp -o jsonpath='{.items[*].metadata.name}' 2>&1)"

# an install of an earlier version: v1beta1 served, a CA bundle injected, no Helm release
tap_check "test_crd_versions__helm_earlier_install_with_v1beta1" \
    k apply --server-side --force-conflicts --field-manager="$MANAGER" -f "$work/option.json"
k patch crd "$CRD" --type=json \
    -p '[{"op":"add","path":"/spec/conversion/webhook/clientConfig/caBundle","value":"Zm9v"}]' >/dev/null
tap_check "test_crd_versions__helm_install_takes_over_a_crd_serving_v1beta1" \
    helm install "$release2" "$work/chart" -n "$ns" --take-ownership
tap_eq "test_crd_versions__helm_take_over_turns_v1beta1_off" "v1alpha1 None" "$(served)"
tap_check "test_crd_versions__helm_take_over_discovery" wait_for 60 discovered v1alpha1
tap_eq "test_crd_versions__helm_take_over_keeps_the_components" "a b beta" \
    "$(k -n "$ns" get comp -o jsonpath='{.items[*].metadata.name}' 2>&1)"

tap_done
