#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `component-controller render`: a source directory rendered through co_render as the
# controller renders it. Helm charts of the differential corpus (tests/fixtures/helm) rendered
# with --no-hook-mapping must equal `helm template` (objects after parsing, order included;
# where Helm fails we fail); templated kustomizations take values, placement and postBuild
# variables from flags or from a Component and its Secrets; a Blueprint manifest (--blueprint)
# renders as the same files in a directory, and a hostile one is refused; flags and bad input.
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
# postBuild patches and images of the Component run after substitution.
mkdir -p "$TMP/src/pb"
cat >"$TMP/src/pb/deploy.yaml" <<'Y'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.0
        env:
        - {name: ENV, value: "${ENVIRONMENT}"}
Y
cat >"$TMP/src/pb/info.yaml" <<'Y'
apiVersion: v1
kind: ConfigMap
metadata:
  name: info
data:
  component: "{{ component.Namespace }}/{{ component.Name }} {{ component.Spec.Path }} {{ namespace }}/{{ name }}"
Y
sed -e '/^  valuesFrom:/,/^  - name: shop-values/d' -e 's/^  path: deploy/  path: pb/' \
    -e '/^    substituteFrom:/,$d' "$TMP/component.yaml" >"$TMP/pb-component.yaml"
cat >>"$TMP/pb-component.yaml" <<'Y'
    images:
    - name: nginx
      newTag: "1.25"
    patches:
    - target: {kind: Deployment, name: web}
      patch: |
        - op: add
          path: /metadata/labels
          value: {patched: "yes"}
Y
if "$BIN" render -o json --component "$TMP/pb-component.yaml" "$TMP/src" >"$TMP/out.json" 2>"$TMP/err"; then
    got=$(python3 -c 'import json,sys; o=next(x for x in json.load(open(sys.argv[1]))["items"] if x["kind"]=="Deployment"); c=o["spec"]["template"]["spec"]["containers"][0]; print(c["image"], c["env"][0]["value"], o["metadata"]["labels"]["patched"])' "$TMP/out.json" 2>&1)
    tap_eq "--component: postBuild substitution, then its patches and images" "nginx:1.25 staging yes" "$got"
    got=$(python3 -c 'import json,sys; print(next(o for o in json.load(open(sys.argv[1]))["items"] if o["kind"]=="ConfigMap")["data"]["component"])' "$TMP/out.json" 2>&1)
    tap_eq "--component: templates see the Component and its placement" "apps/shop pb target/shop" "$got"
else
    tap_fail "--component: postBuild substitution, then its patches and images" "$(cat "$TMP/err")"
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
if grep -q "env: from-file" <<<"$out"; then
    tap_ok "--substitute-from reads a mapping of variables"
else
    tap_fail "--substitute-from reads a mapping of variables" "$out"
fi

printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {ENVIRONMENT: from-configmap}\n' >"$TMP/vars-cm.yaml"
printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: b}\ndata: {ENVIRONMENT: ZnJvbS1zZWNyZXQ=}\n' >"$TMP/vars-secret.yaml"
out=$("$BIN" render --substitute-from "$TMP/vars-secret.yaml" --substitute-from "$TMP/vars-cm.yaml" "$TMP/app" 2>&1)
out2=$("$BIN" render --substitute-from "$TMP/vars-cm.yaml" --substitute-from "$TMP/vars-secret.yaml" "$TMP/app" 2>&1)
if grep -q "env: from-configmap" <<<"$out" && grep -q "env: from-secret" <<<"$out2"; then
    tap_ok "--substitute-from reads ConfigMaps and Secrets (base64 data decoded); the later file wins"
else
    tap_fail "--substitute-from reads ConfigMaps and Secrets (base64 data decoded); the later file wins" "$out" "$out2"
fi
out=$("$BIN" render --substitute-from "$TMP/vars.yaml" --substitute ENVIRONMENT=flag "$TMP/app" 2>&1)
if grep -q "env: flag" <<<"$out"; then
    tap_ok "--substitute wins over --substitute-from"
else
    tap_fail "--substitute wins over --substitute-from" "$out"
fi
printf 'ENVIRONMENT: [a]\n' >"$TMP/vars-bad.yaml"
tap_check_fails "a variable that is not a string is refused with file and line" \
    "vars-bad.yaml:1: variable ENVIRONMENT: not a string" \
    "$BIN" render --substitute-from "$TMP/vars-bad.yaml" "$TMP/app"

