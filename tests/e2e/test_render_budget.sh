#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The render budget end to end: the controller runs against the test control plane with a small
# budget (--render-cpu-budget 2s --render-memory-budget 16Mi, two workers) and a plain HTTP
# server serves one tarball per source. Components whose templates double a list without end,
# spin on the CPU, print a map that contains itself, or print a value nested 5000 levels deep
# end in state Error with the reason in their Ready condition, while the controller keeps
# serving: a plain Component beside them, and one created after them, become Ready.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"
# shellcheck source=../support/e2e.sh
. "$ROOT/tests/support/e2e.sh"

CONTROLLER=${CO_CONTROLLER:-$ROOT/build/test/component-controller}

e2e_need_cluster

work=$(mktemp -d "${TMPDIR:-/tmp}/co-e2e-budget-XXXXXX")
ns=co-e2e-budget-$$-$RANDOM
ctl_pid=""
http_pid=""
cleanup() {
    [ -n "$ctl_pid" ] && kill "$ctl_pid" 2>/dev/null && wait "$ctl_pid" 2>/dev/null
    [ -n "$http_pid" ] && kill "$http_pid" 2>/dev/null && wait "$http_pid" 2>/dev/null
    k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# The storage version, named explicitly: `component` alone means the preferred v1beta1, which
# goes through the conversion webhook — not running in this suite.
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
# fails_with NAME TEXT: the Component is in state Error and its Ready condition says TEXT.
fails_with() {
    state_is "$1" Error || return 1
    local msg
    msg=$(k -n "$ns" get "$COMP" "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')
    grep -qF -- "$2" <<<"$msg" || {
        echo "message: $msg"
        return 1
    }
}

# --- one source per Component -------------------------------------------------------------------
source_of() { # NAME TEMPLATE: a tarball NAME.tar.gz holding app/objects.yaml
    mkdir -p "$work/src/$1/app"
    printf '%s\n' "$2" >"$work/src/$1/app/objects.yaml"
    tar -C "$work/src/$1" -czf "$work/www/$1.tar.gz" app
}
mkdir -p "$work/www"
CM='apiVersion: v1
kind: ConfigMap
metadata:
  name: NAME-config
data:
  value: "VALUE"'
source_of doubling "$(sed 's/NAME/doubling/; s/VALUE/{{ $l := list 1 }}{{ range until 64 }}{{ $l = concat $l $l }}{{ end }}{{ len $l }}/' <<<"$CM")"
source_of spinning "$(sed 's/NAME/spinning/; s/VALUE/{{ $s := repeat 100000 "x" }}{{ range 1000000000 }}{{ $_ := sha256sum $s }}{{ end }}/' <<<"$CM")"
source_of itself "$(sed 's/NAME/itself/; s/VALUE/{{ $d := dict "a" 1 }}{{ $_ := set $d "self" $d }}{{ toString $d }}/' <<<"$CM")"
source_of deep "$(sed 's/NAME/deep/; s/VALUE/{{ $d := dict }}{{ range until 5000 }}{{ $d = dict "a" $d }}{{ end }}{{ toJson $d }}/' <<<"$CM")"
source_of plain "$(sed 's/NAME/plain/; s/VALUE/{{ print "fine" }}/' <<<"$CM")"
source_of later "$(sed 's/NAME/later/; s/VALUE/{{ print "fine" }}/' <<<"$CM")"

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

component() { # NAME
    cat <<YAML
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: $1
  namespace: $ns
spec:
  sourceRef:
    httpRepository:
      url: http://127.0.0.1:$http_port/$1.tar.gz
  path: app
  requeueInterval: 10m
---
YAML
}

# --- cluster set-up -----------------------------------------------------------------------------
crd=$ROOT/crds/core.cs.sap.com_components.yaml
k get crd components.core.cs.sap.com >/dev/null 2>&1 || k create -f "$crd" >/dev/null
k wait --for condition=established --timeout=60s crd/components.core.cs.sap.com >/dev/null
k create namespace "$ns" >/dev/null

tap_check_fails "test_render_budget__a_bad_flag_is_refused" "render-memory-budget: unknown unit" \
    "$CONTROLLER" --render-memory-budget 16MB

metrics_port=$(free_port)
probe_port=$(free_port)
"$CONTROLLER" --kubeconfig "$CO_TEST_KUBECONFIG" --namespace "$ns" \
    --metrics-bind-address "127.0.0.1:$metrics_port" \
    --health-probe-bind-address "127.0.0.1:$probe_port" \
    --max-concurrent-reconciles 2 --render-cpu-budget 2s --render-memory-budget 16Mi \
    --source-cache-dir "$work/cache" --log-level debug >"$work/controller.log" 2>&1 &
ctl_pid=$!

wait_for "test_render_budget__controller_ready" 120 - \
    curl -fsS "http://127.0.0.1:$probe_port/readyz"

for c in doubling spinning itself deep plain; do
    component "$c"
done >"$work/components.yaml"
tap_check "test_render_budget__components_applied" k apply -f "$work/components.yaml"

wait_for "test_render_budget__doubling_list_fails_on_memory" 180 doubling \
    fails_with doubling "render budget exceeded: more than 16 MiB of memory"
wait_for "test_render_budget__endless_loop_fails_on_cpu_time" 180 spinning \
    fails_with spinning "render budget exceeded: more than 2s of CPU time"
wait_for "test_render_budget__map_containing_itself_is_a_template_error" 180 itself \
    fails_with itself "error calling toString: value contains itself"
wait_for "test_render_budget__deep_value_is_a_template_error" 180 deep \
    fails_with deep "json: unsupported value: nested deeper than 1000 levels"
wait_for "test_render_budget__a_plain_component_beside_them_is_ready" 180 plain \
    state_is plain Ready

# the same process still serves: a Component created after the failures becomes Ready
component later >"$work/later.yaml"
tap_check "test_render_budget__later_component_applied" k apply -f "$work/later.yaml"
wait_for "test_render_budget__later_component_is_ready" 180 later state_is later Ready
if kill -0 "$ctl_pid" 2>/dev/null && curl -fsS "http://127.0.0.1:$probe_port/healthz" >/dev/null; then
    tap_ok "test_render_budget__controller_still_running"
else
    tap_fail "test_render_budget__controller_still_running" "$(tail -n 30 "$work/controller.log")"
fi
# peak and current memory of the (sanitizer-instrumented) process, for the record
grep -E '^Vm(HWM|RSS)' "/proc/$ctl_pid/status" 2>/dev/null | sed 's/^/# controller /'

kill -TERM "$ctl_pid" 2>/dev/null
if wait "$ctl_pid"; then
    tap_ok "test_render_budget__sigterm_stops_cleanly"
else
    tap_fail "test_render_budget__sigterm_stops_cleanly" "$(tail -n 20 "$work/controller.log")"
fi
ctl_pid=""
tap_done
