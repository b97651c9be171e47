#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `component-controller validate`: Component, ComponentPolicy, Blueprint and BlueprintVersion
# manifests checked offline with the admission webhooks' rules. Every invalid fixture of the API model
# (tests/fixtures/component/invalid*, tests/fixtures/policy/invalid) must fail with each of its
# expected field errors and the file named; every valid fixture must pass; dependency cycles
# over the given set, --policy and bad input are covered too.
set -uo pipefail
ROOT=${CO_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/support/tap.sh"
BIN=${CO_CONTROLLER_BIN:-$ROOT/build/test/component-controller}
FIX=$ROOT/tests/fixtures
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

tap_check "validate --help exits 0 and names the subcommand" \
    bash -c "'$BIN' validate --help | grep -q 'component-controller validate'"

# --- the API model's fixtures -----------------------------------------------------------------
report=$(python3 - "$BIN" "$FIX" "$TMP" <<'PY'
import json, os, subprocess, sys
binary, fix, tmp = sys.argv[1:4]
agree, problems = 0, []
for d in ("component/invalid", "component/invalid-v1beta1", "policy/invalid"):
    for name in sorted(os.listdir(os.path.join(fix, d))):
        case = json.load(open(os.path.join(fix, d, name)))
        if "object" not in case or not case.get("errors"):
            continue
        path = os.path.join(tmp, "%s-%s" % (d.replace("/", "-"), name))
        json.dump(case["object"], open(path, "w"))
        got = subprocess.run([binary, "validate", path], capture_output=True, text=True)
        missing = [e for e in case["errors"] if e not in got.stderr]
        if got.returncode != 1 or missing or path + ":" not in got.stderr:
            problems.append("%s/%s: exit %d, missing %r in %r" % (d, name, got.returncode,
                                                                  missing, got.stderr[:400]))
        else:
            agree += 1
for d in ("component/valid", "policy/valid", "blueprint/valid"):
    for name in sorted(os.listdir(os.path.join(fix, d))):
        path = os.path.join(fix, d, name)
        got = subprocess.run([binary, "validate", path], capture_output=True, text=True)
        if got.returncode != 0 or "error:" in got.stderr:
            problems.append("%s/%s: exit %d: %s" % (d, name, got.returncode, got.stderr[:400]))
        else:
            agree += 1
print("AGREE %d" % agree)
for p in problems:
    print(p)
PY
)
agree=$(printf '%s\n' "$report" | sed -n 's/^AGREE //p')
if [ "$(printf '%s\n' "$report" | wc -l)" = 1 ] && [ "${agree:-0}" -gt 40 ]; then
    tap_ok "validate agrees with the API model's fixtures ($agree valid and invalid objects)"
else
    tap_fail "validate agrees with the API model's fixtures" "$report"
fi

# --- multi-document YAML, cycles over the set, missing targets ------------------------------
component() { # name namespace deps...
    local name=$1 ns=$2
    shift 2
    printf -- '---\napiVersion: core.cs.sap.com/v1alpha1\nkind: Component\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  sourceRef:\n    fluxGitRepository:\n      name: repo\n' "$name" "$ns"
    if [ $# -gt 0 ]; then
        printf '  dependencies:\n'
        for d in "$@"; do printf '  - name: %s\n' "$d"; done
    fi
}
{ component a apps b; component b apps c; } >"$TMP/ab.yaml"
component c apps a >"$TMP/c.yaml"
component d apps >>"$TMP/c.yaml"

out=$("$BIN" validate "$TMP/ab.yaml" "$TMP/c.yaml" 2>&1)
rc=$?
tap_eq "a cycle over several files exits 1" 1 "$rc"
if grep -q "$TMP/ab.yaml:1: error: Component \"apps/a\": dependencies.cycles: dependency cycle: apps/a -> apps/b -> apps/c -> apps/a" <<<"$out" &&
    grep -q "$TMP/c.yaml:1: error: Component \"apps/c\": dependencies.cycles" <<<"$out"; then
    tap_ok "each Component of the cycle is named with file, line and the cycle path"
else
    tap_fail "each Component of the cycle is named with file, line and the cycle path" "$out"
fi
if grep -q "$TMP/ab.yaml:13: error: Component \"apps/b\"" <<<"$out"; then
    tap_ok "the second document of a stream is reported with its line"
else
    tap_fail "the second document of a stream is reported with its line" "$out"
fi
tap_check "without the cycle's last edge the set is valid" \
    "$BIN" validate "$TMP/ab.yaml"
out=$("$BIN" validate "$TMP/ab.yaml" 2>&1)
if grep -q 'warning: Component "apps/b": dependencies.missingTargets: dependency "apps/c" does not exist' <<<"$out"; then
    tap_ok "a dependency outside the set is a warning"
else
    tap_fail "a dependency outside the set is a warning" "$out"
fi
valid=("$FIX"/component/valid/*.json)
{ printf '{"apiVersion":"v1","kind":"List","items":['; cat "${valid[0]}"; printf ','; cat "${valid[1]}"; printf ']}'; } >"$TMP/list.json"
tap_check "a v1 List of Components is validated item by item" "$BIN" validate "$TMP/list.json"

# --- policies ---------------------------------------------------------------------------------
cat >"$TMP/policy.yaml" <<'Y'
apiVersion: core.cs.sap.com/v1alpha1
kind: ComponentPolicy
metadata:
  name: only-git
spec:
  rules:
    sourceKinds:
      action: Deny
      allowed: [git]
Y
tap_check_fails "--policy applies a ComponentPolicy" \
    "c.yaml:13: error: Component \"apps/d\": ComponentPolicy \"only-git\": sourceKinds" \
    "$BIN" validate --policy "$TMP/policy.yaml" "$TMP/c.yaml"
tap_check "a ComponentPolicy among the files is only validated" \
    "$BIN" validate "$TMP/policy.yaml" "$TMP/ab.yaml"
sed 's/^  name: only-git/  name: only-git\n  namespace: x/; s/action: Deny/action: Sometimes/' "$TMP/policy.yaml" >"$TMP/badpolicy.yaml"
tap_check_fails "an invalid --policy is reported by file and field" \
    "badpolicy.yaml:1: error: ComponentPolicy \"only-git\": spec.rules.sourceKinds.action: Unsupported value" \
    "$BIN" validate --policy "$TMP/badpolicy.yaml" "$TMP/ab.yaml"
tap_check "an exempt namespace escapes the policy" \
    bash -c "sed 's/^spec:/spec:\n  exemptNamespaces: [apps]/' '$TMP/policy.yaml' >'$TMP/exempt.yaml' && '$BIN' validate --policy '$TMP/exempt.yaml' '$TMP/c.yaml' 2>&1 | grep -v -q only-git"

# Requester and namespace: --user/--group for exemptions, --namespace-label for selectors,
# --namespace for Components without one.
cat >"$TMP/scoped.yaml" <<'Y'
apiVersion: core.cs.sap.com/v1alpha1
kind: ComponentPolicy
metadata:
  name: scoped
spec:
  namespaceSelector:
    matchLabels:
      tenant: "true"
  exemptUsers: [ops-*]
  exemptGroups: [admins]
  rules:
    sourceKinds:
      action: Deny
      allowed: [git]
Y
component lone "" >"$TMP/lone.yaml"
sed -i '/^  namespace: $/d' "$TMP/lone.yaml"
tap_check "a namespaceSelector that does not match leaves the Component alone" \
    "$BIN" validate --policy "$TMP/scoped.yaml" "$TMP/lone.yaml"
tap_check_fails "--namespace-label makes the namespaceSelector match" 'ComponentPolicy "scoped"' \
    "$BIN" validate --policy "$TMP/scoped.yaml" --namespace-label tenant=true "$TMP/lone.yaml"
tap_check "--user matching exemptUsers exempts" \
    "$BIN" validate --policy "$TMP/scoped.yaml" --namespace-label tenant=true --user ops-ci \
    "$TMP/lone.yaml"
tap_check "--group matching exemptGroups exempts" \
    "$BIN" validate --policy "$TMP/scoped.yaml" --namespace-label tenant=true --user dev \
    --group devs --group admins "$TMP/lone.yaml"
tap_check_fails "a Component without a namespace is placed in default" 'Component "default/lone"' \
    "$BIN" validate --policy "$TMP/policy.yaml" "$TMP/lone.yaml"
tap_check_fails "--namespace places a Component without a namespace" 'Component "team/lone"' \
    "$BIN" validate --namespace team --policy "$TMP/policy.yaml" "$TMP/lone.yaml"

# --- lifecycle controls (docs/lifecycle.md, "Validation and policies") -------------------------
cat >"$TMP/lifecycle.yaml" <<'Y'
apiVersion: core.cs.sap.com/v1beta1
kind: Component
metadata:
  name: shop
  namespace: apps
spec:
  source:
    fluxGitRepository: {name: repo}
  intervals: {grace: 5m}
  enabled: false
  managed: false
  suspendMode: ScaleDown
  prerequisites:
  - {apiVersion: apps/v1, kind: Deployment, namespace: db, name: postgres}
  - {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: certificates.cert-manager.io, conditionType: Established}
Y
tap_check "a v1beta1 Component using every lifecycle field is valid" \
    "$BIN" validate "$TMP/lifecycle.yaml"
sed 's/grace: 5m/grace: 0s/; s/kind: Deployment,/kind: deploy\/ment,/; s/ScaleDown/Scaledown/' \
    "$TMP/lifecycle.yaml" >"$TMP/lifecycle-bad.yaml"
out=$("$BIN" validate "$TMP/lifecycle-bad.yaml" 2>&1)
rc=$?
if [ "$rc" = 1 ] &&
    grep -q 'lifecycle-bad.yaml:1: error: Component "apps/shop": spec.intervals.grace: Invalid value: "0s": must be a positive duration' <<<"$out" &&
    grep -q 'spec.suspendMode: Unsupported value: "Scaledown": supported values: "Pause", "ScaleDown"' <<<"$out" &&
    grep -q 'spec.prerequisites\[0\].kind: Invalid value: "deploy/ment": must be a kind' <<<"$out"; then
    tap_ok "bad lifecycle values are reported at their v1beta1 paths"
else
    tap_fail "bad lifecycle values are reported at their v1beta1 paths" "exit $rc: $out"
fi
cat >"$TMP/lifecycle-policy.yaml" <<'Y'
apiVersion: core.cs.sap.com/v1alpha1
kind: ComponentPolicy
metadata:
  name: tenants
spec:
  rules:
    lifecycle:
      action: Warn
      allowUnmanaged: false
      maxGracePeriod: 1m
  defaults:
    suspendMode: Pause
Y
out=$("$BIN" validate --policy "$TMP/lifecycle-policy.yaml" "$TMP/lifecycle.yaml" 2>&1)
rc=$?
if [ "$rc" = 0 ] &&
    grep -q 'warning: Component "apps/shop": ComponentPolicy "tenants": lifecycle: spec.managed: false (Unmanaged) is not allowed; spec.intervals.grace 5m0s is above the maximum of 1m0s' <<<"$out"; then
    tap_ok "a lifecycle rule with action Warn names each refused field and admits"
else
    tap_fail "a lifecycle rule with action Warn names each refused field and admits" "exit $rc: $out"
fi
sed 's/action: Warn/action: Deny/' "$TMP/lifecycle-policy.yaml" >"$TMP/lifecycle-deny.yaml"
tap_check_fails "a lifecycle rule with action Deny fails" \
    'error: Component "apps/shop": ComponentPolicy "tenants": lifecycle: spec.managed' \
    "$BIN" validate --policy "$TMP/lifecycle-deny.yaml" "$TMP/lifecycle.yaml"

# --- Blueprints and BlueprintVersions (docs/blueprints.md) ------------------------------------
jq '.spec.files["../x.yaml"] = ""' "$FIX/blueprint/valid/blueprint.json" >"$TMP/bp-bad.json"
tap_check_fails "a Blueprint path leaving the tree is refused" \
    'bp-bad.json:1: error: Blueprint "apps/web": spec.files\[\.\./x\.yaml\]: Invalid value: "\.\./x\.yaml": must not contain \. or \.\. segments' \
    "$BIN" validate "$TMP/bp-bad.json"
jq '.spec.revision = "generation:2" | .spec.files["a.yaml"] = ""' \
    "$FIX/blueprint/valid/blueprintversion.json" >"$TMP/bpv-bad.json"
tap_check_fails "a BlueprintVersion whose digest is not its files' is refused" \
    'error: BlueprintVersion "apps/web--[0-9a-f]{64}": spec.digest: Invalid value: "[0-9a-f]{64}": must be the digest of spec.files' \
    "$BIN" validate "$TMP/bpv-bad.json"
tap_check "a Component on a Blueprint and the Blueprint validate together" \
    "$BIN" validate "$FIX/component/valid/blueprint.json" "$FIX/blueprint/valid/blueprint.json"
tap_check "the Blueprint laid out as the Go operator's reference describes one, and its Component" \
    "$BIN" validate "$FIX/blueprint/docs-layout/blueprint.yaml" "$FIX/blueprint/docs-layout/component.yaml"

# --- bad input --------------------------------------------------------------------------------
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n' >"$TMP/cm.yaml"
tap_check_fails "another kind is refused with file and line" \
    "cm.yaml:1: error: not a Component, ComponentPolicy, Blueprint or BlueprintVersion \(apiVersion v1, kind ConfigMap\)" \
    "$BIN" validate "$TMP/cm.yaml"
printf 'a: [\n' >"$TMP/broken.yaml"
tap_check_fails "malformed YAML names the file and line" "broken.yaml: line [0-9]+" \
    "$BIN" validate "$TMP/broken.yaml"
"$BIN" validate "$TMP/broken.yaml" >/dev/null 2>&1
tap_eq "bad input exits 1" 1 "$?"
tap_check_fails "a missing file is named" "$TMP/absent.yaml" "$BIN" validate "$TMP/absent.yaml"
tap_check_fails "an unknown flag is a usage error" "unknown flag: --bogus" \
    "$BIN" validate --bogus "$TMP/ab.yaml"
"$BIN" validate --bogus "$TMP/ab.yaml" >/dev/null 2>&1
tap_eq "a usage error exits 2" 2 "$?"
tap_check_fails "no file is a usage error" "expected at least one manifest file" "$BIN" validate
tap_check_fails "a malformed --namespace-label is a usage error" "expected KEY=VALUE" \
    "$BIN" validate --namespace-label novalue "$TMP/ab.yaml"

tap_done