# --- --blueprint: the files of a Blueprint manifest as the source ------------------------------
# blueprint_of DIR NAME [NAMESPACE] [json]: a Blueprint manifest holding every file below DIR.
blueprint_of() {
    python3 - "$@" <<'PY'
import json, os, sys, yaml
root, name = sys.argv[1:3]
meta = {"name": name}
if len(sys.argv) > 3 and sys.argv[3]:
    meta["namespace"] = sys.argv[3]
files = {}
for d, _, names in os.walk(root):
    for f in names:
        p = os.path.join(d, f)
        files[os.path.relpath(p, root)] = open(p).read()
obj = {"apiVersion": "core.cs.sap.com/v1alpha1", "kind": "Blueprint", "metadata": meta,
       "spec": {"files": files}}
print(json.dumps(obj) if sys.argv[4:] == ["json"] else yaml.safe_dump(obj))
PY
}
mkdir -p "$TMP/bp/web/deploy" "$TMP/scratch"
cat >"$TMP/bp/web/kustomization.yaml" <<'Y'
namePrefix: {{ .prefix | default "x" }}-
resources:
- cm.yaml
- deploy
Y
cat >"$TMP/bp/web/cm.yaml" <<'Y'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
data:
  replicas: {{ .replicas | default 1 | quote }}
Y
printf 'resources:\n- svc.yaml\n' >"$TMP/bp/web/deploy/kustomization.yaml"
cat >"$TMP/bp/web/deploy/svc.yaml" <<'Y'
apiVersion: v1
kind: Service
metadata:
  name: {{ name }}-svc
spec:
  ports:
  - port: {{ .port | default 80 }}
Y
blueprint_of "$TMP/bp/web" web apps >"$TMP/web-bp.yaml"
blueprint_of "$TMP/bp/web" web apps json >"$TMP/web-bp.json"
render_both() { # DESC FLAGS...: --blueprint and the same files as DIR give the same objects
    local desc=$1
    shift
    TMPDIR=$TMP/scratch "$BIN" render -o json "$@" --blueprint "$TMP/web-bp.yaml" >"$TMP/bp-out.json" 2>"$TMP/err"
    local rc_bp=$?
    "$BIN" render -o json "$@" "$TMP/bp/web" >"$TMP/dir-out.json" 2>>"$TMP/err"
    local rc_dir=$?
    local bp dir
    bp=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["items"], sort_keys=True))' "$TMP/bp-out.json" 2>&1)
    dir=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["items"], sort_keys=True))' "$TMP/dir-out.json" 2>&1)
    if [ "$rc_bp" = 0 ] && [ "$rc_dir" = 0 ] && [ "$bp" = "$dir" ] && [ "$bp" != "[]" ]; then
        tap_ok "$desc"
    else
        tap_fail "$desc" "exit $rc_bp / $rc_dir" "blueprint: $bp" "directory: $dir" "$(cat "$TMP/err")"
    fi
}
render_both "--blueprint renders a kustomization with templates as the same files in DIR do"
render_both "--blueprint with values, --set and placement flags equals DIR" \
    --values "$TMP/v1.yaml" --set prefix=p --set port=8080 --namespace team --name shop
got=$(python3 -c 'import json,sys; print(" ".join(sorted(o["kind"] + ":" + o["metadata"]["name"] for o in json.load(open(sys.argv[1]))["items"])))' "$TMP/bp-out.json" 2>&1)
tap_eq "--blueprint: every template and the nested kustomization are rendered" \
    "ConfigMap:p-shop Service:p-shop-svc" "$got"
if TMPDIR=$TMP/scratch "$BIN" render -o json --blueprint "$TMP/web-bp.json" >"$TMP/out.json" 2>"$TMP/err"; then
    got=$(python3 -c 'import json,sys; o=next(x for x in json.load(open(sys.argv[1]))["items"] if x["kind"]=="ConfigMap"); print(o["metadata"]["name"], o["metadata"]["namespace"])' "$TMP/out.json" 2>&1)
    tap_eq "--blueprint reads JSON; the placement name defaults to the Blueprint's" "x-web default" "$got"
else
    tap_fail "--blueprint reads JSON; the placement name defaults to the Blueprint's" "$(cat "$TMP/err")"
fi
tap_eq "the temporary directory is removed after a render" "" "$(ls -A "$TMP/scratch")"

# --component: spec.path narrows inside the Blueprint's tree; another Blueprint is refused.
cat >"$TMP/bp-component.yaml" <<'Y'
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: shop
  namespace: apps
