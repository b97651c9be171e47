#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# deploy/ against the real kube-apiserver: every object of the kustomize base (the Helm chart
# renders the same ones, tests/unit/test_deploy_chart.c) passes a server-side dry-run, and the
# base installs in the two steps README.md gives (CRDs, then the rest, ComponentPolicy and
# NetworkPolicies included) without the webhook running; the RBAC objects are applied and
# checked by impersonating both service accounts, for what the daemons need and a sample of
# what they must not do, and the default service account component-default has no right at
# all; then both daemons run with nothing but those rights (a kubeconfig impersonating their
# service account): the controller deploys a Component as the Component's service account,
# and one naming no account as component-default, forbidden until a RoleBinding grants it
# rights; the webhook creates its certificate Secret, takes its Lease, injects the CA bundle
# into its webhook configurations and the CRD, and refuses through the API server what the
# shipped ComponentPolicy refuses.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"
# shellcheck source=../support/e2e.sh
. "$ROOT/tests/support/e2e.sh"

WEBHOOK=${CO_WEBHOOK_BIN:-$ROOT/build/test/component-webhook}
CONTROLLER=${CO_CONTROLLER:-$ROOT/build/test/component-controller}
OPNS=component-operator
WSA=system:serviceaccount:$OPNS:component-webhook
CSA=system:serviceaccount:$OPNS:component-controller
POLICY=restrict-cross-namespace-references

e2e_need_cluster

work=$(mktemp -d "${TMPDIR:-/tmp}/co-e2e-deploy-XXXXXX")
apps=co-deploy-apps-$$-$RANDOM
pids=()
crd_existed=0
ns_existed=0

cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill -TERM "$p" 2>/dev/null
    done
    for p in "${pids[@]}"; do
        wait "$p" 2>/dev/null
    done
    k delete validatingwebhookconfiguration component-webhook --ignore-not-found >/dev/null 2>&1
    k delete mutatingwebhookconfiguration component-webhook --ignore-not-found >/dev/null 2>&1
    # by the storage version: the preferred one (v1beta1) would need the conversion webhook,
    # which is gone by now, and a Component left with its finalizer keeps the CRD terminating
    for c in $(k -n "$apps" get components.v1alpha1.core.cs.sap.com \
        -o 'jsonpath={.items[*].metadata.name}' 2>/dev/null); do
        k -n "$apps" patch components.v1alpha1.core.cs.sap.com "$c" --type=merge \
            -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
    done
    if [ -f "$work/installed.json" ]; then
        k delete -f "$work/installed.json" --ignore-not-found >/dev/null 2>&1
    fi
    if [ -f "$work/rbac.yaml" ]; then
        k delete -f "$work/rbac.yaml" --ignore-not-found >/dev/null 2>&1
    fi
    k delete componentpolicies.core.cs.sap.com "$POLICY" --ignore-not-found >/dev/null 2>&1
    if [ "$crd_existed" = 1 ]; then
        k replace -f "$ROOT/crds/core.cs.sap.com_components.yaml" >/dev/null 2>&1
    else
        k delete -f "$ROOT/crds/" --ignore-not-found --timeout=60s >/dev/null 2>&1
    fi
    k delete clusterrolebinding,clusterrole "$apps-deployer" --ignore-not-found >/dev/null 2>&1
    k delete namespace "$apps" --wait=false >/dev/null 2>&1
    [ "$ns_existed" = 0 ] && k delete namespace "$OPNS" --wait=false >/dev/null 2>&1
    if [ "$TAP_FAILED" != 0 ]; then
        for f in "$work"/*.log; do
            [ -e "$f" ] || continue
            echo "# --- $(basename "$f") (last 30 lines)"
            tail -n 30 "$f" | sed 's/^/# /'
        done
    fi
    rm -rf "$work"
}
trap cleanup EXIT

wait_for() { # SECONDS CMD...
    local secs=$1
    shift
    local end=$(($(date +%s) + secs))
    while [ "$(date +%s)" -lt "$end" ]; do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.5
    done
    return 1
}

# --- render and dry-run -------------------------------------------------------------------------

tap_check "test_deploy__kustomize_base_renders" \
    sh -c "\"$KUBECTL\" kustomize \"$ROOT/deploy/base\" >\"$work/base.yaml\""
k get namespace "$OPNS" >/dev/null 2>&1 && ns_existed=1
k get crd components.core.cs.sap.com >/dev/null 2>&1 && crd_existed=1
# Namespaced objects are dry-run into a namespace that exists.
k create namespace "$OPNS" >/dev/null 2>&1
# policy/v1 (PodDisruptionBudget) is served from Kubernetes 1.21 on, the version deploy/ is
# written for. On an older test server the budgets are dry-run as policy/v1beta1, whose spec
# has the same fields, so their content is still checked by the server instead of skipped.
pdb_version=policy/v1
if ! k api-versions | grep -x policy/v1 >/dev/null; then
    pdb_version=policy/v1beta1
fi
# dryrun.json: what a dry-run can check before the CRDs exist (the ComponentPolicy is checked
# by the install below); install.json: the whole base with the budgets in $pdb_version;
# installed.json: what the install leaves that would stand in the way of the daemons below
# (webhook configurations pointing at a Service without Pods, Deployments, Services).
python3 - "$work/base.yaml" "$work" "$pdb_version" <<'PY'
import json, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
rbac = [d for d in docs if d["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")]
pdbs = [dict(d, apiVersion=sys.argv[3]) for d in docs if d["kind"] == "PodDisruptionBudget"]
dry = [d for d in docs if d["kind"] not in ("PodDisruptionBudget", "ComponentPolicy")]
install = [d if d["kind"] != "PodDisruptionBudget" else dict(d, apiVersion=sys.argv[3]) for d in docs]
installed = [d for d in install if d["kind"] in ("Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")]
def dump(name, items):
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(sys.argv[2] + "/" + name, "w"))
dump("dryrun.json", dry)
dump("pdb.json", pdbs)
dump("install.json", install)
dump("installed.json", installed)
yaml.safe_dump_all(rbac, open(sys.argv[2] + "/rbac.yaml", "w"))
print(len(docs), file=open(sys.argv[2] + "/count", "w"))
PY
npdb=$(python3 -c "import json; print(len(json.load(open('$work/pdb.json'))['items']))")
if [ "$npdb" -lt 1 ]; then
    tap_fail "test_deploy__pdb_dry_run" "the base renders no PodDisruptionBudget"
elif out=$(k apply --server-side --dry-run=server --field-manager=co-deploy-test -f "$work/pdb.json" 2>&1); then
    tap_eq "test_deploy__pdb_dry_run" "$npdb" "$(grep -c 'serverside-applied (server dry run)' <<<"$out")"
else
    tap_fail "test_deploy__pdb_dry_run" "as $pdb_version: $out"
fi
# --force-conflicts: suites sharing this control plane apply the CRDs under their own field
# managers (some with the v1beta1 option); a dry run takes nothing from them.
if out=$(k apply --server-side --force-conflicts --dry-run=server --field-manager=co-deploy-test -f "$work/dryrun.json" 2>&1); then
    n=$(grep -c 'serverside-applied (server dry run)' <<<"$out")
    want=$(python3 -c "import json; print(len(json.load(open('$work/dryrun.json'))['items']))")
    tap_eq "test_deploy__server_side_dry_run_accepts_every_object" "$want" "$n"
else
    tap_fail "test_deploy__server_side_dry_run_accepts_every_object" "$out"
fi
# --- install in two steps, as README.md says ----------------------------------------------------

# The ComponentPolicy's kind is served only once its CRD is established: on a fresh cluster
# one apply of everything fails for it. The ComponentPolicy CRD is taken away first if no
# policy exists, so that the steps are checked from that state.
if k get crd componentpolicies.core.cs.sap.com >/dev/null 2>&1; then
    if [ -z "$(k get componentpolicies.core.cs.sap.com -o name 2>/dev/null)" ]; then
        k delete crd componentpolicies.core.cs.sap.com --timeout=60s >/dev/null 2>&1
    else
        echo "# ComponentPolicies exist: the install is checked with the CRD in place"
    fi
fi
tap_check "test_deploy__install_step1_crds" \
    k apply --server-side --field-manager=co-deploy-test -k "$ROOT/deploy/crds"
tap_check "test_deploy__install_crds_established" \
    k wait --for=condition=Established --timeout=60s crd/components.core.cs.sap.com \
    crd/componentpolicies.core.cs.sap.com crd/blueprints.core.cs.sap.com \
    crd/blueprintversions.core.cs.sap.com
# the default install serves v1alpha1 only: nothing reads Components through the webhook
tap_eq "test_deploy__install_crd_serves_v1alpha1_without_conversion" "v1alpha1 None" \
    "$(k get crd components.core.cs.sap.com -o json |
        jq -r '([.spec.versions[] | select(.served) | .name] | join(" ")) + " " + .spec.conversion.strategy')"
# (the base itself, with the budgets in the version the test server serves)
if out=$(k apply --server-side --field-manager=co-deploy-test -f "$work/install.json" 2>&1); then
    tap_ok "test_deploy__install_step2_base_without_the_webhook_running"
else
    tap_fail "test_deploy__install_step2_base_without_the_webhook_running" "$out"
fi
tap_eq "test_deploy__install_created_the_cross_namespace_policy" "Deny false" \
    "$(k get componentpolicies.core.cs.sap.com "$POLICY" -o json 2>/dev/null |
        jq -r '.spec.rules.crossNamespaceReferences | "\(.action) \(.allowSources)"')"
tap_eq "test_deploy__install_created_network_policies" "2" \
    "$(k -n "$OPNS" get networkpolicies.networking.k8s.io -o name 2>/dev/null | wc -l)"
# Nothing runs here: the webhook configurations would refuse every Component from now on.
k delete -f "$work/installed.json" --ignore-not-found --wait=false >/dev/null 2>&1

# Helm's output (values that differ from the base) passes too, its ComponentPolicy included now
# that the CRDs are there.
helm=${CO_HELM:-$CACHE/bin/helm}
if [ -x "$helm" ]; then
    if out=$("$helm" template component-operator "$ROOT/deploy/chart" -n "$OPNS" \
        --set webhook.failurePolicy=Ignore --set webhook.timeoutSeconds=3 \
        --set controller.clusterAdmin=true --set controller.defaultServiceAccount=deployer \
        --set webhook.replicas=1 2>&1 >"$work/helm.yaml") &&
        out=$(k apply --server-side --dry-run=server --field-manager=co-deploy-test \
            --force-conflicts -f "$work/helm.yaml" 2>&1); then
        tap_ok "test_deploy__helm_variant_dry_run"
    else
        tap_fail "test_deploy__helm_variant_dry_run" "$out"
    fi
else
    tap_skip "test_deploy__helm_variant_dry_run" "no helm at $helm (run tests/env/deps.sh)"
fi

# --- RBAC by impersonation ------------------------------------------------------------------------

tap_check "test_deploy__rbac_applies" k apply -f "$work/rbac.yaml"

# can AS VERB RESOURCE[.GROUP][/NAME] [-n NS | -A] [--subresource=SUB]: "yes" or "no", as
# `kubectl auth can-i --as=AS` answers, asked through a SubjectAccessReview so that resources
# whose CRDs are not installed (Flux) can be asked about too.
can() {
    local as=$1 verb=$2 res=$3 name="" ns="" sub="" group=""
    shift 3
    if [[ $res == */* ]]; then
        name=${res#*/}
        res=${res%%/*}
    fi
    if [[ $res == *.* ]]; then
        group=${res#*.}
        res=${res%%.*}
    fi
    while [ $# -gt 0 ]; do
        case $1 in
        -n) ns=$2; shift ;;
        --subresource=*) sub=${1#--subresource=} ;;
        esac
        shift
    done
    local sar
    sar=$(printf '{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"%s","resourceAttributes":{"verb":"%s","group":"%s","resource":"%s","subresource":"%s","name":"%s","namespace":"%s"}}}' \
        "$as" "$verb" "$group" "$res" "$sub" "$name" "$ns")
    if [ "$(k create -o 'jsonpath={.status.allowed}' -f - <<<"$sar" 2>/dev/null)" = true ]; then
        echo yes
    else
        echo no
    fi
}
# allowed AS DESC VERB RESOURCE [flags]; denied likewise
allowed() {
    local as=$1 desc=$2
    shift 2
    tap_eq "test_deploy__rbac_${desc}" "yes" "$(can "$as" "$@")"
}
denied() {
    local as=$1 desc=$2
    shift 2
    tap_eq "test_deploy__rbac_${desc}" "no" "$(can "$as" "$@")"
}
comp=components.core.cs.sap.com
# webhook: what it does
allowed "$WSA" webhook_watches_components watch "$comp" -A
allowed "$WSA" webhook_lists_policies list componentpolicies.core.cs.sap.com
allowed "$WSA" webhook_watches_namespaces watch namespaces
allowed "$WSA" webhook_creates_secret create secrets -n "$OPNS"
allowed "$WSA" webhook_updates_its_secret update secrets/component-webhook-certs -n "$OPNS"
allowed "$WSA" webhook_watches_its_secret watch secrets/component-webhook-certs -n "$OPNS"
allowed "$WSA" webhook_creates_lease create leases.coordination.k8s.io -n "$OPNS"
allowed "$WSA" webhook_updates_its_lease update leases.coordination.k8s.io/component-webhook-certificates -n "$OPNS"
allowed "$WSA" webhook_patches_its_validating patch validatingwebhookconfigurations.admissionregistration.k8s.io/component-webhook
allowed "$WSA" webhook_patches_its_mutating patch mutatingwebhookconfigurations.admissionregistration.k8s.io/component-webhook
allowed "$WSA" webhook_patches_component_crd patch customresourcedefinitions.apiextensions.k8s.io/components.core.cs.sap.com
# webhook: what it must not do
denied "$WSA" webhook_reads_no_other_secret get secrets/other -n "$OPNS"
denied "$WSA" webhook_lists_no_secrets list secrets -n "$OPNS"
denied "$WSA" webhook_reads_no_secrets_elsewhere get secrets/component-webhook-certs -n default
denied "$WSA" webhook_deletes_no_secret delete secrets/component-webhook-certs -n "$OPNS"
denied "$WSA" webhook_patches_no_other_webhook patch validatingwebhookconfigurations.admissionregistration.k8s.io/other
denied "$WSA" webhook_patches_no_other_crd patch customresourcedefinitions.apiextensions.k8s.io/other.example.com
denied "$WSA" webhook_writes_no_components update "$comp" -n default
denied "$WSA" webhook_creates_no_deployments create deployments.apps -n default
denied "$WSA" webhook_impersonates_nobody impersonate serviceaccounts
# controller: what it does
allowed "$CSA" controller_watches_components watch "$comp" -A
allowed "$CSA" controller_patches_components patch "$comp" -n default
allowed "$CSA" controller_writes_status update "$comp" --subresource=status -n default
allowed "$CSA" controller_sets_finalizers update "$comp" --subresource=finalizers -n default
allowed "$CSA" controller_watches_policies watch componentpolicies.core.cs.sap.com
allowed "$CSA" controller_watches_blueprints watch blueprints.core.cs.sap.com -A
allowed "$CSA" controller_patches_blueprints patch blueprints.core.cs.sap.com -n default
allowed "$CSA" controller_sets_blueprint_finalizers update blueprints.core.cs.sap.com --subresource=finalizers -n default
allowed "$CSA" controller_creates_blueprintversions create blueprintversions.core.cs.sap.com -n default
allowed "$CSA" controller_deletes_blueprintversions delete blueprintversions.core.cs.sap.com -n default
allowed "$CSA" controller_watches_blueprintversions watch blueprintversions.core.cs.sap.com -A
allowed "$CSA" controller_watches_flux_sources watch gitrepositories.source.toolkit.fluxcd.io -A
allowed "$CSA" controller_reads_secrets get secrets -n default
allowed "$CSA" controller_watches_secrets watch secrets -A
allowed "$CSA" controller_reads_namespaces get namespaces/kube-system
allowed "$CSA" controller_records_events create events -n default
allowed "$CSA" controller_impersonates_service_accounts impersonate serviceaccounts -n default
allowed "$CSA" controller_creates_lease create leases.coordination.k8s.io -n "$OPNS"
allowed "$CSA" controller_updates_its_lease update leases.coordination.k8s.io/component-operator.cs.sap.com -n "$OPNS"
# controller: what it must not do (the objects of a Component are applied as its account)
denied "$CSA" controller_creates_no_deployments create deployments.apps -n default
denied "$CSA" controller_creates_no_configmaps create configmaps -n default
denied "$CSA" controller_writes_no_secrets create secrets -n default
denied "$CSA" controller_deletes_no_namespaces delete namespaces
denied "$CSA" controller_binds_no_roles create clusterrolebindings.rbac.authorization.k8s.io
denied "$CSA" controller_impersonates_no_users impersonate users
denied "$CSA" controller_updates_no_other_lease update leases.coordination.k8s.io/other -n "$OPNS"
denied "$CSA" controller_deletes_no_components delete "$comp" -n default
denied "$CSA" controller_creates_no_blueprints create blueprints.core.cs.sap.com -n default
denied "$CSA" controller_deletes_no_blueprints delete blueprints.core.cs.sap.com -n default
denied "$CSA" controller_patches_no_webhooks patch validatingwebhookconfigurations.admissionregistration.k8s.io/component-webhook
# the default service account of Components that name none: deploy/ grants it nothing
DSA=$(python3 - "$work/base.yaml" <<'PY'
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "Deployment" and d["metadata"]["name"] == "component-controller":
        for a in d["spec"]["template"]["spec"]["containers"][0]["args"]:
            if a.startswith("--default-service-account="):
                print(a.split("=", 1)[1])
PY
)
tap_eq "test_deploy__base_sets_a_default_service_account" "component-default" "$DSA"
DSA=${DSA:-component-default}
denied "system:serviceaccount:default:$DSA" default_account_creates_no_configmaps create configmaps -n default
denied "system:serviceaccount:default:$DSA" default_account_creates_no_deployments create deployments.apps -n default
denied "system:serviceaccount:default:$DSA" default_account_reads_no_secrets get secrets -n default
denied "system:serviceaccount:default:$DSA" default_account_reads_no_namespace get namespaces/default
denied "system:serviceaccount:$OPNS:$DSA" default_account_has_nothing_in_the_operator_namespace create configmaps -n "$OPNS"

# --- the daemons with nothing but these rights ----------------------------------------------------

# as_kubeconfig USER FILE: the test kubeconfig, impersonating USER.
as_kubeconfig() {
    python3 - "$CO_TEST_KUBECONFIG" "$1" "$2" <<'PY'
import sys, yaml
cfg = yaml.safe_load(open(sys.argv[1]))
for u in cfg["users"]:
    u["user"]["as"] = sys.argv[2]
yaml.safe_dump(cfg, open(sys.argv[3], "w"))
PY
}
as_kubeconfig "$CSA" "$work/controller.kubeconfig"
as_kubeconfig "$WSA" "$work/webhook.kubeconfig"
tap_eq "test_deploy__impersonating_kubeconfig_is_denied_beyond_rbac" "no" \
    "$("$KUBECTL" --kubeconfig "$work/controller.kubeconfig" auth can-i create deployments -n default 2>/dev/null)"

# the Component CRD with the opt-in v1beta1 (crds/v1beta1/, as deploy/v1beta1 renders it): the
# webhook then injects its CA bundle into the CRD too, with its own rights
install_crds() {
    local f
    for f in "$ROOT"/crds/core.cs.sap.com_componentpolicies.yaml \
        "$ROOT"/crds/v1beta1/core.cs.sap.com_components.yaml; do
        k replace -f "$f" >/dev/null 2>&1 || k create -f "$f" >/dev/null || return 1
    done
}
tap_check "test_deploy__crds_install" install_crds
k wait --for=condition=Established --timeout=60s crd/components.core.cs.sap.com >/dev/null 2>&1

# The controller: a Component applied as its own service account "deployer", which may edit
# the Component's namespace; the artifact comes from a local HTTP server.
k create namespace "$apps" >/dev/null
k -n "$apps" create serviceaccount deployer >/dev/null
# (no kube-controller-manager here: the aggregated role "edit" is empty, so a Role of its own)
k -n "$apps" create role deployer --verb='*' --resource=configmaps >/dev/null
k -n "$apps" create rolebinding deployer --role=deployer --serviceaccount="$apps:deployer" \
    >/dev/null
# The apply engine reads the target namespace as the impersonated account.
k create clusterrole "$apps-deployer" --verb=get --resource=namespaces >/dev/null
k create clusterrolebinding "$apps-deployer" --clusterrole="$apps-deployer" \
    --serviceaccount="$apps:deployer" >/dev/null
mkdir -p "$work/src/app" "$work/www"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deployed-as-deployer\ndata:\n  a: b\n' \
    >"$work/src/app/cm.yaml"
tar -C "$work/src" -czf "$work/www/app.tar.gz" app
mkdir -p "$work/src2/app"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deployed-as-default\ndata:\n  a: b\n' \
    >"$work/src2/app/cm.yaml"
tar -C "$work/src2" -czf "$work/www/app2.tar.gz" app
cat >"$work/server.py" <<'PY'
import hashlib, http.server, os, sys
root = sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def _send(self, body):
        path = os.path.join(root, os.path.basename(self.path))
        if not os.path.isfile(path):
            self.send_response(404); self.end_headers(); return
        data = open(path, "rb").read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", "sha256:" + hashlib.sha256(data).hexdigest())
        self.end_headers()
        if body:
            self.wfile.write(data)
    def do_HEAD(self): self._send(False)
    def do_GET(self): self._send(True)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
http_port=$(free_port)
python3 "$work/server.py" "$http_port" "$work/www" &
pids+=("$!")
probe=$(free_port)
"$CONTROLLER" --kubeconfig "$work/controller.kubeconfig" --leader-elect \
    --leader-election-namespace "$OPNS" --namespace "$apps" --metrics-bind-address 0 \
    --health-probe-bind-address "127.0.0.1:$probe" --source-cache-dir "$work/cache" \
    --default-service-account "$DSA" --log-level debug >"$work/controller.log" 2>&1 &
pids+=("$!")
tap_check "test_deploy__controller_ready_with_its_rbac" \
    wait_for 120 curl -sf "http://127.0.0.1:$probe/readyz"
cat >"$work/component.yaml" <<YAML
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: as-deployer
  namespace: $apps
spec:
  serviceAccountName: deployer
  sourceRef:
    httpRepository:
      url: http://127.0.0.1:$http_port/app.tar.gz
  path: app
YAML
tap_check "test_deploy__component_created" k apply -f "$work/component.yaml"
is_ready() {
    [ "$(k -n "$apps" get components.v1alpha1.core.cs.sap.com as-deployer -o jsonpath='{.status.state}')" = Ready ]
}
tap_check "test_deploy__controller_deploys_as_the_components_account" wait_for 180 is_ready
tap_check "test_deploy__object_exists" k -n "$apps" get configmap deployed-as-deployer
tap_eq "test_deploy__controller_holds_its_lease" "1" \
    "$(k -n "$OPNS" get lease component-operator.cs.sap.com -o name 2>/dev/null | wc -l)"
if grep -qiE 'forbidden' "$work/controller.log"; then
    tap_fail "test_deploy__controller_never_forbidden" "$(grep -iE 'forbidden' "$work/controller.log" | head -5)"
else
    tap_ok "test_deploy__controller_never_forbidden"
fi

# A Component naming no account is applied as the default one, which has no rights: forbidden,
# naming that account, until a RoleBinding in its namespace grants some (README.md).
cat >"$work/no-account.yaml" <<YAML
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: no-account
  namespace: $apps
spec:
  sourceRef:
    httpRepository:
      url: http://127.0.0.1:$http_port/app2.tar.gz
  path: app
  retryInterval: 2s
YAML
tap_check "test_deploy__component_without_account_created" k apply -f "$work/no-account.yaml"
forbidden_as_default() {
    local st
    st=$(k -n "$apps" get components.v1alpha1.core.cs.sap.com no-account -o json)
    [ "$(jq -r .status.state <<<"$st")" = Error ] &&
        grep -q "forbidden" <<<"$st" &&
        grep -q "system:serviceaccount:$apps:$DSA" <<<"$st"
}
if wait_for 120 forbidden_as_default; then
    tap_ok "test_deploy__component_without_account_is_forbidden_as_the_default_account"
else
    tap_fail "test_deploy__component_without_account_is_forbidden_as_the_default_account" \
        "$(k -n "$apps" get components.v1alpha1.core.cs.sap.com no-account -o jsonpath='{.status}' 2>&1)"
fi
tap_eq "test_deploy__nothing_deployed_as_the_default_account" "0" \
    "$(k -n "$apps" get configmap deployed-as-default -o name 2>/dev/null | wc -l)"
k -n "$apps" create rolebinding "$DSA" --role=deployer --serviceaccount="$apps:$DSA" >/dev/null
k -n "$apps" create rolebinding "$DSA-namespace" --clusterrole="$apps-deployer" \
    --serviceaccount="$apps:$DSA" >/dev/null
no_account_ready() {
    [ "$(k -n "$apps" get components.v1alpha1.core.cs.sap.com no-account -o jsonpath='{.status.state}')" = Ready ]
}
tap_check "test_deploy__default_account_deploys_once_bound" wait_for 180 no_account_ready
tap_check "test_deploy__object_exists_as_the_default_account" \
    k -n "$apps" get configmap deployed-as-default

# The webhook: configurations pointing at a local port (no caBundle), the Lease, the Secret.
port=$(free_port)
wprobe=$(free_port)
base="https://127.0.0.1:$port"
k patch crd components.core.cs.sap.com --type=json \
    -p "[{\"op\":\"replace\",\"path\":\"/spec/conversion/webhook/clientConfig\",\"value\":{\"url\":\"$base/convert\"}}]" \
    >/dev/null
python3 - "$work/base.yaml" "$base" >"$work/webhooks.json" <<'PY'
import json, sys, yaml
base = sys.argv[2]
items = []
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"].endswith("WebhookConfiguration"):
        for w in d["webhooks"]:
            w["clientConfig"] = {"url": base + w["clientConfig"]["service"]["path"]}
        items.append(d)
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
PY
tap_check "test_deploy__webhook_configurations_register" k apply -f "$work/webhooks.json"
"$WEBHOOK" --kubeconfig "$work/webhook.kubeconfig" --namespace "$OPNS" --leader-elect \
    --cert-extra-name 127.0.0.1 --webhook-bind-address "127.0.0.1:$port" \
    --health-probe-bind-address "127.0.0.1:$wprobe" --metrics-bind-address 0 \
    --shutdown-timeout-seconds 5 --log-level debug >"$work/webhook.log" 2>&1 &
pids+=("$!")
tap_check "test_deploy__webhook_ready_with_its_rbac" \
    wait_for 120 curl -sf "http://127.0.0.1:$wprobe/readyz"
tap_check "test_deploy__webhook_created_its_secret" \
    k -n "$OPNS" get secret component-webhook-certs
tap_check "test_deploy__webhook_holds_its_lease" \
    k -n "$OPNS" get lease component-webhook-certificates
bundle_in() { # RESOURCE JSONPATH
    [ -n "$(k get "$1" -o "jsonpath=$2")" ]
}
for what in validatingwebhookconfiguration mutatingwebhookconfiguration; do
    tap_check "test_deploy__ca_bundle_injected_$what" \
        wait_for 60 bundle_in "$what/component-webhook" '{.webhooks[0].clientConfig.caBundle}'
done
tap_check "test_deploy__ca_bundle_injected_crd" wait_for 60 bundle_in \
    crd/components.core.cs.sap.com '{.spec.conversion.webhook.clientConfig.caBundle}'
# Through the webhook: admission (v1beta1 also through conversion) answers.
out=$(printf 'apiVersion: core.cs.sap.com/v1beta1\nkind: Component\nmetadata:\n  name: selfdep\n  namespace: %s\nspec:\n  source:\n    http:\n      url: http://127.0.0.1:1/x.tar.gz\n  dependencies:\n  - name: selfdep\n' "$apps" | k apply -f - 2>&1)
if grep -q 'denied the request' <<<"$out"; then
    tap_ok "test_deploy__webhook_admits_through_the_api_server"
else
    tap_fail "test_deploy__webhook_admits_through_the_api_server" "$out"
fi
# The shipped ComponentPolicy, through the API server and the webhook with its own rights.
out=$(printf 'apiVersion: core.cs.sap.com/v1alpha1\nkind: Component\nmetadata:\n  name: reaching-out\n  namespace: %s\nspec:\n  sourceRef:\n    httpRepository:\n      url: http://127.0.0.1:1/x.tar.gz\n  dependencies:\n  - name: db\n    namespace: elsewhere\n' "$apps" | k apply -f - 2>&1)
if grep -q 'denied the request' <<<"$out" && grep -q "$POLICY" <<<"$out" &&
    grep -q 'outside the Component' <<<"$out"; then
    tap_ok "test_deploy__shipped_policy_refuses_cross_namespace_dependency"
else
    tap_fail "test_deploy__shipped_policy_refuses_cross_namespace_dependency" "$out"
fi
if grep -qiE 'forbidden' "$work/webhook.log"; then
    tap_fail "test_deploy__webhook_never_forbidden" "$(grep -iE 'forbidden' "$work/webhook.log" | head -5)"
else
    tap_ok "test_deploy__webhook_never_forbidden"
fi

tap_done
