#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The offline subcommands of component-controller, run as a user runs them: flags, output
# formats, exit statuses and messages on bad input, and the `kustomize` subcommand compared
# with `kubectl kustomize` over the kustomize corpus (objects equal after parsing, order
# included; cases kustomize rejects are rejected too).
set -uo pipefail
ROOT=${CO_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/support/tap.sh"
BIN=${CO_CONTROLLER_BIN:-$ROOT/build/test/component-controller}
CORPUS=$ROOT/tests/fixtures/kustomize/corpus
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# --- dispatch and usage ----------------------------------------------------------------------
out=$("$BIN" --help 2>&1)
if grep -q "kustomize" <<<"$out"; then
    tap_ok "--help lists the subcommands"
else
    tap_fail "--help lists the subcommands" "$out"
fi
tap_check "kustomize --help exits 0 and names the subcommand" \
    bash -c "'$BIN' kustomize --help | grep -q 'component-controller kustomize'"
tap_check_fails "an unknown flag is a usage error" "unknown flag|--no-such-flag" \
    "$BIN" kustomize --no-such-flag "$CORPUS/basic-single-file"
"$BIN" kustomize --no-such-flag "$CORPUS/basic-single-file" >/dev/null 2>&1
tap_eq "a usage error exits 2" 2 "$?"
tap_check_fails "a missing directory is reported by name" "$TMP/absent: not a directory" \
    "$BIN" kustomize "$TMP/absent"
"$BIN" kustomize "$TMP/absent" >/dev/null 2>&1
tap_eq "bad input exits 1" 1 "$?"
tap_check_fails "two directories are a usage error" "expected one directory" \
    "$BIN" kustomize "$CORPUS/basic-single-file" "$CORPUS/basic-multidoc"
tap_check_fails "an unknown output format is refused" 'unsupported output format "xml"' \
    "$BIN" kustomize -o xml "$CORPUS/basic-single-file"

mkdir -p "$TMP/bad"
printf 'resources: [\n' >"$TMP/bad/kustomization.yaml"
tap_check_fails "a malformed kustomization names the file" "kustomization.yaml" \
    "$BIN" kustomize "$TMP/bad"

# YAML output parses to the same objects as JSON output.
if "$BIN" kustomize "$CORPUS/basic-multidoc" >"$TMP/y.yaml" 2>"$TMP/err" &&
    "$BIN" kustomize -o json "$CORPUS/basic-multidoc" >"$TMP/j.json" 2>>"$TMP/err" &&
    python3 -c 'import json,sys,yaml; docs=[d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]; lst=json.load(open(sys.argv[2])); sys.exit(0 if lst["kind"]=="List" and lst["items"]==docs and len(docs)>1 else 1)' "$TMP/y.yaml" "$TMP/j.json"; then
    tap_ok "-o yaml and -o json print the same objects"
else
    tap_fail "-o yaml and -o json print the same objects" "$(cat "$TMP/err")"
fi

# --- overlays: bases outside DIR, the load restrictor -----------------------------------------
# DIR is built in the whole file tree, as kubectl kustomize builds it: bases and components may
# lie anywhere; a file must be in or below the directory of the kustomization reading it.
LAY=$TMP/layout
mkdir -p "$LAY/base" "$LAY/overlays/prod" "$LAY/components/extra" "$LAY/patches" "$LAY/cyc/sub"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: "1"}\n' \
    >"$LAY/base/cm.yaml"
printf 'resources: [cm.yaml]\n' >"$LAY/base/kustomization.yaml"
printf 'apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nnameSuffix: -x\n' \
    >"$LAY/components/extra/kustomization.yaml"
printf 'resources: [../../base]\ncomponents: [../../components/extra]\nnamePrefix: prod-\n' \
    >"$LAY/overlays/prod/kustomization.yaml"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {b: "2"}\n' \
    >"$LAY/patches/b.yaml"
mkdir -p "$LAY/outside"
printf 'resources: [../base]\npatches:\n- path: ../patches/b.yaml\n' \
    >"$LAY/outside/kustomization.yaml"
printf 'namespace: n\n' >"$LAY/cyc/kustomization.yaml"
printf 'resources: [..]\n' >"$LAY/cyc/sub/kustomization.yaml"
REAL=$(cd "$LAY" && pwd -P)