spec:
  sourceRef:
    blueprint:
      name: web
  path: deploy
  values:
    port: 9090
Y
if TMPDIR=$TMP/scratch "$BIN" render --component "$TMP/bp-component.yaml" --blueprint "$TMP/web-bp.yaml" >"$TMP/out.yaml" 2>"$TMP/err"; then
    "$BIN" render --component "$TMP/bp-component.yaml" "$TMP/bp/web" >"$TMP/dir-out.yaml" 2>&1
    got=$(yaml_items "$TMP/out.yaml")
    tap_eq "--component with --blueprint: spec.path narrows inside the tree, values apply" \
        '[{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shop-svc"}, "spec": {"ports": [{"port": 9090}]}}]' "$got"
    tap_eq "--component with --blueprint equals --component with the same files in DIR" \
        "$(yaml_items "$TMP/dir-out.yaml")" "$got"
else
    tap_fail "--component with --blueprint: spec.path narrows inside the tree, values apply" "$(cat "$TMP/err")"
fi
sed 's/name: web/name: other/' "$TMP/bp-component.yaml" >"$TMP/bp-other.yaml"
tap_check_fails "a Component naming another Blueprint is refused, naming both" \
    'bp-other.yaml: spec.sourceRef.blueprint: the Component uses Blueprint "apps/other", not Blueprint "apps/web"' \
    "$BIN" render --component "$TMP/bp-other.yaml" --blueprint "$TMP/web-bp.yaml"
sed 's/^  namespace: apps/  namespace: elsewhere/' "$TMP/bp-component.yaml" >"$TMP/bp-elsewhere.yaml"
tap_check_fails "a Component in another namespace names another Blueprint" \
    'uses Blueprint "elsewhere/web", not Blueprint "apps/web"' \
    "$BIN" render --component "$TMP/bp-elsewhere.yaml" --blueprint "$TMP/web-bp.yaml"
sed 's/path: deploy/path: nowhere/' "$TMP/bp-component.yaml" >"$TMP/bp-nowhere.yaml"
tap_check_fails "a spec.path the Blueprint does not have is named" \
    'spec.path nowhere: no such directory in Blueprint "apps/web"' \
    "$BIN" render --component "$TMP/bp-nowhere.yaml" --blueprint "$TMP/web-bp.yaml"

# Hostile or invalid Blueprints: refused with the webhook's field errors, nothing written.
cat >"$TMP/hostile-bp.yaml" <<'Y'
apiVersion: core.cs.sap.com/v1alpha1
kind: Blueprint
metadata:
  name: evil
  namespace: apps
spec:
  files:
    ../x: "escape"
    /abs: "absolute"
    ok.yaml: "a: b"
Y
TMPDIR=$TMP/scratch "$BIN" render --blueprint "$TMP/hostile-bp.yaml" >"$TMP/out.yaml" 2>"$TMP/err"
rc=$?
if [ "$rc" = 1 ] && [ ! -s "$TMP/out.yaml" ] &&
    grep -q 'hostile-bp.yaml:1: error: Blueprint "apps/evil": spec.files\[../x\]: Invalid value: "../x": must not contain . or .. segments' "$TMP/err" &&
    grep -q 'hostile-bp.yaml:1: error: Blueprint "apps/evil": spec.files\[/abs\]: Invalid value: "/abs": must be a relative path' "$TMP/err" &&
    grep -q 'render: .*hostile-bp.yaml: not a valid Blueprint' "$TMP/err" && [ ! -e "$TMP/x" ]; then
    tap_ok "a Blueprint with ../x and /abs paths is refused with a field error for each, exit 1"
else
    tap_fail "a Blueprint with ../x and /abs paths is refused with a field error for each, exit 1" "exit $rc" "$(cat "$TMP/err" "$TMP/out.yaml")"
fi
python3 -c 'import json; print(json.dumps({"apiVersion": "core.cs.sap.com/v1alpha1", "kind": "Blueprint", "metadata": {"name": "big"}, "spec": {"files": {"a.yaml": "x" * (1 << 20)}}}))' >"$TMP/big-bp.json"
tap_check_fails "a Blueprint past the 1 MiB of files is refused with a field error" \
    'big-bp.json:1: error: Blueprint "big": spec.files: Too long: .* at most 1048576 bytes' \
    env TMPDIR="$TMP/scratch" "$BIN" render --blueprint "$TMP/big-bp.json"
