#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The controller renders Components through the one pipeline (co_render), end to end: the
# daemon runs against the test control plane, a local git repository is served over smart HTTP,
# and the checks use kubectl as a user would.
#   1. a templated kustomization (overlay over a base, Go templates over the values, values
#      from a Secret) becomes Ready with the templated objects;
#   2. a Helm chart Component that depends on (1) becomes Ready after it, chart values merged;
#      beside it a chart with a subchart packaged as charts/<name>-<version>.tgz (made here
#      with tar) and a pre-install hook, which lands in the inventory in the wave that the
#      hook mapping gives it (weight - 101), before the ordinary objects;
#   3. a SOPS-encrypted Secret (age key made here by age-keygen, file encrypted here by
#      tests/oracle/sopsgen) plus ${VAR} substitution from a substituteFrom Secret: the Secret
#      in the cluster holds the decrypted and substituted values;
#   4. the same encrypted source without a decryption Secret stays not Ready, its condition
#      naming the file and the problem.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"
# shellcheck source=../support/e2e.sh
. "$ROOT/tests/support/e2e.sh"

CONTROLLER=${CO_CONTROLLER:-$ROOT/build/test/component-controller}

e2e_need_cluster

work=$(mktemp -d "${TMPDIR:-/tmp}/co-e2e-render-XXXXXX")
ns=co-e2e-render-$$-$RANDOM
ctl_pid=""
git_pid=""
cleanup() {
    [ -n "$ctl_pid" ] && kill "$ctl_pid" 2>/dev/null && wait "$ctl_pid" 2>/dev/null
    [ -n "$git_pid" ] && kill "$git_pid" 2>/dev/null && wait "$git_pid" 2>/dev/null
    k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# The storage version, named explicitly: where the CRD serves the opt-in v1beta1 (another
# suite may have left it so), `component` alone means v1beta1, which goes through the
# conversion webhook — not running in this suite.
COMP=components.v1alpha1.core.cs.sap.com

# wait_for DESC SECONDS COMPONENT CMD...: retry CMD every half second until it succeeds.
wait_for() {
    local desc=$1 secs=$2 comp=$3
    shift 3
    local end=$(($(date +%s) + secs)) out=""
    while [ "$(date +%s)" -lt "$end" ]; do
        if out=$("$@" 2>&1); then
            tap_ok "$desc"
            return 0
        fi
        # a controller that has exited will not make it true: say so now, not at the deadline
        if [ -n "${ctl_pid:-}" ] && ! kill -0 "$ctl_pid" 2>/dev/null; then
            out="$out (the controller has exited)"
            break
        fi
        sleep 0.5
    done
    tap_fail "$desc" "command: $*" "$out" "--- status of $comp:" \
        "$(k -n "$ns" get "$COMP" "$comp" -o jsonpath='{.status.state} {.status.conditions}' 2>&1)" \
        "--- controller log (tail):" "$(tail -n 20 "$work/controller.log")"
    return 1
}

state_is() { # NAME STATE
    [ "$(k -n "$ns" get "$COMP" "$1" -o jsonpath='{.status.state}')" = "$2" ]
}
message_of() { # NAME
    k -n "$ns" get "$COMP" "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}'
}
cm_value() { # NAME KEY
    k -n "$ns" get configmap "$1" -o jsonpath="{.data.$2}"
}
secret_value() { # NAME KEY
    k -n "$ns" get secret "$1" -o jsonpath="{.data.$2}" | base64 -d
}

# --- keys and the encrypted file --------------------------------------------------------------
have_sops=0
if command -v age-keygen >/dev/null 2>&1 && command -v age >/dev/null 2>&1 &&
    sopsgen=$("$ROOT/tests/oracle/build.sh" sopsgen 2>"$work/sopsgen-build.log") &&
    age-keygen -o "$work/age.txt" 2>/dev/null; then
    recipient=$(sed -n 's/^# public key: //p' "$work/age.txt")
    have_sops=1
fi

# --- the source repository --------------------------------------------------------------------
src=$work/src
mkdir -p "$src/app/base" "$src/app/overlay" "$src/chart/templates" "$src/secrets"
cat >"$src/app/base/kustomization.yaml" <<'YAML'
resources:
- settings.yaml
YAML
cat >"$src/app/base/settings.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  greeting: {{ .greeting | quote }}
  replicas: "{{ .replicas }}"
  placement: "{{ namespace }}/{{ name }}"
YAML
cat >"$src/app/overlay/kustomization.yaml" <<'YAML'
resources:
- ../base
namePrefix: {{ .prefix }}-
commonLabels:
  tier: {{ .tier | upper | lower }}
YAML
cat >"$src/app/kustomization.yaml" <<'YAML'
resources:
- overlay
YAML
cat >"$src/chart/Chart.yaml" <<'YAML'
apiVersion: v2
name: web
version: 1.2.3
appVersion: "4.5"
YAML
cat >"$src/chart/values.yaml" <<'YAML'
color: blue
size: small
YAML
cat >"$src/chart/templates/config.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-web
  labels:
    chart: {{ .Chart.Name }}-{{ .Chart.Version }}
data:
  color: {{ .Values.color | quote }}
  size: {{ .Values.size | quote }}
  install: {{ .Release.IsInstall | quote }}
  namespace: {{ .Release.Namespace | quote }}
  kube: {{ .Capabilities.KubeVersion.Major | quote }}
YAML
# A chart whose subchart comes packaged, and a pre-install hook with a weight.
mkdir -p "$src/suite/templates" "$src/suite/charts" "$work/pkg/cache/templates"
cat >"$src/suite/Chart.yaml" <<'YAML'
apiVersion: v2
name: suite
version: 0.1.0
dependencies:
- name: cache
  version: 0.2.0
YAML
cat >"$src/suite/values.yaml" <<'YAML'
cache:
  size: 2
YAML
cat >"$src/suite/templates/main.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-main
data:
  subcharts: "{{ range $k, $_ := .Subcharts }}{{ $k }};{{ end }}"
YAML
cat >"$src/suite/templates/hook.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-pre
  annotations:
    helm.sh/hook: pre-install
    helm.sh/hook-weight: "5"
data:
  stage: before
YAML
cat >"$work/pkg/cache/Chart.yaml" <<'YAML'
apiVersion: v2
name: cache
version: 0.2.0
YAML
cat >"$work/pkg/cache/values.yaml" <<'YAML'
size: 1
YAML
cat >"$work/pkg/cache/templates/cm.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
data:
  size: {{ .Values.size | quote }}
  chart: {{ .Chart.Name }}-{{ .Chart.Version }}
YAML
tar -czf "$src/suite/charts/cache-0.2.0.tgz" -C "$work/pkg" cache

if [ "$have_sops" = 1 ]; then
    printf '%s' "{\"format\":\"yaml\",\"rule\":{\"encrypted_regex\":\"^(data|stringData)$\"},
      \"lastmodified\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",
      \"groups\":[[{\"age\":\"$recipient\"}]],
      \"tree\":{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"db\"},
       \"stringData\":{\"password\":\"s3cr3t-pw\",\"dsn\":\"postgres://\${DB_USER}@\${DB_HOST}/app\"}}}" \
        >"$work/sopsgen.json"
    if ! "$sopsgen" <"$work/sopsgen.json" >"$src/secrets/db.yaml" 2>"$work/sopsgen.err"; then
        tap_fail "test_render_controller__encrypted_source_generated" "$(cat "$work/sopsgen.err")"
        have_sops=0
    fi
fi
(
    cd "$src" && git init -q -b main && git add -A &&
        git -c user.name=test -c user.email=test@localhost commit -qm "render sources"
) || {
    tap_fail "test_render_controller__source_repository" "cannot create the git repository"
    tap_done
    exit
}
mkdir -p "$work/git"
git clone -q --bare "$src" "$work/git/src.git"
python3 "$ROOT/tests/support/git_http_server.py" --root "$work/git" \
    --port-file "$work/git-port" >"$work/git-http.log" 2>&1 &
git_pid=$!
for _ in $(seq 1 60); do
    [ -s "$work/git-port" ] && break
    sleep 0.5
done
repo="http://127.0.0.1:$(cat "$work/git-port")/src.git"

# --- cluster set-up and the controller --------------------------------------------------------
k get crd components.core.cs.sap.com >/dev/null 2>&1 ||
    k create -f "$ROOT/crds/core.cs.sap.com_components.yaml" >/dev/null
k wait --for condition=established --timeout=60s crd/components.core.cs.sap.com >/dev/null
k create namespace "$ns" >/dev/null

probe_port=$(free_port)
metrics_port=$(free_port)
"$CONTROLLER" --kubeconfig "$CO_TEST_KUBECONFIG" --namespace "$ns" \
    --metrics-bind-address "127.0.0.1:$metrics_port" \
    --health-probe-bind-address "127.0.0.1:$probe_port" \
    --source-cache-dir "$work/cache" --log-level debug >"$work/controller.log" 2>&1 &
ctl_pid=$!
wait_for "test_render_controller__controller_ready" 120 - \
    curl -fsS "http://127.0.0.1:$probe_port/readyz"

component() { # NAME PATH EXTRA-SPEC-YAML
    cat <<YAML
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: $1
  namespace: $ns
spec:
  sourceRef:
    git:
      url: $repo
      ref:
        branch: main
  path: $2
  retryInterval: 3s
$3
YAML
}

# --- (1) templated kustomization and (2) a Helm chart that depends on it ----------------------
k -n "$ns" create secret generic app-values \
    --from-literal=values.yaml=$'replicas: 3\ntier: Backend\n' >/dev/null
{
    component web chart "  values:
    color: green
  dependencies:
  - name: app"
    echo "---"
    component app app "  valuesFrom:
  - name: app-values
  values:
    greeting: hello from values
    prefix: demo"
    echo "---"
    component suite suite ""
} >"$work/app.yaml"
tap_check "test_render_controller__kubectl_applies_the_components" k apply -f "$work/app.yaml"

wait_for "test_render_controller__kustomization_component_ready" 240 app state_is app Ready
tap_eq "test_render_controller__template_value_from_spec_values" "hello from values" \
    "$(cm_value demo-settings greeting)"
tap_eq "test_render_controller__template_value_from_values_secret" "3" \
    "$(cm_value demo-settings replicas)"
tap_eq "test_render_controller__placement_functions" "$ns/app" "$(cm_value demo-settings placement)"
tap_eq "test_render_controller__overlay_labels_templated" "backend" \
    "$(k -n "$ns" get configmap demo-settings -o jsonpath='{.metadata.labels.tier}')"

wait_for "test_render_controller__helm_component_ready_after_dependency" 240 web state_is web Ready
app_at=$(k -n "$ns" get "$COMP" app -o jsonpath='{.status.lastAppliedAt}')
web_at=$(k -n "$ns" get "$COMP" web -o jsonpath='{.status.lastAppliedAt}')
if [ -n "$app_at" ] && [ -n "$web_at" ] && ! [[ "$web_at" < "$app_at" ]]; then
    tap_ok "test_render_controller__helm_applied_not_before_its_dependency"
else
    tap_fail "test_render_controller__helm_applied_not_before_its_dependency" \
        "app applied at '$app_at', web at '$web_at'"
fi
tap_eq "test_render_controller__chart_value_overridden" "green" "$(cm_value web-web color)"
tap_eq "test_render_controller__chart_default_value" "small" "$(cm_value web-web size)"
tap_eq "test_render_controller__release_is_install" "true" "$(cm_value web-web install)"
tap_eq "test_render_controller__release_namespace" "$ns" "$(cm_value web-web namespace)"
tap_eq "test_render_controller__kube_version_from_discovery" "1" "$(cm_value web-web kube)"
tap_eq "test_render_controller__chart_metadata" "web-1.2.3" \
    "$(k -n "$ns" get configmap web-web -o jsonpath='{.metadata.labels.chart}')"

# The packaged subchart and the hook. Ordinary objects stay in wave 0; a pre-install hook of
# weight 5 goes to 5 - 101 = -96 (docs/behaviour.md, "Helm hooks"), is reconciled once and, with the
# default delete policy before-hook-creation, recreated rather than updated.
wait_for "test_render_controller__packaged_subchart_component_ready" 240 suite \
    state_is suite Ready
tap_eq "test_render_controller__packaged_subchart_rendered" "2/cache-0.2.0" \
    "$(cm_value suite-cache size)/$(cm_value suite-cache chart)"
tap_eq "test_render_controller__packaged_subchart_listed" "cache;" \
    "$(cm_value suite-main subcharts)"
tap_eq "test_render_controller__pre_install_hook_created" "before" "$(cm_value suite-pre stage)"
inventory_item() { # NAME FIELD: FIELD of the inventory entry NAME of the Component suite
    k -n "$ns" get "$COMP" suite -o jsonpath="{.status.inventory[?(@.name==\"$1\")].$2}"
}
tap_eq "test_render_controller__pre_install_hook_apply_order" "-96" \
    "$(inventory_item suite-pre applyOrder)"
tap_eq "test_render_controller__pre_install_hook_policies" "Once/Recreate/Ready" \
    "$(inventory_item suite-pre reconcilePolicy)/$(inventory_item suite-pre updatePolicy)/$(
        inventory_item suite-pre phase)"
