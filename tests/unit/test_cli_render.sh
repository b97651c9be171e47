#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `component-controller render`: a source directory rendered through co_render as the
# controller renders it. Helm charts of the differential corpus (tests/fixtures/helm) rendered
# with --no-hook-mapping must equal `helm template` (objects after parsing, order included;
# where Helm fails we fail); templated kustomizations take values, placement and postBuild
# variables from flags or from a Component and its Secrets; flags and bad input.
set -uo pipefail
ROOT=${CO_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/support/tap.sh"
BIN=${CO_CONTROLLER_BIN:-$ROOT/build/test/component-controller}
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/component-operator"
HELM=${CO_HELM:-$CACHE/bin/helm}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

tap_check "render --help exits 0 and names the subcommand" \
    bash -c "'$BIN' render --help | grep -q 'component-controller render'"

# yaml_items FILE: the YAML stream as a JSON array on stdout (null documents dropped).
yaml_items() {
    python3 -c 'import json,sys,yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None], sort_keys=True))' "$1"
}

# --- a templated kustomization: values, --set, placement, substitution ------------------------
mkdir -p "$TMP/app"
cat >"$TMP/app/cm.yaml" <<'Y'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .prefix | default "app" }}-{{ name }}
  namespace: {{ namespace }}
data:
  replicas: {{ .replicas | quote }}
  greeting: {{ .greeting | default "none" | quote }}
  env: ${ENVIRONMENT:-unset}
Y
printf 'replicas: 2\ngreeting: hello\n' >"$TMP/v1.yaml"
printf 'replicas: 3\n' >"$TMP/v2.yaml"
if "$BIN" render --values "$TMP/v1.yaml" --values "$TMP/v2.yaml" --set prefix=web \
    --namespace team --name shop --substitute ENVIRONMENT=prod "$TMP/app" >"$TMP/out.yaml" 2>"$TMP/err"; then
    got=$(yaml_items "$TMP/out.yaml")
    want='[{"apiVersion": "v1", "data": {"env": "prod", "greeting": "hello", "replicas": "3"}, "kind": "ConfigMap", "metadata": {"name": "web-shop", "namespace": "team"}}]'
    tap_eq "values merge in order, --set last, placement and --substitute apply" "$want" "$got"
else
    tap_fail "values merge in order, --set last, placement and --substitute apply" "$(cat "$TMP/err")"
fi
"$BIN" render -o json --values "$TMP/v1.yaml" "$TMP/app" >"$TMP/out.json" 2>"$TMP/err"
# shellcheck disable=SC2016
if python3 -c 'import json,sys; l=json.load(open(sys.argv[1])); o=l["items"][0]; sys.exit(0 if l["kind"]=="List" and o["metadata"]=={"name":"app-app","namespace":"default"} and o["data"]["env"]=="${ENVIRONMENT:-unset}" else 1)' "$TMP/out.json"; then
    tap_ok "-o json; placement defaults to the directory name and namespace default; no variables, no substitution"
else
    tap_fail "-o json; placement defaults to the directory name and namespace default; no variables, no substitution" "$(cat "$TMP/out.json" "$TMP/err")"
fi

# --- --component with its Secrets --------------------------------------------------------------
mkdir -p "$TMP/src/deploy"
cp "$TMP/app/cm.yaml" "$TMP/src/deploy/"
cat >"$TMP/component.yaml" <<'Y'
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: shop
  namespace: apps
spec:
  namespace: target
  sourceRef:
    fluxGitRepository:
      name: repo
  path: deploy
  values:
    replicas: 5
  valuesFrom:
  - name: shop-values
  postBuild:
    substitute:
      ENVIRONMENT: staging
    substituteFrom:
    - name: shop-vars
Y
cat >"$TMP/secrets.yaml" <<'Y'
apiVersion: v1
kind: Secret
metadata:
  name: shop-values
stringData:
  values.yaml: |
    replicas: 1
    greeting: from-secret
---
apiVersion: v1
kind: Secret
metadata:
  name: shop-vars
data:
  ENVIRONMENT: ZGV2