out=$(cd "$LAY/overlays" && "$BIN" kustomize -o json prod 2>&1)
if python3 -c 'import json,sys; l=json.load(sys.stdin)["items"]; sys.exit(0 if [o["metadata"]["name"] for o in l]==["prod-cfg-x"] else 1)' <<<"$out"; then
    tap_ok "kustomize builds an overlay whose base and component lie outside DIR"
else
    tap_fail "kustomize builds an overlay whose base and component lie outside DIR" "$out"
fi
tap_check_fails "a patch file outside the kustomization's directory is refused by default" \
    "security; file '$REAL/patches/b.yaml' is not in or below '$REAL/outside'" \
    "$BIN" kustomize "$LAY/outside"
tap_check_fails "--load-restrictor LoadRestrictionsRootOnly refuses it too" \
    "security; file '$REAL/patches/b.yaml' is not in or below '$REAL/outside'" \
    "$BIN" kustomize --load-restrictor LoadRestrictionsRootOnly "$LAY/outside"
out=$("$BIN" kustomize -o json --load-restrictor LoadRestrictionsNone "$LAY/outside" 2>&1)
if python3 -c 'import json,sys; l=json.load(sys.stdin)["items"]; sys.exit(0 if l[0]["data"]=={"a":"1","b":"2"} else 1)' <<<"$out"; then
    tap_ok "--load-restrictor LoadRestrictionsNone reads the patch"
else
    tap_fail "--load-restrictor LoadRestrictionsNone reads the patch" "$out"
fi
tap_check_fails "a base containing the kustomization being built is a cycle" \
    "cycle detected: candidate root '$REAL/cyc' contains visited root '$REAL/cyc/sub'" \
    "$BIN" kustomize --load-restrictor LoadRestrictionsNone "$LAY/cyc/sub"
tap_check_fails "an unknown load restrictor is a usage error" \
    "illegal flag value --load-restrictor LoadRestrictionsSome" \
    "$BIN" kustomize --load-restrictor LoadRestrictionsSome "$LAY/overlays/prod"
"$BIN" kustomize --load-restrictor LoadRestrictionsSome "$LAY/overlays/prod" >/dev/null 2>&1
tap_eq "an unknown load restrictor exits 2" 2 "$?"

# --- kustomize subcommand against kubectl kustomize ------------------------------------------
# One Python process walks the corpus: the reference through tests/support/kustomize_oracle.py
# (cached per machine), ours through the binary; it prints "AGREE n" and one line per mismatch.
report=$(python3 - "$ROOT" "$BIN" "$CORPUS" <<'PY'
import json, os, subprocess, sys
root, binary, corpus = sys.argv[1:4]
agree, problems = 0, []
for name in sorted(os.listdir(corpus)):
    case = os.path.join(corpus, name)
    # a case's BUILD file names the directory to build inside it and kubectl's flags
    build, flags = case, []
    if os.path.exists(os.path.join(case, "BUILD")):
        words = open(os.path.join(case, "BUILD")).read().split()
        build, flags = os.path.join(case, words[0]), words[1:]
    want = subprocess.run([sys.executable, os.path.join(root, "tests/support/kustomize_oracle.py"),
                           "--tree", case, build, *flags], capture_output=True, text=True)
    if want.returncode == 2:
        problems.append("no kubectl with kustomize v5: " + want.stderr.strip())
        break
    got = subprocess.run([binary, "kustomize", "-o", "json", *flags, build], capture_output=True,
                         text=True)
    if want.returncode == 3:
        if got.returncode == 1 and got.stderr.strip():
            agree += 1
        else:
            problems.append("%s: kustomize fails, we exit %d" % (name, got.returncode))
    elif want.returncode != 0:
        problems.append("%s: oracle exit %d: %s" % (name, want.returncode, want.stderr.strip()))
    elif got.returncode != 0:
        problems.append("%s: we exit %d: %s" % (name, got.returncode, got.stderr.strip()))
    elif json.loads(got.stdout)["items"] != json.loads(want.stdout):
        problems.append("%s: objects differ" % name)
    else:
        agree += 1
print("AGREE %d" % agree)
for p in problems:
    print(p)
PY
)
agree=$(printf '%s\n' "$report" | sed -n 's/^AGREE //p')
if [ "$(printf '%s\n' "$report" | wc -l)" = 1 ] && [ "${agree:-0}" -gt 0 ]; then
    tap_ok "kustomize agrees with kubectl kustomize on all $agree corpus cases"
else
    tap_fail "kustomize agrees with kubectl kustomize on the corpus" "$report"
fi

tap_done