printf '{"apiVersion":"core.cs.sap.com/v1alpha1","kind":"Blueprint","metadata":{"name":"c"},"spec":{"files":{"a":"x","a/b":"y"}}}' >"$TMP/clash-bp.json"
tap_check_fails "a path that is a file and a directory at once is refused" \
    'clash-bp.json: Blueprint "c": spec.files\[a/b\]: a is a file of the Blueprint too' \
    env TMPDIR="$TMP/scratch" "$BIN" render --blueprint "$TMP/clash-bp.json"
printf '{"apiVersion":"core.cs.sap.com/v1alpha1","kind":"Blueprint","metadata":{"name":"t"},"spec":{"files":{"cm.yaml":"kind: ConfigMap\\nmetadata: {{ .x\\n"}}}' >"$TMP/broken-bp.json"
tap_check_fails "a render error names the manifest, the Blueprint and its file" \
    'render: .*broken-bp.json: Blueprint "t": template: cm.yaml:[0-9]+' \
    env TMPDIR="$TMP/scratch" "$BIN" render --blueprint "$TMP/broken-bp.json"
tap_eq "the temporary directory is removed after errors too" "" "$(ls -A "$TMP/scratch")"
tap_check_fails "the temporary directory is made in TMPDIR" "creating a temporary directory $TMP/none/" \
    env TMPDIR="$TMP/none" "$BIN" render --blueprint "$TMP/web-bp.yaml"
tap_check_fails "a manifest that is not one Blueprint is refused" \
    "bp-component.yaml: expected exactly one Blueprint" \
    "$BIN" render --blueprint "$TMP/bp-component.yaml"
tap_check_fails "--blueprint and DIR together are a usage error" \
    "give DIR or --blueprint FILE, not both" \
    "$BIN" render --blueprint "$TMP/web-bp.yaml" "$TMP/bp/web"
"$BIN" render --blueprint "$TMP/web-bp.yaml" "$TMP/bp/web" >/dev/null 2>&1
tap_eq "--blueprint and DIR together exit 2" 2 "$?"

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

# --- cluster facts: --kube-version, --api-versions, --revision ---------------------------------
mkdir -p "$TMP/caps"
cat >"$TMP/caps/cm.yaml" <<'Y'
apiVersion: v1
kind: ConfigMap
metadata:
  name: caps
data:
  version: {{ kubernetesVersion.GitVersion | quote }}
  minor: {{ kubernetesVersion.Minor | quote }}
  groups: "{{ range apiResources }}{{ .GroupVersion }}={{ range .APIResources }}{{ .Kind }},{{ end }};{{ end }}"
  revision: {{ componentRevision | quote }}
Y
if "$BIN" render -o json --kube-version 1.29 --api-versions apps/v1/Deployment --api-versions v1 \
    --api-versions apps/v1/StatefulSet --revision 3 "$TMP/caps" >"$TMP/out.json" 2>"$TMP/err"; then
    got=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["items"][0]["data"], sort_keys=True))' "$TMP/out.json")
    tap_eq "kustomization: kubernetesVersion, apiResources and componentRevision from the flags" \
        '{"groups": "apps/v1=Deployment,StatefulSet,;v1=;", "minor": "29", "revision": "3", "version": "v1.29.0"}' "$got"
else
    tap_fail "kustomization: kubernetesVersion, apiResources and componentRevision from the flags" "$(cat "$TMP/err")"
fi
mkdir -p "$TMP/chart/templates"
printf 'apiVersion: v2\nname: probe\nversion: 0.1.0\n' >"$TMP/chart/Chart.yaml"
printf 'color: red\n' >"$TMP/chart/values.yaml"
cat >"$TMP/chart/templates/cm.yaml" <<'Y'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-caps
  namespace: {{ .Release.Namespace }}
data:
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  widget: {{ .Capabilities.APIVersions.Has "example.com/v1/Widget" | quote }}
  revision: {{ .Release.Revision | quote }}
  install: {{ .Release.IsInstall | quote }}
  color: {{ .Values.color | quote }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-5"
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: busybox}]
Y
printf 'color: green\n' >"$TMP/color.yaml"
if "$BIN" render -o json --kube-version 1.29.4 --api-versions example.com/v1/Widget --revision 4 \
    --name rel --namespace ns --values "$TMP/color.yaml" --set color=blue "$TMP/chart" \
    >"$TMP/out.json" 2>"$TMP/err"; then
    got=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["items"][0], sort_keys=True))' "$TMP/out.json")
    tap_eq "chart: placement, .Capabilities, .Release.Revision and values over the chart's" \
        '{"apiVersion": "v1", "data": {"color": "blue", "install": "false", "kube": "v1.29.4", "revision": "4", "widget": "true"}, "kind": "ConfigMap", "metadata": {"name": "rel-caps", "namespace": "ns"}}' "$got"
