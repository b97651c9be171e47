#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `component-controller graph --kubeconfig`: Components read from a real kube-apiserver, their
# status.state drawn as fill colours, a cycle among them drawn red, --namespace limiting the
# list, the Blueprints named in their specs drawn as shared notes, and an unreachable cluster
# reported. Everything lives in namespaces of its own; the
# Component CRD is created when missing and left in place (as the other suites do).
set -uo pipefail
ROOT=${CO_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/support/tap.sh"
BIN=${CO_CONTROLLER_BIN:-$ROOT/build/test/component-controller}
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/component-operator"
KUBECTL=${KUBECTL:-$(command -v kubectl || echo "$CACHE/bin/kubectl")}
COMP=components.v1alpha1.core.cs.sap.com

if [ -z "${CO_TEST_KUBECONFIG:-}" ]; then
    echo "CO_TEST_KUBECONFIG is not set (run through tests/run.sh)" >&2
    exit 1
fi
k() { "$KUBECTL" --kubeconfig "$CO_TEST_KUBECONFIG" --request-timeout=60s "$@"; }

ns=co-cli-graph-$$-$RANDOM
other=$ns-other
bpns=$ns-bp
TMP=$(mktemp -d)
cleanup() {
    k delete namespace "$ns" "$other" "$bpns" --wait=false >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT

k get crd components.core.cs.sap.com >/dev/null 2>&1 ||
    k create -f "$ROOT/crds/core.cs.sap.com_components.yaml" >/dev/null
k wait --for condition=established --timeout=120s crd/components.core.cs.sap.com >/dev/null
k create namespace "$ns" >/dev/null && k create namespace "$other" >/dev/null

component() { # namespace name deps...
    local cns=$1 name=$2
    shift 2
    local deps=""
    for d in "$@"; do deps="$deps{\"name\":\"$d\"},"; done
    printf '{"apiVersion":"core.cs.sap.com/v1alpha1","kind":"Component","metadata":{"name":"%s","namespace":"%s"},"spec":{"sourceRef":{"fluxGitRepository":{"name":"repo"}},"dependencies":[%s]}}' \
        "$name" "$cns" "${deps%,}"
}
set_state() { # namespace name state
    k -n "$1" patch "$COMP" "$2" --subresource=status --type=merge \
        -p "{\"status\":{\"state\":\"$3\"}}" >/dev/null
}
ok=1
{
    component "$ns" a b | k create -f - >/dev/null &&
        component "$ns" b a | k create -f - >/dev/null &&
        component "$ns" c a | k create -f - >/dev/null &&
        component "$other" z | k create -f - >/dev/null &&
        set_state "$ns" a Ready && set_state "$ns" b Error && set_state "$ns" c Processing
} || ok=0
tap_eq "Components with states are created" 1 "$ok"

if "$BIN" graph --kubeconfig "$CO_TEST_KUBECONFIG" --namespace "$ns" >"$TMP/g.dot" 2>"$TMP/err"; then
    tap_ok "graph --kubeconfig exits 0"
else
    tap_fail "graph --kubeconfig exits 0" "$(cat "$TMP/err")"
fi
report=$(python3 - "$TMP/g.dot" "$ns" <<'PY'
import re, sys
text, ns = open(sys.argv[1]).read(), sys.argv[2]
nodes = dict(re.findall(r'^  "([^"]+)" \[(.*)\];$', text, re.M))
edges = {(a, b): attrs for a, b, attrs in
         re.findall(r'^  "([^"]+)" -> "([^"]+)"( \[.*\])?;$', text, re.M)}
p = []
if set(nodes) != {ns + "/a", ns + "/b", ns + "/c"}:
    p.append("nodes %s" % sorted(nodes))
for n, colour in (("a", "palegreen"), ("b", "salmon"), ("c", "lightblue")):
    if "fillcolor=" + colour not in nodes.get(ns + "/" + n, ""):
        p.append("%s not %s: %s" % (n, colour, nodes.get(ns + "/" + n)))
for e in ((ns + "/a", ns + "/b"), (ns + "/b", ns + "/a")):
    if "color=red" not in edges.get(e, ""):
        p.append("cycle edge %s not red" % (e,))
if "color=red" in edges.get((ns + "/c", ns + "/a"), "missing"):
    p.append("edge c -> a marked as a cycle or missing")
print("\n".join(p))
PY
)
if [ -z "$report" ]; then
    tap_ok "states are colours and the cycle is red, one namespace only"
else
    tap_fail "states are colours and the cycle is red, one namespace only" "$report"
fi
if dot -Tpng "$TMP/g.dot" -o "$TMP/g.png" 2>"$TMP/doterr" && [ -s "$TMP/g.png" ]; then
    tap_ok "the cluster's graph renders to PNG with dot"
else
    tap_fail "the cluster's graph renders to PNG with dot" "$(cat "$TMP/doterr")"
fi
out=$("$BIN" graph --kubeconfig "$CO_TEST_KUBECONFIG" 2>&1)
if grep -q "\"$other/z\"" <<<"$out" && grep -q "\"$ns/a\"" <<<"$out"; then
    tap_ok "without --namespace every namespace is read"
else
    tap_fail "without --namespace every namespace is read" "$out"
fi

# Blueprints from the Components' spec alone (no Blueprint exists): bpns/x and bpns/y share
# bpns/web (y names the namespace, x takes its own), bpns/w uses other/web.
bp_component() { # name blueprint-ref-json
    printf '{"apiVersion":"core.cs.sap.com/v1alpha1","kind":"Component","metadata":{"name":"%s","namespace":"%s"},"spec":{"sourceRef":{"blueprint":%s}}}' \
        "$1" "$bpns" "$2"
}
ok=1
{
    k create namespace "$bpns" >/dev/null &&
        bp_component x '{"name":"web"}' | k create -f - >/dev/null &&
        bp_component y "{\"name\":\"web\",\"namespace\":\"$bpns\"}" | k create -f - >/dev/null &&
        bp_component w "{\"name\":\"web\",\"namespace\":\"$other\"}" | k create -f - >/dev/null
} || ok=0
tap_eq "Components with Blueprint sources are created" 1 "$ok"
if "$BIN" graph --kubeconfig "$CO_TEST_KUBECONFIG" --namespace "$bpns" >"$TMP/bp.dot" 2>"$TMP/err"; then
    report=$(python3 - "$TMP/bp.dot" "$bpns" "$other" <<'PY'
import re, sys
text, ns, other = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
nodes = dict(re.findall(r'^  "([^"]+)" \[(.*)\];$', text, re.M))
edges = {(a, b): attrs for a, b, attrs in
         re.findall(r'^  "([^"]+)" -> "([^"]+)"( \[.*\])?;$', text, re.M)}
p = []
mine, theirs = "blueprint %s/web" % ns, "blueprint %s/web" % other
if set(nodes) != {ns + "/x", ns + "/y", ns + "/w", mine, theirs}:
    p.append("nodes %s" % sorted(nodes))
for n in (mine, theirs):
    if "shape=note" not in nodes.get(n, ""):
        p.append("%s not a note: %s" % (n, nodes.get(n)))
want = {(ns + "/x", mine), (ns + "/y", mine), (ns + "/w", theirs)}
if set(edges) != want or any("style=dotted" not in a for a in edges.values()):
    p.append("edges %s" % sorted(edges.items()))
print("\n".join(p))
PY
    )
    if [ -z "$report" ]; then
        tap_ok "Components sharing a Blueprint point to one note, from their spec alone"
    else
        tap_fail "Components sharing a Blueprint point to one note, from their spec alone" "$report" "$(cat "$TMP/bp.dot")"
    fi
else
    tap_fail "Components sharing a Blueprint point to one note, from their spec alone" "$(cat "$TMP/err")"
fi

ctx=$(k config current-context 2>/dev/null)
if [ -n "$ctx" ] && "$BIN" graph --kubeconfig "$CO_TEST_KUBECONFIG" --context "$ctx" \
    --namespace "$ns" 2>&1 | cmp -s - "$TMP/g.dot"; then
    tap_ok "--context names the kubeconfig's context"
else
    tap_fail "--context names the kubeconfig's context" "context '$ctx'"
fi
tap_check_fails "an unknown --context is refused" "no-such-context" \
    "$BIN" graph --kubeconfig "$CO_TEST_KUBECONFIG" --context no-such-context

# A cluster nobody listens on: reported with the kubeconfig's name, exit 1.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:%s\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user: {}\ncurrent-context: c\n' "$port" >"$TMP/dead.kubeconfig"
timeout 300 "$BIN" graph --kubeconfig "$TMP/dead.kubeconfig" >/dev/null 2>"$TMP/err"
rc=$?
if [ "$rc" = 1 ] && grep -q "dead.kubeconfig" "$TMP/err"; then
    tap_ok "an unreachable cluster is reported and exits 1"
else
    tap_fail "an unreachable cluster is reported and exits 1" "exit $rc: $(cat "$TMP/err")"
fi

tap_done