for obj in main cache; do
    tap_eq "test_render_controller__ordinary_${obj}_object_apply_order" "0/Ready" \
        "$(inventory_item "suite-$obj" applyOrder)/$(inventory_item "suite-$obj" phase)"
done

# --- (3) SOPS decryption and substitution, (4) without keys -----------------------------------
if [ "$have_sops" = 1 ]; then
    k -n "$ns" create secret generic sops-age --from-file=identity.agekey="$work/age.txt" \
        >/dev/null
    k -n "$ns" create secret generic db-vars --from-literal=DB_USER=appuser \
        --from-literal=DB_HOST=db.example.internal >/dev/null
    {
        component secrets secrets "  decryption:
    provider: sops
    secretRef:
      name: sops-age
  postBuild:
    substituteFrom:
    - name: db-vars
    substitute:
      DB_HOST: db.override.internal"
        echo "---"
        component nokeys secrets ""
    } >"$work/secrets.yaml"
    tap_check "test_render_controller__kubectl_applies_the_sops_components" \
        k apply -f "$work/secrets.yaml"
    wait_for "test_render_controller__sops_component_ready" 240 secrets state_is secrets Ready
    tap_eq "test_render_controller__secret_decrypted" "s3cr3t-pw" "$(secret_value db password)"
    tap_eq "test_render_controller__secret_substituted" \
        "postgres://appuser@db.override.internal/app" "$(secret_value db dsn)"
    if grep -q "s3cr3t-pw" "$work/controller.log"; then
        tap_fail "test_render_controller__decrypted_value_not_logged" "found in the controller log"
    else
        tap_ok "test_render_controller__decrypted_value_not_logged"
    fi

    wait_for "test_render_controller__without_keys_component_errors" 240 nokeys \
        state_is nokeys Error
    msg=$(message_of nokeys)
    case "$msg" in
    *db.yaml*encrypted*) tap_ok "test_render_controller__without_keys_message_names_file" ;;
    *) tap_fail "test_render_controller__without_keys_message_names_file" "message: $msg" ;;
    esac
    ready=$(k -n "$ns" get "$COMP" nokeys -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')
    tap_eq "test_render_controller__without_keys_not_ready" "False" "$ready"
else
    for t in sops_component_ready secret_decrypted secret_substituted without_keys_component_errors; do
        tap_skip "test_render_controller__$t" "age, age-keygen or go (sopsgen) missing"
    done
fi

# --- deletion ---------------------------------------------------------------------------------
tap_check "test_render_controller__kubectl_deletes_the_components" \
    k -n "$ns" delete "$COMP" --all --timeout=180s
if k -n "$ns" get configmap demo-settings >/dev/null 2>&1 ||
    k -n "$ns" get configmap web-web >/dev/null 2>&1 ||
    k -n "$ns" get configmap suite-pre >/dev/null 2>&1 ||
    k -n "$ns" get configmap suite-cache >/dev/null 2>&1; then
    tap_fail "test_render_controller__deletion_removes_rendered_objects" "objects remain"
else
    tap_ok "test_render_controller__deletion_removes_rendered_objects"
fi

kill -TERM "$ctl_pid" 2>/dev/null
if wait "$ctl_pid"; then
    tap_ok "test_render_controller__sigterm_stops_cleanly"
else
    tap_fail "test_render_controller__sigterm_stops_cleanly" "$(tail -n 20 "$work/controller.log")"
fi
ctl_pid=""
tap_done