else
    tap_fail "chart: placement, .Capabilities, .Release.Revision and values over the chart's" "$(cat "$TMP/err")"
fi
# Hooks: mapped to the operator's annotations by default, left alone with --no-hook-mapping.
hook_annotations() {
    python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["items"]; print(" ".join(sorted(next(o for o in l if o["kind"]=="Job")["metadata"]["annotations"])))' "$1"
}
"$BIN" render -o json "$TMP/chart" >"$TMP/mapped.json" 2>"$TMP/err"
"$BIN" render -o json --no-hook-mapping "$TMP/chart" >"$TMP/plain.json" 2>>"$TMP/err"
mapped=$(hook_annotations "$TMP/mapped.json" 2>&1)
plain=$(hook_annotations "$TMP/plain.json" 2>&1)
case "$mapped" in
*component-operator.cs.sap.com/apply-order*) tap_ok "hooks are mapped to the operator's annotations by default" ;;
*) tap_fail "hooks are mapped to the operator's annotations by default" "$mapped" "$(cat "$TMP/err")" ;;
esac
tap_eq "--no-hook-mapping leaves hooks as helm template prints them" \
    "helm.sh/hook helm.sh/hook-weight" "$plain"
tap_check_fails "a malformed --kube-version is refused" "--kube-version x.y: expected X.Y" \
    "$BIN" render --kube-version x.y "$TMP/caps"
tap_check_fails "a malformed --api-versions is refused" "--api-versions a/b/c/d: expected GROUP/VERSION" \
    "$BIN" render --api-versions a/b/c/d "$TMP/caps"
tap_check_fails "a malformed --revision is a usage error" "revision" "$BIN" render --revision x "$TMP/caps"

# --- SOPS: --decryption-keys and a Component's decryption Secret --------------------------------
# Keys made here by age-keygen and gpg, Secrets encrypted for them (tests/support/sopsgen.sh).
KEYS=$TMP/sops-keys
mkdir -p "$TMP/enc" "$TMP/agekeys" "$TMP/pgpkeys" "$TMP/pgp"
if ! "$ROOT/tests/support/sopsgen.sh" keys "$KEYS" 2>"$TMP/err"; then
    tap_fail "SOPS keys and files are made with age-keygen, gpg and sopsgen" "$(cat "$TMP/err")"
fi
trap '"$ROOT/tests/support/sopsgen.sh" stop "$KEYS" 2>/dev/null; rm -rf "$TMP"' EXIT
# encrypted_secret KEY-GROUP VALUE: a Secret "enc" with stringData.key = VALUE, as Flux users
# encrypt them, for the key group (sopsgen's @0, @1 or @pgp).
encrypted_secret() {
    printf '{"format":"yaml","tree":{"apiVersion":"v1","kind":"Secret","metadata":{"name":"enc"},"stringData":{"key":"%s"}},"rule":{"encrypted_regex":"^(data|stringData)$"},"groups":[[%s]],"lastmodified":"2024-01-02T03:04:05Z"}' \
        "$2" "$1" | "$ROOT/tests/support/sopsgen.sh" encrypt "$KEYS"
}
encrypted_secret '{"age":"@0"}' age-value >"$TMP/enc/secret.yaml"
cp "$KEYS/age0.agekey" "$TMP/agekeys/test.agekey"
encrypted_secret '{"pgp":"@pgp"}' pgp-value >"$TMP/pgp/secret.yaml"
cp "$KEYS/pgp.asc" "$TMP/pgpkeys/test.asc"
tap_check_fails "an encrypted file without keys is an error naming the file" "secret.yaml" \
    "$BIN" render "$TMP/enc"
