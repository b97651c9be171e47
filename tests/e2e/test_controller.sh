#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# component-controller end to end: the daemon runs as a process against the test control
# plane, a plain HTTP server serves a .tar.gz of manifests (with an ETag), and the checks use
# kubectl as a user would: a Component becomes Ready, its objects carry the owner label, a new
# artifact version is picked up, the metrics and probes answer, and deletion removes
# everything. There is no kube-controller-manager, so the Deployment's status is written here.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"
# shellcheck source=../support/e2e.sh
. "$ROOT/tests/support/e2e.sh"

CONTROLLER=${CO_CONTROLLER:-$ROOT/build/test/component-controller}

e2e_need_cluster

work=$(mktemp -d "${TMPDIR:-/tmp}/co-e2e-ctl-XXXXXX")
ns=co-e2e-ctl-$$-$RANDOM
ctl_pid=""
http_pid=""
cleanup() {
    [ -n "$ctl_pid" ] && kill "$ctl_pid" 2>/dev/null && wait "$ctl_pid" 2>/dev/null
    [ -n "$http_pid" ] && kill "$http_pid" 2>/dev/null && wait "$http_pid" 2>/dev/null
    k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# wait_for DESC SECONDS CMD...: retry CMD every half second until it succeeds.
wait_for() {
    local desc=$1 secs=$2
    shift 2
    local end=$(($(date +%s) + secs)) out=""
    while [ "$(date +%s)" -lt "$end" ]; do
        if out=$("$@" 2>&1); then
            tap_ok "$desc"
            return 0
        fi
        sleep 0.5
    done
    tap_fail "$desc" "command: $*" "$out" "--- status:" "$(k -n "$ns" get "$COMP" demo -o jsonpath="{.status}" 2>&1)" "--- controller log (tail):" "$(tail -n 30 "$work/controller.log")"
    return 1
}

state_is() { # NAME STATE
    [ "$(k -n "$ns" get "$COMP" "$1" -o jsonpath='{.status.state}')" = "$2" ]
}

# --- the artifact server ----------------------------------------------------------------------
mkdir -p "$work/src/v1/app" "$work/www"
cat >"$work/src/v1/app/objects.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: demo-config
data:
  greeting: hello
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: demo
spec:
  replicas: 1
  selector:
    matchLabels:
      app: demo
  template:
    metadata:
      labels:
        app: demo
    spec:
      containers:
      - name: demo
        image: registry.invalid/demo:1
YAML
tar -C "$work/src/v1" -czf "$work/www/demo.tar.gz" app
cat >"$work/server.py" <<'PY'
import hashlib, http.server, os, sys
root = sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def _send(self, body_too):
        path = os.path.join(root, os.path.basename(self.path))
        if not os.path.isfile(path):
            self.send_response(404); self.end_headers(); return
        data = open(path, "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/gzip")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", "sha256:" + hashlib.sha256(data).hexdigest())
        self.end_headers()
        if body_too:
            self.wfile.write(data)
    def do_HEAD(self): self._send(False)
    def do_GET(self): self._send(True)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
http_port=$(free_port)
python3 "$work/server.py" "$http_port" "$work/www" &
http_pid=$!

# The storage version, named explicitly: where the CRD serves the opt-in v1beta1 (another
# suite may have left it so), `component` alone means v1beta1, which goes through the
# conversion webhook — not running in this suite.
COMP=components.v1alpha1.core.cs.sap.com

# --- cluster set-up -----------------------------------------------------------------------------
crd=$ROOT/crds/core.cs.sap.com_components.yaml
if [ ! -f "$crd" ]; then
    crd=$work/crd.json
    cat >"$crd" <<'JSON'
{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"components.core.cs.sap.com"},
 "spec":{"group":"core.cs.sap.com","scope":"Namespaced",
  "names":{"plural":"components","singular":"component","kind":"Component","listKind":"ComponentList","shortNames":["comp"]},
  "versions":[{"name":"v1alpha1","served":true,"storage":true,"subresources":{"status":{}},
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}
JSON
fi
k get crd components.core.cs.sap.com >/dev/null 2>&1 || k create -f "$crd" >/dev/null
k wait --for condition=established --timeout=60s crd/components.core.cs.sap.com >/dev/null
k create namespace "$ns" >/dev/null

metrics_port=$(free_port)
probe_port=$(free_port)
"$CONTROLLER" --kubeconfig "$CO_TEST_KUBECONFIG" --namespace "$ns" \
    --metrics-bind-address "127.0.0.1:$metrics_port" \
    --health-probe-bind-address "127.0.0.1:$probe_port" \
    --source-cache-dir "$work/cache" --log-level debug >"$work/controller.log" 2>&1 &
ctl_pid=$!

wait_for "test_controller__probes_report_ready" 120 \
    curl -fsS "http://127.0.0.1:$probe_port/readyz"

cat >"$work/component.yaml" <<YAML
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: demo
  namespace: $ns
spec:
  sourceRef:
    httpRepository:
      url: http://127.0.0.1:$http_port/demo.tar.gz
  path: app
  requeueInterval: 10m
YAML
tap_check "test_controller__kubectl_applies_a_component" k apply -f "$work/component.yaml"

wait_for "test_controller__component_waits_for_the_deployment" 120 state_is demo Processing
wait_for "test_controller__deployment_created" 60 k -n "$ns" get deployment demo

# no kube-controller-manager: make the Deployment look rolled out
gen=$(k -n "$ns" get deployment demo -o jsonpath='{.metadata.generation}')
k -n "$ns" patch deployment demo --subresource=status --type=merge -p "{\"status\":{
  \"observedGeneration\":$gen,\"replicas\":1,\"updatedReplicas\":1,\"readyReplicas\":1,
  \"availableReplicas\":1,\"conditions\":[
   {\"type\":\"Available\",\"status\":\"True\",\"reason\":\"MinimumReplicasAvailable\"},
   {\"type\":\"Progressing\",\"status\":\"True\",\"reason\":\"NewReplicaSetAvailable\"}]}}" \
    >/dev/null

wait_for "test_controller__component_becomes_ready" 120 state_is demo Ready

owner=$(k -n "$ns" get configmap demo-config -o jsonpath='{.metadata.labels.component-operator\.cs\.sap\.com/owner-id}')
if [ ${#owner} = 52 ]; then
    tap_ok "test_controller__dependents_carry_the_owner_label"
else
    tap_fail "test_controller__dependents_carry_the_owner_label" "label: '$owner'"
fi
inv=$(k -n "$ns" get "$COMP" demo -o jsonpath='{range .status.inventory[*]}{.kind}/{.name}={.phase} {end}')
case "$inv" in
*ConfigMap/demo-config=Ready*Deployment/demo=Ready* | *Deployment/demo=Ready*ConfigMap/demo-config=Ready*)
    tap_ok "test_controller__inventory_lists_the_dependents" ;;
*) tap_fail "test_controller__inventory_lists_the_dependents" "inventory: $inv" ;;
esac
rev1=$(k -n "$ns" get "$COMP" demo -o jsonpath='{.status.lastAppliedRevision}')

metrics=$(curl -fsS "http://127.0.0.1:$metrics_port/metrics" 2>&1)
if grep -q "component_operator_runtime_component_state{.*name=\"demo\",state=\"Ready\"} 1" <<<"$metrics"; then
    tap_ok "test_controller__metrics_show_the_state"
else
    tap_fail "test_controller__metrics_show_the_state" "$(printf '%s' "$metrics" | grep component_state | head)"
fi

# a new artifact version: the ConfigMap changes (picked up by the leader-only poller or requeue)
sed -i 's/greeting: hello/greeting: bonjour/' "$work/src/v1/app/objects.yaml"
tar -C "$work/src/v1" -czf "$work/www/demo.tar.gz.new" app && mv "$work/www/demo.tar.gz.new" "$work/www/demo.tar.gz"
k -n "$ns" annotate "$COMP" demo touch=1 >/dev/null
wait_for "test_controller__new_artifact_is_applied" 120 \
    bash -c "[ \"\$($KUBECTL --kubeconfig $CO_TEST_KUBECONFIG -n $ns get configmap demo-config -o jsonpath='{.data.greeting}')\" = bonjour ]"
wait_for "test_controller__ready_again_with_new_revision" 120 \
    bash -c "[ \"\$($KUBECTL --kubeconfig $CO_TEST_KUBECONFIG -n $ns get $COMP demo -o jsonpath='{.status.state}/{.status.lastAppliedRevision}')\" != \"Ready/$rev1\" ] && [ \"\$($KUBECTL --kubeconfig $CO_TEST_KUBECONFIG -n $ns get $COMP demo -o jsonpath='{.status.state}')\" = Ready ]"

tap_check "test_controller__kubectl_deletes_the_component" k -n "$ns" delete "$COMP" demo --timeout=120s
if k -n "$ns" get configmap demo-config >/dev/null 2>&1; then
    tap_fail "test_controller__deletion_removes_dependents" "configmap demo-config still exists"
else
    tap_ok "test_controller__deletion_removes_dependents"
fi

kill -TERM "$ctl_pid" 2>/dev/null
if wait "$ctl_pid"; then
    tap_ok "test_controller__sigterm_stops_cleanly"
else
    tap_fail "test_controller__sigterm_stops_cleanly" "$(tail -n 20 "$work/controller.log")"
fi
ctl_pid=""
tap_done
