#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `component-controller validate --expect RESULTS`: policy tests offline (docs/policy-audit.md,
# "Testing policies"). Cases that all hold exit 0 with a table of them; a case that does not
# exits 1 and is named as FAIL with what was expected and what admission answered; an
# expectation file that cannot be read, a field that is unknown or malformed, or a Component
# none of the files holds exits 2 with the file and the field named.
set -uo pipefail
ROOT=${CO_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/support/tap.sh"
BIN=${CO_CONTROLLER_BIN:-$ROOT/build/test/component-controller}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

cat >"$TMP/policy.yaml" <<'EOF'
apiVersion: core.cs.sap.com/v1alpha1
kind: ComponentPolicy
metadata:
  name: restrict-sources
spec:
  rules:
    sourceKinds:
      allowed: [git]
    intervals:
      action: Warn
      minRequeueInterval: 5m
EOF
cat >"$TMP/components.yaml" <<'EOF'
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata: {namespace: team-a, name: web}
spec:
  sourceRef:
    httpRepository: {url: "https://example.com/web.tar.gz"}
---
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata: {namespace: team-a, name: api}
spec:
  requeueInterval: 1m
  sourceRef:
    git: {url: "https://git.example.com/api.git", ref: {branch: main}}
---
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata: {name: worker}
spec:
  sourceRef:
    git: {url: "https://git.example.com/worker.git", ref: {branch: main}}
EOF
cat >"$TMP/results.yaml" <<'EOF'
results:
- component: team-a/web
  result: deny
  rule: sourceKinds
  policy: restrict-sources
- component: team-a/api
  result: warn
  rule: intervals
- component: worker
  result: allow
EOF

run() { # expect-file: sets out and rc
    out=$("$BIN" validate --policy "$TMP/policy.yaml" --namespace team-a --expect "$1" \
        "$TMP/components.yaml" 2>&1)
    rc=$?
}

run "$TMP/results.yaml"
tap_eq "every case holding exits 0" 0 "$rc"
if grep -qE '^ok +team-a/web +deny sourceKinds \(restrict-sources\) +deny sourceKinds$' <<<"$out" &&
    grep -qE '^ok +team-a/api +warn intervals +warn intervals$' <<<"$out" &&
    grep -qE '^ok +team-a/worker +allow +allow$' <<<"$out" &&
    grep -q '^3 cases: 3 passed, 0 failed$' <<<"$out"; then
    tap_ok "the table lists each case with what was expected and what admission answered"
else
    tap_fail "the table lists each case with what was expected and what admission answered" "$out"
fi

sed 's/result: allow/result: deny/' "$TMP/results.yaml" >"$TMP/mismatch.yaml"
run "$TMP/mismatch.yaml"
tap_eq "a case that does not hold exits 1" 1 "$rc"
if grep -qE '^FAIL +team-a/worker +deny +allow$' <<<"$out" &&
    grep -q '^3 cases: 2 passed, 1 failed$' <<<"$out"; then
    tap_ok "the failed case is named"
else
    tap_fail "the failed case is named" "$out"
fi

sed 's/rule: intervals/rule: sourceKinds/' "$TMP/results.yaml" >"$TMP/wrong-rule.yaml"
run "$TMP/wrong-rule.yaml"
tap_eq "the right result for another rule does not hold" 1 "$rc"
sed 's/policy: restrict-sources/policy: other/' "$TMP/results.yaml" >"$TMP/wrong-policy.yaml"
run "$TMP/wrong-policy.yaml"
tap_eq "the right result from another policy does not hold" 1 "$rc"

printf 'results:\n- component: team-a/web\n  result: block\n  rul: x\n- {result: deny}\n' \
    >"$TMP/malformed.yaml"
run "$TMP/malformed.yaml"
tap_eq "a malformed expectation file exits 2" 2 "$rc"
if grep -qF 'malformed.yaml: results[0].result: unsupported value "block"' <<<"$out" &&
    grep -qF 'malformed.yaml: results[0].rul: unknown field' <<<"$out" &&
    grep -qF 'malformed.yaml: results[1].component: required' <<<"$out" &&
    ! grep -q 'cases:' <<<"$out"; then
    tap_ok "each problem names the file and the field, and no case is run"
else
    tap_fail "each problem names the file and the field, and no case is run" "$out"
fi

printf 'results:\n- component: team-a/web\n  result: deny\n  rule: nosuchrule\n' >"$TMP/rule.yaml"
run "$TMP/rule.yaml"
tap_eq "an unknown rule exits 2" 2 "$rc"
tap_check_fails "an unknown rule is named" 'rule.yaml: results\[0\].rule: unknown rule "nosuchrule"' \
    "$BIN" validate --policy "$TMP/policy.yaml" --expect "$TMP/rule.yaml" "$TMP/components.yaml"

printf 'results:\n- component: team-a/ghost\n  result: allow\n' >"$TMP/ghost.yaml"
run "$TMP/ghost.yaml"
tap_eq "a Component in none of the files exits 2" 2 "$rc"
tap_eq "and is named" \
    "component-controller validate: $TMP/ghost.yaml: results[0].component: Component \"team-a/ghost\" is in none of the files" \
    "$out"

printf 'results: [\n' >"$TMP/broken.yaml"
run "$TMP/broken.yaml"
tap_eq "an unparsable expectation file exits 2" 2 "$rc"
tap_check_fails "and is named with its line" "broken.yaml: line [0-9]+" \
    "$BIN" validate --expect "$TMP/broken.yaml" "$TMP/components.yaml"
run "$TMP/absent.yaml"
tap_eq "a missing expectation file exits 2" 2 "$rc"
printf 'cases: []\n' >"$TMP/empty.yaml"
tap_check_fails "a file without results is named" 'empty.yaml: cases: unknown field' \
    "$BIN" validate --expect "$TMP/empty.yaml" "$TMP/components.yaml"

tap_done