"$BIN" render "$TMP/enc" >/dev/null 2>&1
tap_eq "an encrypted file without keys exits 1" 1 "$?"
secret_key() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["items"][0]["stringData"]["key"])' "$1" 2>&1
}
# expect_key DESC WANT: the rendered Secret's stringData.key is WANT.
expect_key() {
    local got
    got=$(secret_key "$TMP/out.json")
    if [ "$got" = "$2" ]; then
        tap_ok "$1"
    else
        tap_fail "$1" "expected: $2" "actual:   $got" "$(cat "$TMP/err")"
    fi
}
"$BIN" render -o json --decryption-keys "$TMP/agekeys" "$TMP/enc" >"$TMP/out.json" 2>"$TMP/err"
expect_key "--decryption-keys: an age key (*.agekey) decrypts the file" age-value
"$BIN" render -o json --decryption-keys "$TMP/pgpkeys" "$TMP/pgp" >"$TMP/out.json" 2>"$TMP/err"
expect_key "--decryption-keys: an OpenPGP key (*.asc) decrypts the file" pgp-value
tap_check_fails "keys that do not fit fail the decryption" "secret.yaml" \
    "$BIN" render --decryption-keys "$TMP/pgpkeys" "$TMP/enc"
mkdir -p "$TMP/otherkeys" && cp "$KEYS/age1.agekey" "$TMP/otherkeys/other.agekey"
tap_check_fails "another age identity does not decrypt the file" "no identity matched" \
    "$BIN" render --decryption-keys "$TMP/otherkeys" "$TMP/enc"
sed -e '/^  valuesFrom:/,/^  - name: shop-values/d' -e 's/^  path: deploy/  path: enc\n  decryption:\n    secretRef:\n      name: sops-keys/' \
    -e '/^  postBuild:/,$d' "$TMP/component.yaml" >"$TMP/enc-component.yaml"
mkdir -p "$TMP/src/enc" && cp "$TMP/enc/secret.yaml" "$TMP/src/enc/"
python3 - "$TMP/agekeys/test.agekey" >"$TMP/key-secret.yaml" <<'PY'
import base64, sys
print("apiVersion: v1\nkind: Secret\nmetadata:\n  name: sops-keys\ndata:\n  identity.agekey: "
      + base64.b64encode(open(sys.argv[1], "rb").read()).decode())
PY
"$BIN" render -o json --component "$TMP/enc-component.yaml" --secret "$TMP/key-secret.yaml" \
    "$TMP/src" >"$TMP/out.json" 2>"$TMP/err"
expect_key "--component: spec.decryption's Secret given with --secret decrypts the file" age-value

# --- a chart offline: the controller's .Release.Service, lookups without a cluster ---------------
mkdir -p "$TMP/chart/templates"
printf 'apiVersion: v2\nname: offline\nversion: 0.1.0\n' >"$TMP/chart/Chart.yaml"
cat >"$TMP/chart/templates/cm.yaml" <<'Y'
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  labels:
    app.kubernetes.io/managed-by: {{ .Release.Service }}
data:
  found: {{ len (lookup "v1" "Secret" .Release.Namespace "x") | quote }}
Y
managed_by() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["items"][0]["metadata"]["labels"]["app.kubernetes.io/managed-by"])' "$1"
}
if "$BIN" render -o json "$TMP/chart" >"$TMP/out.json" 2>"$TMP/err"; then
    tap_eq "a chart's .Release.Service is the controller's" "component-operator.cs.sap.com" "$(managed_by "$TMP/out.json")"
    tap_eq "offline, lookup finds nothing (as in helm template)" "0" \
        "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["items"][0]["data"]["found"])' "$TMP/out.json")"
else
    tap_fail "a chart's .Release.Service is the controller's" "$(cat "$TMP/err")"
    tap_fail "offline, lookup finds nothing (as in helm template)" "$(cat "$TMP/err")"
fi
"$BIN" render -o json --release-service Helm "$TMP/chart" >"$TMP/out.json" 2>"$TMP/err"
tap_eq "--release-service Helm gives helm template's" "Helm" "$(managed_by "$TMP/out.json" 2>&1)"
printf 'a: {{ mustLookup "v1" "Secret" "x" "y" }}\n' >"$TMP/chart/templates/cm.yaml"
"$BIN" render "$TMP/chart" >/dev/null 2>"$TMP/err"
rc=$?
if [ "$rc" = 1 ] && grep -q 'mustLookup: no cluster access' "$TMP/err"; then
    tap_ok "offline, mustLookup in a chart fails with no cluster access"
else
    tap_fail "offline, mustLookup in a chart fails with no cluster access" "exit $rc" "$(cat "$TMP/err")"
fi

