#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `component-controller graph` from manifest files: the DOT output names every Component and
# missing target, colours states (the lifecycle states Warning and Unmanaged too), marks every
# edge and node of a cycle (and only those), is deterministic, and renders to a PNG with Graphviz `dot`; Components sharing a Blueprint point
# to one note, and a graph without Blueprints is drawn as before; bad input and usage errors.
set -uo pipefail
ROOT=${CO_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/support/tap.sh"
BIN=${CO_CONTROLLER_BIN:-$ROOT/build/test/component-controller}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

component() { # name namespace state deps...
    local name=$1 ns=$2 state=$3
    shift 3
    printf -- '---\napiVersion: core.cs.sap.com/v1alpha1\nkind: Component\nmetadata:\n  name: %s\n' "$name"
    [ -n "$ns" ] && printf '  namespace: %s\n' "$ns"
    printf 'spec:\n  sourceRef:\n    fluxGitRepository:\n      name: repo\n'
    if [ $# -gt 0 ]; then
        printf '  dependencies:\n'
        for d in "$@"; do printf '  - name: %s\n' "$d"; done
    fi
    [ -n "$state" ] && printf 'status:\n  state: %s\n' "$state"
}
# a -> b -> c -> a is a cycle; d -> a hangs off it; e -> x has a missing target; f has no
# namespace; a ConfigMap in the stream is ignored.
{
    component a apps Ready b
    component b apps Error c
    component c apps Processing a
    component d apps "" a
    component e apps Pending x
    component f "" ""
    printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n'
} >"$TMP/set.yaml"

tap_check "graph --help exits 0 and names the subcommand" \
    bash -c "'$BIN' graph --help | grep -q 'component-controller graph'"

if "$BIN" graph "$TMP/set.yaml" >"$TMP/g.dot" 2>"$TMP/err"; then
    tap_ok "graph of a multi-document file exits 0"
else
    tap_fail "graph of a multi-document file exits 0" "$(cat "$TMP/err")"
fi
report=$(python3 - "$TMP/g.dot" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
nodes = dict(re.findall(r'^  "([^"]+)" \[(.*)\];$', text, re.M))
edges = {(a, b): attrs for a, b, attrs in
         re.findall(r'^  "([^"]+)" -> "([^"]+)"( \[.*\])?;$', text, re.M)}
problems = []
want_nodes = {"apps/a", "apps/b", "apps/c", "apps/d", "apps/e", "apps/x", "default/f"}
if set(nodes) != want_nodes:
    problems.append("nodes %s" % sorted(nodes))
want_edges = {("apps/a", "apps/b"), ("apps/b", "apps/c"), ("apps/c", "apps/a"),
              ("apps/d", "apps/a"), ("apps/e", "apps/x")}
if set(edges) != want_edges:
    problems.append("edges %s" % sorted(edges))
for e, attrs in edges.items():
    cyc = e in {("apps/a", "apps/b"), ("apps/b", "apps/c"), ("apps/c", "apps/a")}
    if cyc != ("color=red" in attrs):
        problems.append("edge %s highlighted=%s" % (e, not cyc))
for n, attrs in nodes.items():
    if (n in {"apps/a", "apps/b", "apps/c"}) != ("color=red" in attrs):
        problems.append("node %s cycle marking" % n)
colours = {"apps/a": "palegreen", "apps/b": "salmon", "apps/c": "lightblue",
           "apps/e": "lightyellow", "apps/d": "white"}
for n, c in colours.items():
    if "fillcolor=%s" % c not in nodes.get(n, ""):
        problems.append("node %s not %s: %s" % (n, c, nodes.get(n)))
if "dashed" not in nodes.get("apps/x", ""):
    problems.append("missing target not dashed")
if "Ready" not in nodes.get("apps/a", ""):
    problems.append("state not in label")
if "// cycle: apps/a -> apps/b -> apps/c -> apps/a" not in text:
    problems.append("cycle path comment missing")
print("\n".join(problems))
PY
)
if [ -z "$report" ]; then
    tap_ok "nodes, edges, states as colours, missing targets and the cycle are drawn"
else
    tap_fail "nodes, edges, states as colours, missing targets and the cycle are drawn" "$report"
fi
"$BIN" graph "$TMP/set.yaml" >"$TMP/g2.dot" 2>/dev/null
tap_check "the output is deterministic" cmp -s "$TMP/g.dot" "$TMP/g2.dot"

if ! command -v dot >/dev/null 2>&1; then
    tap_fail "the graph renders to PNG with dot" "dot (graphviz) is not installed (make deps)"
elif dot -Tpng "$TMP/g.dot" -o "$TMP/g.png" 2>"$TMP/doterr" &&
    [ "$(head -c 8 "$TMP/g.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
    [ ! -s "$TMP/doterr" ]; then
    tap_ok "the graph renders to PNG with dot without warnings"
else
    tap_fail "the graph renders to PNG with dot without warnings" "$(cat "$TMP/doterr")"
fi

# The lifecycle states (docs/lifecycle.md): Warning and Unmanaged have colours of their own,
# distinct from every other state's.
{
    component w apps Warning u
    component u apps Unmanaged
} >"$TMP/lifecycle.yaml"
out=$("$BIN" graph "$TMP/lifecycle.yaml" 2>&1)
if grep -qx '  "apps/w" \[label="apps/w\\nWarning", fillcolor=gold\];' <<<"$out" &&
    grep -qx '  "apps/u" \[label="apps/u\\nUnmanaged", fillcolor=lavender\];' <<<"$out" &&
    ! grep -q 'fillcolor=\(gold\|lavender\)' "$TMP/g.dot"; then
    tap_ok "Warning and Unmanaged are coloured, apart from the other states"
else
    tap_fail "Warning and Unmanaged are coloured, apart from the other states" "$out"
fi

# Names that need quoting in DOT still produce a graph dot accepts.
printf '{"apiVersion":"core.cs.sap.com/v1alpha1","kind":"Component","metadata":{"name":"q\\"x","namespace":"n"},"spec":{"dependencies":[{"name":"b\\\\s"}]}}' >"$TMP/q.json"
if "$BIN" graph "$TMP/q.json" >"$TMP/q.dot" 2>"$TMP/err" && dot -Tsvg "$TMP/q.dot" >/dev/null 2>>"$TMP/err" &&
    grep -q '"n/q\\"x"' "$TMP/q.dot"; then
    tap_ok "names with quotes and backslashes are escaped"
else
    tap_fail "names with quotes and backslashes are escaped" "$(cat "$TMP/err" "$TMP/q.dot")"
fi

out=$("$BIN" graph --namespace team "$TMP/set.yaml" 2>&1)
if grep -q '"team/f"' <<<"$out"; then
    tap_ok "--namespace places Components without a namespace"
else
    tap_fail "--namespace places Components without a namespace" "$out"
fi

# --- Blueprints: Components sharing one point to the same note --------------------------------
# apps/a and apps/b use the Blueprint apps/web (b names its namespace, a takes its own), apps/c
# the Blueprint shared/web; a depends on b. A v1beta1 Component names it in spec.source.
bp_component() { # name blueprint-ref-json [deps...]
    local name=$1 ref=$2
    shift 2
    printf -- '---\napiVersion: core.cs.sap.com/v1alpha1\nkind: Component\nmetadata:\n  name: %s\n  namespace: apps\n' "$name"
    printf 'spec:\n  sourceRef:\n    blueprint: %s\n' "$ref"
    if [ $# -gt 0 ]; then
        printf '  dependencies:\n'
        for d in "$@"; do printf '  - name: %s\n' "$d"; done
    fi
}
{
    bp_component a '{name: web}' b
    bp_component b '{name: web, namespace: apps}'
    bp_component c '{name: web, namespace: shared}'
} >"$TMP/bp.yaml"
if "$BIN" graph "$TMP/bp.yaml" >"$TMP/bp.dot" 2>"$TMP/err"; then
    report=$(python3 - "$TMP/bp.dot" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
nodes = dict(re.findall(r'^  "([^"]+)" \[(.*)\];$', text, re.M))
edges = {(a, b): attrs for a, b, attrs in
         re.findall(r'^  "([^"]+)" -> "([^"]+)"( \[.*\])?;$', text, re.M)}
problems = []
bps = {n: a for n, a in nodes.items() if n.startswith("blueprint ")}
if set(bps) != {"blueprint apps/web", "blueprint shared/web"}:
    problems.append("blueprint nodes %s" % sorted(bps))
for n, a in bps.items():
    if 'label="%s"' % n not in a or "shape=note" not in a:
        problems.append("blueprint node %s: %s" % (n, a))
dotted = {e for e, a in edges.items() if "style=dotted" in a}
want = {("apps/a", "blueprint apps/web"), ("apps/b", "blueprint apps/web"),
        ("apps/c", "blueprint shared/web")}
if dotted != want:
    problems.append("dotted edges %s" % sorted(dotted))
if set(edges) - dotted != {("apps/a", "apps/b")}:
    problems.append("dependency edges %s" % sorted(set(edges) - dotted))
if set(nodes) - set(bps) != {"apps/a", "apps/b", "apps/c"}:
    problems.append("component nodes %s" % sorted(set(nodes) - set(bps)))
print("\n".join(problems))
PY
    )
    if [ -z "$report" ]; then
        tap_ok "two Components on one Blueprint and one on another: two notes, three dotted edges"
    else
        tap_fail "two Components on one Blueprint and one on another: two notes, three dotted edges" "$report" "$(cat "$TMP/bp.dot")"
    fi
else
    tap_fail "two Components on one Blueprint and one on another: two notes, three dotted edges" "$(cat "$TMP/err")"
fi
if dot -Tpng "$TMP/bp.dot" -o "$TMP/bp.png" 2>"$TMP/doterr" && [ ! -s "$TMP/doterr" ]; then
    tap_ok "a graph with Blueprints renders with dot without warnings"
else
    tap_fail "a graph with Blueprints renders with dot without warnings" "$(cat "$TMP/doterr")"
fi
printf '{"apiVersion":"core.cs.sap.com/v1beta1","kind":"Component","metadata":{"name":"d"},"spec":{"source":{"blueprint":{"name":"web"}}}}' >"$TMP/beta.json"
out=$("$BIN" graph --namespace team "$TMP/beta.json" 2>&1)
if grep -qx '  "team/d" -> "blueprint team/web" \[style=dotted, arrowhead=empty, tooltip="its source"\];' <<<"$out"; then
    tap_ok "v1beta1 spec.source.blueprint; the Blueprint's namespace defaults to the Component's"
else
    tap_fail "v1beta1 spec.source.blueprint; the Blueprint's namespace defaults to the Component's" "$out"
fi
# Without Blueprints the drawing is exactly what it was before they were drawn.
{
    component p apps Ready q
    component q apps ""
} >"$TMP/plain.yaml"
cat >"$TMP/plain.want" <<'DOT'
digraph components {
  rankdir=LR;
  node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica"];
  edge [fontname="Helvetica"];
  "apps/p" [label="apps/p\nReady", fillcolor=palegreen];
  "apps/q" [label="apps/q", fillcolor=white];
  "apps/p" -> "apps/q";
}
DOT
"$BIN" graph "$TMP/plain.yaml" >"$TMP/plain.dot" 2>&1
tap_check "a graph without Blueprints is drawn as before" diff "$TMP/plain.want" "$TMP/plain.dot"

# --- bad input --------------------------------------------------------------------------------
component a apps "" >"$TMP/dup.yaml"
component a apps "" >>"$TMP/dup.yaml"
tap_check_fails "a Component given twice is named with file and line" \
    "dup.yaml:11: error: Component \"apps/a\" is given twice" "$BIN" graph "$TMP/dup.yaml"
printf 'apiVersion: core.cs.sap.com/v1alpha1\nkind: Component\nmetadata: {}\n' >"$TMP/noname.yaml"
tap_check_fails "a Component without a name is refused with file and line" "noname.yaml:1: error:" \
    "$BIN" graph "$TMP/noname.yaml"
printf 'a: [\n' >"$TMP/broken.yaml"
tap_check_fails "malformed YAML names the file and line" "broken.yaml: line [0-9]+" \
    "$BIN" graph "$TMP/broken.yaml"
"$BIN" graph "$TMP/broken.yaml" >/dev/null 2>&1
tap_eq "bad input exits 1" 1 "$?"
tap_check_fails "a missing file is named" "$TMP/absent.yaml" "$BIN" graph "$TMP/absent.yaml"
tap_check_fails "an unreadable kubeconfig is named" "$TMP/absent-kubeconfig" \
    "$BIN" graph --kubeconfig "$TMP/absent-kubeconfig"
tap_check_fails "an unknown flag is a usage error" "unknown flag: --bogus" \
    "$BIN" graph --bogus "$TMP/set.yaml"
"$BIN" graph --bogus "$TMP/set.yaml" >/dev/null 2>&1
tap_eq "a usage error exits 2" 2 "$?"
tap_check_fails "nothing to read is a usage error" "expected manifest files or --kubeconfig" \
    "$BIN" graph
tap_check_fails "files and --kubeconfig together are a usage error" "not both" \
    "$BIN" graph --kubeconfig "$TMP/k" "$TMP/set.yaml"

tap_done