Y
if "$BIN" render --component "$TMP/component.yaml" --secret "$TMP/secrets.yaml" "$TMP/src" >"$TMP/out.yaml" 2>"$TMP/err"; then
    got=$(yaml_items "$TMP/out.yaml")
    want='[{"apiVersion": "v1", "data": {"env": "staging", "greeting": "from-secret", "replicas": "5"}, "kind": "ConfigMap", "metadata": {"name": "app-shop", "namespace": "target"}}]'
    tap_eq "--component: path, placement, valuesFrom under values, substitute over substituteFrom" "$want" "$got"
else
    tap_fail "--component: path, placement, valuesFrom under values, substitute over substituteFrom" "$(cat "$TMP/err")"
fi
tap_check_fails "a Secret the Component references must be given" \
    'component.yaml: spec.valuesFrom\[0\]: Secret "shop-values" not given' \
    "$BIN" render --component "$TMP/component.yaml" "$TMP/src"
sed 's/^  path: deploy/  path: deploy\n  adoptionPolicy: Sometimes/' "$TMP/component.yaml" >"$TMP/bad-component.yaml"
tap_check_fails "an invalid Component is refused with file and field" \
    "bad-component.yaml:1: spec.adoptionPolicy: Unsupported value" \
    "$BIN" render --component "$TMP/bad-component.yaml" --secret "$TMP/secrets.yaml" "$TMP/src"
printf 'ENVIRONMENT: from-file\n' >"$TMP/vars.yaml"
out=$("$BIN" render --substitute-from "$TMP/vars.yaml" "$TMP/app" 2>&1)
if printf '%s' "$out" | grep -q "env: from-file"; then
    tap_ok "--substitute-from reads a mapping of variables"
else
    tap_fail "--substitute-from reads a mapping of variables" "$out"
fi

# --- bad input --------------------------------------------------------------------------------
tap_check_fails "a missing directory is named" "$TMP/absent: not a directory" "$BIN" render "$TMP/absent"
tap_check_fails "a Component path that is not there is named" "src/elsewhere: not a directory" \
    bash -c "sed 's/path: deploy/path: elsewhere/' '$TMP/component.yaml' >'$TMP/elsewhere.yaml' && '$BIN' render --component '$TMP/elsewhere.yaml' --secret '$TMP/secrets.yaml' '$TMP/src'"
"$BIN" render "$TMP/absent" >/dev/null 2>&1
tap_eq "bad input exits 1" 1 "$?"
printf 'a: [\n' >"$TMP/bad.yaml"
tap_check_fails "malformed values name the file and line" "bad.yaml: line [0-9]+" \
    "$BIN" render --values "$TMP/bad.yaml" "$TMP/app"
printf -- '- 1\n' >"$TMP/list.yaml"
tap_check_fails "values that are not a mapping are refused" "list.yaml: values must be a mapping" \
    "$BIN" render --values "$TMP/list.yaml" "$TMP/app"
tap_check_fails "a malformed --set is refused" "--set x: expected PATH=VALUE" \
    "$BIN" render --set x "$TMP/app"
tap_check_fails "a malformed --substitute is refused" "--substitute X: expected NAME=VALUE" \
    "$BIN" render --substitute X "$TMP/app"
tap_check_fails "a missing key directory is named" "--decryption-keys $TMP/nokeys: not a directory" \
    "$BIN" render --decryption-keys "$TMP/nokeys" "$TMP/app"
mkdir -p "$TMP/keys" && printf 'not a key\n' >"$TMP/keys/bad.agekey"
tap_check_fails "a malformed age key names the file" "keys/bad.agekey" \
    "$BIN" render --decryption-keys "$TMP/keys" "$TMP/app"
tap_check_fails "--revision 0 is a usage error" "--revision must be at least 1" \
    "$BIN" render --revision 0 "$TMP/app"
tap_check_fails "--secret without --component is refused" "only used with --component" \
    "$BIN" render --secret "$TMP/secrets.yaml" "$TMP/app"
tap_check_fails "an unknown flag is a usage error" "unknown flag: --bogus" \
    "$BIN" render --bogus "$TMP/app"