# --- the templated-kustomization corpus: the CLI equals the generator ---------------------------
# tests/fixtures/kzgen/<case> as tests/unit/test_kzgen.c renders it with co_kzgen (placement
# ns1/comp1, revision 42, Kubernetes v1.20.2, values.yaml): expected.yaml must come out, and an
# error.txt case must fail with that text (its path relative to the case, here to src/).
# Not offline: "functions" (cluster lookups, the Component and its digest) and the cases that
# include files or kustomizations from outside src/ (co_render reads only below DIR).
report=$(python3 - "$BIN" "$ROOT/tests/fixtures/kzgen" <<'PY'
import json, os, subprocess, sys, yaml
binary, corpus = sys.argv[1:3]
outside = {"functions", "included-files", "included-kustomizations", "err-include-cycle"}
agree, problems, n = 0, [], 0
for name in sorted(os.listdir(corpus)):
    case = os.path.join(corpus, name)
    if name in outside or not os.path.isdir(case):
        continue
    n += 1
    cmd = [binary, "render", "-o", "json", "--namespace", "ns1", "--name", "comp1", "--revision",
           "42", "--kube-version", "1.20.2"]
    if os.path.exists(os.path.join(case, "values.yaml")):
        cmd += ["--values", os.path.join(case, "values.yaml")]
    got = subprocess.run(cmd + [os.path.join(case, "src")], capture_output=True, text=True)
    if os.path.exists(os.path.join(case, "error.txt")):
        want = open(os.path.join(case, "error.txt")).read().strip()
        want = want[4:] if want.startswith("src/") else want
        if name == "err-must-lookup":
            want = "no cluster access"
        if got.returncode == 1 and want in got.stderr:
            agree += 1
        else:
            problems.append("%s: want an error with %r, got exit %d: %s" % (name, want, got.returncode, got.stderr.strip()))
        continue
    if got.returncode != 0:
        problems.append("%s: exit %d: %s" % (name, got.returncode, got.stderr.strip()))
        continue
    docs = [d for d in yaml.safe_load_all(open(os.path.join(case, "expected.yaml"))) if d is not None]
    want = docs[0] if len(docs) == 1 and isinstance(docs[0], list) else docs
    if json.loads(got.stdout)["items"] == want:
        agree += 1
    else:
        problems.append("%s: objects differ:\n  want %s\n  got  %s" % (name, json.dumps(want), got.stdout))
print("CASES %d" % n)
print("AGREE %d" % agree)
for p in problems:
    print(p)
PY
)
cases=$(printf '%s\n' "$report" | sed -n 's/^CASES //p')
agree=$(printf '%s\n' "$report" | sed -n 's/^AGREE //p')
if [ -n "$agree" ] && [ "$agree" = "$cases" ] && [ "$agree" -gt 10 ]; then
    tap_ok "render equals the templated-kustomization generator on $agree fixture cases"
else
    tap_fail "render equals the templated-kustomization generator on the fixtures" "$report"
fi

# The controller applies a chart's crds/ files: render prints them unless --skip-crds.
crds_with=$("$BIN" render -o json "$ROOT/tests/fixtures/helm/crds-sub/chart" 2>>"$TMP/err" |
    python3 -c 'import json,sys; print(sum(1 for o in json.load(sys.stdin)["items"] if o["kind"] == "CustomResourceDefinition"))')
crds_without=$("$BIN" render -o json --skip-crds "$ROOT/tests/fixtures/helm/crds-sub/chart" 2>>"$TMP/err" |
    python3 -c 'import json,sys; print(sum(1 for o in json.load(sys.stdin)["items"] if o["kind"] == "CustomResourceDefinition"))')
if [ -n "$crds_with" ] && [ "$crds_with" -gt 0 ] && [ "$crds_without" = 0 ]; then
    tap_ok "render prints the charts' CRDs ($crds_with), --skip-crds leaves them out"
else
    tap_fail "render prints the charts' CRDs, --skip-crds leaves them out" "with: $crds_with, without: $crds_without; $(cat "$TMP/err")"
fi

# --- Helm charts against helm template --------------------------------------------------------
# The corpus and the comparison of tests/unit/test_helm_diff.c, through the CLI: every
# tests/fixtures/helm/<case>/chart once without values and once per values-*.yaml, and the chart
# `helm create` writes with four value sets; release rel, namespace ns1, Kubernetes v1.29.4,
# two extra API versions beside the defaults both start from; without values also with
# --skip-tests, with --no-hooks and without --include-crds. The object lists must be equal after
# parsing, order included; where Helm fails we must fail.
if [ ! -x "$HELM" ]; then
    tap_fail "render --no-hook-mapping equals helm template" "helm not found at $HELM (run tests/env/deps.sh)"