"$BIN" render --bogus "$TMP/app" >/dev/null 2>&1
tap_eq "a usage error exits 2" 2 "$?"
tap_check_fails "two directories are a usage error" "expected one directory" \
    "$BIN" render "$TMP/app" "$TMP/src"
tap_check_fails "an unknown output format is refused" 'unsupported output format "xml"' \
    "$BIN" render -o xml "$TMP/app"
mkdir -p "$TMP/broken"
printf 'kind: ConfigMap\nmetadata: {{ .x\n' >"$TMP/broken/cm.yaml"
tap_check_fails "a template error names the file" "cm.yaml" "$BIN" render "$TMP/broken"

# --- Helm charts against helm template --------------------------------------------------------
if [ ! -x "$HELM" ]; then
    tap_fail "render --no-hook-mapping equals helm template" "helm not found at $HELM (run tests/env/deps.sh)"
else
    report=$(python3 - "$BIN" "$HELM" "$ROOT/tests/fixtures/helm" "$TMP" <<'PY'
import glob, json, os, subprocess, sys, yaml
binary, helm, corpus, tmp = sys.argv[1:5]
extra = ["monitoring.coreos.com/v1", "example.com/v1alpha1/Widget"]
# Helm's default API versions, asked from Helm itself with a probe chart.
probe = os.path.join(tmp, "probe")
os.makedirs(os.path.join(probe, "templates"))
open(os.path.join(probe, "Chart.yaml"), "w").write("apiVersion: v2\nname: probe\nversion: 0.1.0\n")
open(os.path.join(probe, "templates", "v.yaml"), "w").write(
    "kind: Probe\nversions:\n{{- range .Capabilities.APIVersions }}\n  - {{ printf \"%q\" . }}\n{{- end }}\n")
out = subprocess.run([helm, "template", probe], capture_output=True, text=True, check=True).stdout
defaults = yaml.safe_load(out)["versions"]
api = [v for v in defaults if v not in extra] + extra
agree, problems = 0, []
for name in ("builtins", "defines", "ordering", "hooks-mix", "sprig-strings", "nested", "files"):
    chart = os.path.join(corpus, name, "chart")
    for values in [None] + sorted(glob.glob(os.path.join(corpus, name, "values-*.yaml"))):
        label = name + ("/" + os.path.basename(values) if values else "")
        cmd = [helm, "template", "rel", chart, "--namespace", "ns1", "--kube-version", "v1.29.4",
               "--include-crds"]
        for v in extra:
            cmd += ["--api-versions", v]
        if values:
            cmd += ["-f", values]
        want = subprocess.run(cmd, capture_output=True, text=True)
        ours = [binary, "render", "--no-hook-mapping", "-o", "json", "--namespace", "ns1",
                "--name", "rel", "--kube-version", "1.29.4"]
        for v in api:
            ours += ["--api-versions", v]
        if values:
            ours += ["--values", values]
        got = subprocess.run(ours + [chart], capture_output=True, text=True)
        if want.returncode != 0:
            if got.returncode == 1 and got.stderr.strip():
                agree += 1
            else:
                problems.append("%s: helm fails, we exit %d" % (label, got.returncode))
            continue
        if got.returncode != 0:
            problems.append("%s: we exit %d: %s" % (label, got.returncode, got.stderr.strip()[:300]))
            continue
        w = [d for d in yaml.safe_load_all(want.stdout) if d is not None]
        g = json.loads(got.stdout)["items"]
        if json.dumps(w, sort_keys=True) != json.dumps(g, sort_keys=True):
            problems.append("%s: objects differ (helm %d, ours %d)" % (label, len(w), len(g)))
        else:
            agree += 1
print("AGREE %d" % agree)
for p in problems:
    print(p)
PY
    )
    agree=$(printf '%s\n' "$report" | sed -n 's/^AGREE //p')
    if [ "$(printf '%s\n' "$report" | wc -l)" = 1 ] && [ "${agree:-0}" -gt 5 ]; then
        tap_ok "render --no-hook-mapping equals helm template on $agree chart/value cases"
    else
        tap_fail "render --no-hook-mapping equals helm template" "$report"
    fi
fi

tap_done