else
    report=$(python3 - "$BIN" "$HELM" "$ROOT/tests/fixtures/helm" "$TMP" <<'PY'
import json, os, subprocess, sys, yaml
binary, helm, corpus, tmp = sys.argv[1:5]
extra = ["monitoring.coreos.com/v1", "example.com/v1alpha1/Widget"]
# (name suffix, helm template's flags, ours): all of them once per chart without values
VARIANTS = [("", ["--include-crds"], ["--include-crds"]),
            (" --skip-tests", ["--include-crds", "--skip-tests"], ["--include-crds", "--skip-tests"]),
            (" --no-hooks", ["--include-crds", "--no-hooks"], ["--include-crds", "--no-hooks"]),
            (" without --include-crds", [], [])]
cases = []
for name in sorted(os.listdir(corpus)):
    chart = os.path.join(corpus, name, "chart")
    if not os.path.isdir(chart):
        continue
    values = sorted(v for v in os.listdir(os.path.join(corpus, name)) if v.startswith("values-"))
    cases.append((name, chart, None, VARIANTS[0]))
    cases += [(name + variant[0], chart, None, variant) for variant in VARIANTS[1:]]
    cases += [(name + "/" + v, chart, os.path.join(corpus, name, v), VARIANTS[0]) for v in values]
starter = os.path.join(tmp, "starter")
subprocess.run([helm, "create", starter], capture_output=True, check=True)
starter_values = [
    None,
    "ingress:\n  enabled: true\n  className: nginx\n  hosts:\n  - host: a.example\n"
    "    paths:\n    - path: /\n      pathType: Prefix\n  tls:\n  - secretName: t\n"
    "    hosts: [a.example]\n",
    "autoscaling:\n  enabled: true\n  targetMemoryUtilizationPercentage: 70\n"
    "serviceAccount:\n  create: false\npodAnnotations: {a: b}\nfullnameOverride: x\n",
    "nameOverride: other\nimage: {tag: v9}\nresources: {limits: {cpu: 100m}}\n"
    "volumes: [{name: v, emptyDir: {}}]\nvolumeMounts: [{name: v, mountPath: /v}]\n"
    "nodeSelector: {disk: ssd}\ntolerations: [{key: k, operator: Exists}]\n",
]
for i, text in enumerate(starter_values):
    vf = None
    if text:
        vf = os.path.join(tmp, "starter-values-%d.yaml" % i)
        open(vf, "w").write(text)
    cases.append(("helm-create/values-%d" % i, starter, vf, VARIANTS[0]))
    if not text:
        cases += [("helm-create/values-%d%s" % (i, v[0]), starter, vf, v) for v in VARIANTS[1:]]
agree, problems = 0, []
for label, chart, values, variant in cases:
    cmd = [helm, "template", "rel", chart, "--namespace", "ns1", "--kube-version", "v1.29.4"]
    cmd += variant[1]
    for v in extra:
        cmd += ["--api-versions", v]
    if values:
        cmd += ["-f", values]
    want = subprocess.run(cmd, capture_output=True, text=True)
    ours = [binary, "render", "--no-hook-mapping", "--release-service", "Helm", "-o", "json",
            "--namespace", "ns1", "--name", "rel", "--kube-version", "1.29.4"]
    ours += variant[2]
    # Helm's default API versions are ours too; only the extra ones are given
    for v in extra:
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
    if w != g:
        n = next((k for k in range(max(len(w), len(g)))
                  if k >= len(w) or k >= len(g) or w[k] != g[k]), 0)
        problems.append("%s: objects differ (helm %d, ours %d); first at #%d:\n  helm: %s\n  ours: %s"
                        % (label, len(w), len(g), n, json.dumps(w[n] if n < len(w) else None, default=str)[:400],
                           json.dumps(g[n] if n < len(g) else None)[:400]))
    else:
        agree += 1
print("CASES %d" % len(cases))
print("AGREE %d" % agree)
for p in problems:
    print(p)
PY
    )
    cases=$(printf '%s\n' "$report" | sed -n 's/^CASES //p')
    agree=$(printf '%s\n' "$report" | sed -n 's/^AGREE //p')
    if [ -n "$agree" ] && [ "$agree" = "$cases" ] && [ "$agree" -gt 20 ]; then
        tap_ok "render --no-hook-mapping equals helm template on all $agree chart/value cases"
    else
        tap_fail "render --no-hook-mapping equals helm template" "$report"
    fi
fi

tap_done
