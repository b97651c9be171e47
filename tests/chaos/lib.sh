# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# Shared by the reliability campaigns of tests/chaos/ (docs/chaos.md). Source it after setting
# CAMPAIGN; it provides:
#
#   chaos_setup               control plane (CO_TEST_KUBECONFIG's, else a private one), CRDs,
#                             namespaces, the artifact server and, when the tools exist, SOPS keys
#   ctl_start / ctl_kill      component-controller as a process (SIGKILL, then reaped)
#   wh_start / wh_kill        component-webhook with a test certificate; wh_register installs the
#                             webhook configurations of deploy/webhook (failurePolicy Fail),
#                             narrowed to this campaign's namespaces
#   churn_start / churn_stop  a background loop creating, updating and deleting Components
#   settle / verify           wait for the end state, then count leaks and losses
#   summary KEY VALUE...      the summary table (printed by summary_print, also written as
#                             KEY=VALUE lines to $CHAOS_SUMMARY when set)
#
# Everything a campaign makes lives under one work directory and namespaces named after it;
# all of it is removed on exit, also on failure (CHAOS_KEEP=1 keeps the work directory).

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/component-operator"
KUBECTL=${KUBECTL:-$(command -v kubectl || echo "$CACHE/bin/kubectl")}
BIN_DIR=${CHAOS_BIN_DIR:-$ROOT/build/release}
CONTROLLER=${CO_CONTROLLER:-$BIN_DIR/component-controller}
WEBHOOK=${CO_WEBHOOK_BIN:-$BIN_DIR/component-webhook}
COMP=components.v1alpha1.core.cs.sap.com
OWNER_LABEL=component-operator.cs.sap.com/owner-id

SUFFIX=$$-$RANDOM
CNS=co-chaos-$SUFFIX   # the Components
TNS=("co-chaos-t0-$SUFFIX" "co-chaos-t1-$SUFFIX")   # where they deploy
WNS=co-chaos-w-$SUFFIX # Components only the webhook sees (no controller watches it)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/co-chaos-$CAMPAIGN-XXXXXX")
STATE=$WORK/state      # live/NAME, deleted/NAME: what the churn intends
mkdir -p "$STATE/live" "$STATE/deleted" "$WORK/logs"

OWN_CP=""
CTL_PID=""
WH_PID=""
HTTP_PID=""
CHURN_PID=""
SOPS=0
SUMMARY_KEYS=()
declare -A SUMMARY

say() { printf '[%s %s] %s\n' "$CAMPAIGN" "$(date -u +%H:%M:%S)" "$*" >&2; }
k() { "$KUBECTL" --kubeconfig "$CO_TEST_KUBECONFIG" --request-timeout=30s "$@"; }
free_port() { python3 "$ROOT/tests/support/free_port.py"; }
now_ms() { date +%s%3N; }

# --- teardown ----------------------------------------------------------------------------------

chaos_cleanup() {
    local ns c
    [ -n "$CHURN_PID" ] && churn_stop
    [ -n "$CTL_PID" ] && { kill -TERM "$CTL_PID" 2>/dev/null; wait "$CTL_PID" 2>/dev/null; }
    CTL_PID=""
    # (a private control plane goes as a whole)
    if [ -n "${CO_TEST_KUBECONFIG:-}" ] && [ -z "$OWN_CP" ] &&
        [ -z "${CHAOS_NO_CLUSTER_CLEANUP:-}" ]; then
        k delete validatingwebhookconfiguration "co-chaos-$SUFFIX" --ignore-not-found \
            >/dev/null 2>&1
        k delete mutatingwebhookconfiguration "co-chaos-$SUFFIX" --ignore-not-found \
            >/dev/null 2>&1
        # nothing would ever remove a finalizer left here
        for c in $(k -n "$CNS" get "$COMP" -o name 2>/dev/null); do
            k -n "$CNS" patch "$c" --type=merge -p '{"metadata":{"finalizers":null}}' \
                >/dev/null 2>&1
        done
        for ns in "$CNS" "${TNS[@]}" "$WNS"; do
            k delete namespace "$ns" --wait=false >/dev/null 2>&1
        done
    fi
    [ -n "$WH_PID" ] && { kill -TERM "$WH_PID" 2>/dev/null; wait "$WH_PID" 2>/dev/null; }
    [ -n "$HTTP_PID" ] && { kill "$HTTP_PID" 2>/dev/null; wait "$HTTP_PID" 2>/dev/null; }
    [ "$SOPS" = 1 ] && "$ROOT/tests/support/sopsgen.sh" stop "$WORK/keys" >/dev/null 2>&1
    if [ -n "$OWN_CP" ]; then
        "$ROOT/tests/env/controlplane.sh" stop "$OWN_CP" >/dev/null 2>&1
    fi
    if [ "${CHAOS_KEEP:-0}" = 1 ]; then
        say "work directory kept: $WORK"
    else
        rm -rf "$WORK"
    fi
}

# --- set-up ------------------------------------------------------------------------------------

# chaos_setup: the control plane, CRDs, namespaces, artifact server, SOPS keys.
chaos_setup() {
    trap chaos_cleanup EXIT
    trap 'exit 130' INT TERM
    [ -x "$CONTROLLER" ] || { say "missing $CONTROLLER (make release)"; return 1; }
    if [ -z "${CO_TEST_KUBECONFIG:-}" ]; then
        OWN_CP=$WORK/cp
        say "starting a private control plane"
        # an audit log of every write to a Component: who deleted what, when a campaign fails
        printf '%s\n' 'apiVersion: audit.k8s.io/v1' 'kind: Policy' 'rules:' '- level: Metadata' \
            '  resources: [{group: core.cs.sap.com, resources: [components]}]' \
            '  verbs: [create, delete, deletecollection, update, patch]' '- level: None' \
            >"$WORK/audit-policy.yaml"
        CO_TEST_APISERVER_ARGS="${CO_TEST_APISERVER_ARGS:-} --audit-log-path=$WORK/logs/audit.log --audit-policy-file=$WORK/audit-policy.yaml" \
            "$ROOT/tests/env/controlplane.sh" start "$OWN_CP" >"$WORK/logs/controlplane.log" 2>&1 ||
            { tail -n 20 "$WORK/logs/controlplane.log" >&2; return 1; }
        # shellcheck disable=SC1091
        . "$OWN_CP/env"
    fi
    export CO_TEST_KUBECONFIG CO_TEST_CONTROLPLANE_DIR
    local f
    for f in core.cs.sap.com_components.yaml core.cs.sap.com_componentpolicies.yaml \
        core.cs.sap.com_blueprints.yaml core.cs.sap.com_blueprintversions.yaml; do
        k get crd "${f%.yaml}" >/dev/null 2>&1 && continue
        k get crd "$(sed -n 's/^  name: //p' "$ROOT/crds/$f" | head -n 1)" >/dev/null 2>&1 &&
            continue
        k create -f "$ROOT/crds/$f" >/dev/null || return 1
    done
    k wait --for condition=established --timeout=60s crd/components.core.cs.sap.com \
        crd/componentpolicies.core.cs.sap.com >/dev/null || return 1
    local ns
    for ns in "$CNS" "${TNS[@]}" "$WNS"; do
        k create namespace "$ns" >/dev/null || return 1
        k label namespace "$ns" "co-chaos=$SUFFIX" >/dev/null || return 1
    done
    make_sources || return 1
    serve_sources || return 1
}

# make_sources: one artifact with a directory per kind of Component (docs/chaos.md):
#   waves/  three ConfigMaps and a ServiceAccount in apply waves -1, 0 and 1
#   helm/   a Helm chart: a ConfigMap, a pre-install hook, and an optional ConfigMap
#           (values.extra) that appears and disappears with updates
#   sops/   a SOPS-encrypted Secret (age) and a ConfigMap; a plain Secret without the tools
#   plain/  a ConfigMap and a ServiceAccount (also what dependants deploy)
# Names and data come from postBuild substitution: ${ID} (the Component's name), ${GEN} (its
# generation of updates).
make_sources() {
    local s=$WORK/src
    mkdir -p "$s/waves" "$s/helm/templates" "$s/sops" "$s/plain" "$WORK/www"
    local w
    for w in -1 0 1; do
        cat >"$s/waves/cm$w.yaml" <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: \${ID}-w$w
  annotations:
    component-operator.cs.sap.com/apply-order: "$w"
    component-operator.cs.sap.com/delete-order: "$((-w))"
data:
  gen: "gen-\${GEN}"
EOF
    done
    cat >"$s/waves/sa.yaml" <<'EOF'
apiVersion: v1
kind: ServiceAccount
metadata:
  name: ${ID}-sa
  annotations:
    component-operator.cs.sap.com/apply-order: "1"
EOF
    cat >"$s/helm/Chart.yaml" <<'EOF'
apiVersion: v2
name: chaos
version: 0.1.0
EOF
    printf 'extra: false\n' >"$s/helm/values.yaml"
    cat >"$s/helm/templates/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${ID}-h
data:
  gen: "gen-${GEN}"
  release: {{ .Release.Name | quote }}
EOF
    cat >"$s/helm/templates/hook.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${ID}-hook
  annotations:
    helm.sh/hook: pre-install
data:
  installed: "yes"
EOF
    cat >"$s/helm/templates/extra.yaml" <<'EOF'
{{- if .Values.extra }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${ID}-x
data:
  gen: "gen-${GEN}"
{{- end }}
EOF
    cat >"$s/sops/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${ID}-sc
data:
  gen: "gen-${GEN}"
EOF
    if "$ROOT/tests/support/sopsgen.sh" keys "$WORK/keys" >"$WORK/logs/sopsgen.log" 2>&1 &&
        "$ROOT/tests/support/sopsgen.sh" encrypt "$WORK/keys" >"$s/sops/secret.yaml" \
            2>>"$WORK/logs/sopsgen.log" <<'EOF'; then
{"format":"yaml","tree":{"apiVersion":"v1","kind":"Secret","metadata":{"name":"${ID}-s"},
 "stringData":{"password":"chaos-${GEN}"}},"rule":{"encrypted_regex":"^(data|stringData)$"},
 "groups":[[{"age":"@0"}]],"lastmodified":"2024-01-02T03:04:05Z"}
EOF
        SOPS=1
        k -n "$CNS" create secret generic sops-keys \
            --from-file=age.agekey="$WORK/keys/age0.agekey" >/dev/null || return 1
    else
        say "no SOPS tools ($(tail -n 1 "$WORK/logs/sopsgen.log")); sops/ holds a plain Secret"
        cat >"$s/sops/secret.yaml" <<'EOF'
apiVersion: v1
kind: Secret
metadata:
  name: ${ID}-s
stringData:
  password: chaos-${GEN}
EOF
    fi
    cat >"$s/plain/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${ID}-p
data:
  gen: "gen-${GEN}"
EOF
    cat >"$s/plain/sa.yaml" <<'EOF'
apiVersion: v1
kind: ServiceAccount
metadata:
  name: ${ID}-psa
EOF
    tar -C "$s" -czf "$WORK/www/src.tar.gz" waves helm sops plain
}

serve_sources() {
    cat >"$WORK/server.py" <<'PY'
import hashlib, http.server, os, sys
root = sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def _send(self, body):
        path = os.path.join(root, os.path.basename(self.path))
        if not os.path.isfile(path):
            self.send_response(404); self.end_headers(); return
        data = open(path, "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/gzip")
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
    HTTP_PORT=$(free_port)
    python3 "$WORK/server.py" "$HTTP_PORT" "$WORK/www" &
    HTTP_PID=$!
    local i
    for i in $(seq 1 50); do
        curl -sfI "http://127.0.0.1:$HTTP_PORT/src.tar.gz" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    say "artifact server did not start"
    return 1
}

# --- the daemons -------------------------------------------------------------------------------

CTL_STARTS=0
# ctl_start: a controller watching the Components' namespace; log appended to logs/controller.log.
ctl_start() {
    CTL_STARTS=$((CTL_STARTS + 1))
    [ -n "${CTL_METRICS:-}" ] || CTL_METRICS=$(free_port)
    [ -n "${CTL_PROBE:-}" ] || CTL_PROBE=$(free_port)
    echo "=== start $CTL_STARTS $(date -u +%FT%TZ)" >>"$WORK/logs/controller.log"
    "$CONTROLLER" --kubeconfig "$CO_TEST_KUBECONFIG" --namespace "$CNS" \
        --metrics-bind-address "127.0.0.1:$CTL_METRICS" \
        --health-probe-bind-address "127.0.0.1:$CTL_PROBE" \
        --source-cache-dir "$WORK/cache" --log-level "${CHAOS_LOG_LEVEL:-info}" \
        >>"$WORK/logs/controller.log" 2>&1 &
    CTL_PID=$!
}

# ctl_kill: SIGKILL, reaped; a controller that had exited already is reported.
ctl_kill() {
    if ! kill -0 "$CTL_PID" 2>/dev/null; then
        say "the controller had exited before the kill"
        wait "$CTL_PID" 2>/dev/null
        CTL_PID=""
        return 1
    fi
    kill -KILL "$CTL_PID" 2>/dev/null
    wait "$CTL_PID" 2>/dev/null
    CTL_PID=""
}

# wait_ready PORT SECONDS: /readyz answers 200.
wait_ready() {
    local end=$((SECONDS + $2))
    while [ $SECONDS -lt $end ]; do
        curl -sf --max-time 2 "http://127.0.0.1:$1/readyz" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}

# wh_certs: a test CA and a serving certificate for 127.0.0.1 in WORK.
wh_certs() {
    (
        cd "$WORK" &&
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
                -out ca.crt -days 2 -subj "/CN=co-chaos-ca" &&
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout tls.key \
                -out tls.csr -subj "/CN=127.0.0.1" &&
            printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' \
                >ext.cnf &&
            openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
                -extfile ext.cnf -out tls.crt
    ) >"$WORK/logs/openssl.log" 2>&1
}

WH_STARTS=0
# wh_start [FLAGS...]: the webhook with the test certificate (or FLAGS for self-managed ones) on
# WH_PORT, chosen once so that restarts listen where the configurations point.
wh_start() {
    WH_STARTS=$((WH_STARTS + 1))
    [ -n "${WH_PORT:-}" ] || WH_PORT=$(free_port)
    [ -n "${WH_PROBE:-}" ] || WH_PROBE=$(free_port)
    local certs=(--tls-cert-file "$WORK/tls.crt" --tls-key-file "$WORK/tls.key")
    [ $# -gt 0 ] && certs=("$@")
    echo "=== start $WH_STARTS $(date -u +%FT%TZ)" >>"$WORK/logs/webhook.log"
    "$WEBHOOK" --kubeconfig "$CO_TEST_KUBECONFIG" "${certs[@]}" \
        --webhook-bind-address "127.0.0.1:$WH_PORT" \
        --health-probe-bind-address "127.0.0.1:$WH_PROBE" --metrics-bind-address "127.0.0.1:$WH_PROBE" \
        --shutdown-timeout-seconds 5 --log-level "${CHAOS_LOG_LEVEL:-info}" \
        >>"$WORK/logs/webhook.log" 2>&1 &
    WH_PID=$!
}

wh_kill() {
    [ -n "$WH_PID" ] || return 0
    kill -KILL "$WH_PID" 2>/dev/null
    wait "$WH_PID" 2>/dev/null
    WH_PID=""
}

# wh_register [CA-BUNDLE-FILE]: the validating and mutating configurations of deploy/webhook,
# named co-chaos-SUFFIX, pointing at WH_PORT, for this campaign's namespaces only. Without a
# bundle file the webhook injects it (self-managed certificates).
wh_register() {
    local ca=""
    [ -n "${1:-}" ] && ca=$(base64 -w0 <"$1")
    "$KUBECTL" kustomize "$ROOT/deploy/webhook" >"$WORK/deploy.yaml" || return 1
    k create --dry-run=client -o json -f "$WORK/deploy.yaml" |
        jq --arg base "https://127.0.0.1:$WH_PORT" --arg ca "$ca" --arg name "co-chaos-$SUFFIX" \
            --arg sel "$SUFFIX" '
          (if .kind == "List" then .items else [.] end)[]
          | select(.kind | test("WebhookConfiguration$"))
          | .metadata.name = $name
          | .webhooks[] |= (.clientConfig = ({url: ($base + .clientConfig.service.path)}
                              + (if $ca == "" then {} else {caBundle: $ca} end))
                            | .namespaceSelector = {matchLabels: {"co-chaos": $sel}})
        ' >"$WORK/webhooks.json" || return 1
    k apply -f "$WORK/webhooks.json" >/dev/null
}

# --- Components ----------------------------------------------------------------------------------

# kind_of I: waves, helm, sops, dep (plain, depending on c-(I-3), a waves one) or plain.
kind_of() {
    case $(($1 % 5)) in
    0) echo waves ;;
    1) echo helm ;;
    2) echo sops ;;
    3) echo dep ;;
    *) echo plain ;;
    esac
}
cname() { printf 'c-%03d' "$1"; }

# manifest I GEN: the Component manifest of index I at update generation GEN.
manifest() {
    local i=$1 gen=$2 name kind path extra=""
    name=$(cname "$i")
    kind=$(kind_of "$i")
    path=$kind
    [ "$kind" = dep ] && path=plain
    case $kind in
    helm)
        local x=false
        [ $((gen % 2)) = 1 ] && x=true
        extra="  values:
    extra: $x"
        ;;
    sops)
        [ "$SOPS" = 1 ] && extra="  decryption:
    provider: sops
    secretRef:
      name: sops-keys"
        ;;
    dep)
        extra="  dependencies:
  - name: $(cname $((i - 3)))"
        ;;
    esac
    cat <<EOF
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: $name
  namespace: $CNS
spec:
  sourceRef:
    httpRepository:
      url: http://127.0.0.1:$HTTP_PORT/src.tar.gz
  path: $path
  namespace: ${TNS[$((i % 2))]}
  requeueInterval: 10m
  retryInterval: 2s
  postBuild:
    substitute:
      ID: $name
      GEN: "$gen"
$extra
---
EOF
}

# expected_objects I GEN: "Kind/namespace/name" of what Component I deploys at GEN.
expected_objects() {
    local i=$1 gen=$2 name ns
    name=$(cname "$i")
    ns=${TNS[$((i % 2))]}
    case $(kind_of "$i") in
    waves) printf 'ConfigMap/%s/%s\n' "$ns" "$name-w-1" "$ns" "$name-w0" "$ns" "$name-w1"
        printf 'ServiceAccount/%s/%s\n' "$ns" "$name-sa" ;;
    helm) printf 'ConfigMap/%s/%s\n' "$ns" "$name-h" "$ns" "$name-hook"
        [ $((gen % 2)) = 1 ] && printf 'ConfigMap/%s/%s\n' "$ns" "$name-x" ;;
    sops) printf 'ConfigMap/%s/%s\nSecret/%s/%s\n' "$ns" "$name-sc" "$ns" "$name-s" ;;
    *) printf 'ConfigMap/%s/%s\nServiceAccount/%s/%s\n' "$ns" "$name-p" "$ns" "$name-psa" ;;
    esac
}

gen_of() { cat "$STATE/live/$(cname "$1")" 2>/dev/null || echo 0; }

# create_all N: N Components at generation 0, in one apply.
create_all() {
    local i
    : >"$WORK/all.yaml"
    for i in $(seq 0 $(($1 - 1))); do
        manifest "$i" 0 >>"$WORK/all.yaml"
        echo 0 >"$STATE/live/$(cname "$i")"
    done
    k apply -f "$WORK/all.yaml" >"$WORK/logs/create_all.log" 2>&1
    # every one must exist before the faults start; create any the apply did not (said so)
    local have missing=()
    have=$(k -n "$CNS" get "$COMP" -o name 2>/dev/null | sed 's|.*/||')
    for i in $(seq 0 $(($1 - 1))); do
        grep -qx "$(cname "$i")" <<<"$have" || missing+=("$i")
    done
    for i in "${missing[@]}"; do
        say "$(cname "$i") is missing after the first apply; created again"
        manifest "$i" 0 | k create --save-config -f - >>"$WORK/logs/create_all.log" 2>&1 ||
            return 1
    done
}

# --- churn ----------------------------------------------------------------------------------------

# truth NAME: what the API server holds of Component NAME: "absent", "deleting" or its GEN.
# Asked after a write whose answer was lost (the API server restarting): it retries for up to
# 120 s, until the API server answers.
truth() {
    local out i
    for i in $(seq 1 240); do
        if out=$(k -n "$CNS" get "$COMP" "$1" -o json 2>&1); then
            jq -r 'if .metadata.deletionTimestamp then "deleting"
                else .spec.postBuild.substitute.GEN end' <<<"$out"
            return 0
        elif grep -qF "\"$1\" not found" <<<"$out"; then
            # (not any 404: right after a restart the API server answers "could not find the
            # requested resource" until it serves the CRD again)
            echo absent
            return 0
        fi
        sleep 0.5
    done
    echo unknown
}

# record NAME: STATE follows the API server after a failed write.
record() {
    local t
    t=$(truth "$1")
    case $t in
    absent | deleting)
        rm -f "$STATE/live/$1"
        touch "$STATE/deleted/$1"
        ;;
    unknown) echo "no answer about $1" >&2 ;;
    *)
        echo "$t" >"$STATE/live/$1"
        rm -f "$STATE/deleted/$1"
        ;;
    esac
}

# live_count: how many Components the churn intends to exist.
live_count() {
    find "$STATE/live" -mindepth 1 -maxdepth 1 | wc -l
}

# spare_live N: how many Components the churn may still delete and keep at least half of its
# N live (the short campaigns assert "live at the end >= N/2"); 0 or less means none.
spare_live() {
    echo $(($(live_count) - ($1 + 1) / 2))
}

# churn_op N: one random operation on one of N Components: create a missing one (with its
# dependency), update a live one (next generation), or delete one (a waves Component with its
# dependant). At least half of the N stay live at any time (a deletion that would leave fewer
# becomes an update), so the final check always has live Components and their objects to look
# at. Writes the intent to STATE first, then to the API server; an operation the API server
# refuses (a deletion still in progress, a restart) is undone in STATE.
churn_op() {
    local n=$1 i name r gen
    i=$((RANDOM % n))
    name=$(cname "$i")
    r=$((RANDOM % 10))
    local gone=()
    if [ $r -ge 7 ] && [ -f "$STATE/live/$name" ]; then
        gone=("$i")
        if [ "$(kind_of "$i")" = waves ] && [ $((i + 3)) -lt "$n" ] &&
            [ -f "$STATE/live/$(cname $((i + 3)))" ]; then
            gone=("$((i + 3))" "$i")
        fi
        # a waves Component goes with its dependant: count both against the half that stays
        if [ "${#gone[@]}" -gt "$(spare_live "$n")" ]; then
            r=0 # too few would be left: update it instead
        fi
    fi
    if [ ! -f "$STATE/live/$name" ]; then
        # still being deleted: wait for its finalizer
        k -n "$CNS" get "$COMP" "$name" >/dev/null 2>&1 && return 0
        local todo=("$i")
        if [ "$(kind_of "$i")" = dep ] && [ ! -f "$STATE/live/$(cname $((i - 3)))" ]; then
            k -n "$CNS" get "$COMP" "$(cname $((i - 3)))" >/dev/null 2>&1 && return 0
            todo=("$((i - 3))" "$i")
        fi
        local j
        for j in "${todo[@]}"; do
            echo 0 >"$STATE/live/$(cname "$j")"
            rm -f "$STATE/deleted/$(cname "$j")"
            if manifest "$j" 0 | k create --save-config -f - >/dev/null 2>>"$WORK/logs/churn.err"; then
                echo "create $(cname "$j")"
            else
                record "$(cname "$j")"
                return 0
            fi
        done
    elif [ $r -lt 7 ]; then
        gen=$(($(gen_of "$i") + 1))
        if manifest "$i" "$gen" | k apply -f - >/dev/null 2>>"$WORK/logs/churn.err"; then
            echo "$gen" >"$STATE/live/$name"
            echo "update $name $gen"
        else
            record "$name"
        fi
    else
        local j
        for j in "${gone[@]}"; do
            if k -n "$CNS" delete "$COMP" "$(cname "$j")" --wait=false >/dev/null \
                2>>"$WORK/logs/churn.err"; then
                rm -f "$STATE/live/$(cname "$j")"
                touch "$STATE/deleted/$(cname "$j")"
                echo "delete $(cname "$j")"
            else
                record "$(cname "$j")"
                # a dependant that stays keeps its dependency too
                [ -f "$STATE/live/$(cname "$j")" ] && return 0
                # the deletion went through but its answer was lost (the API server was killed
                # after committing it): logged like any other, so that the end's checks know
                # its objects went with it
                echo "delete $(cname "$j")"
            fi
        done
    fi
}

# delete_some COUNT: deletes up to COUNT live Components no other depends on (Helm, SOPS, plain),
# at once, so that a kill can fall in the middle of their deletion. It waits for the churn's
# operation in progress (churn_locked): an update racing a deletion would otherwise record a
# Component that is going away as live.
delete_some() {
    churn_locked delete_some_now "$@"
}

# churn_locked COMMAND...: runs COMMAND holding the churn lock, so that writes to STATE and to
# the API server about one Component never interleave between the churn loop and the campaign.
churn_locked() {
    { flock 9 && "$@"; } 9>"$WORK/churn.lock"
}

delete_some_now() {
    local want=$1 c i names=() spare
    spare=$(spare_live "${N:-0}")
    [ "$want" -gt "$spare" ] && want=$spare
    [ "$want" -gt 0 ] || return 0
    for c in $(ls "$STATE/live" | shuf); do
        [ ${#names[@]} -ge "$want" ] && break
        i=$((10#${c#c-}))
        case $(kind_of "$i") in helm | sops | plain) names+=("$c") ;; esac
    done
    [ ${#names[@]} -gt 0 ] || return 0
    for c in "${names[@]}"; do
        rm -f "$STATE/live/$c"
        touch "$STATE/deleted/$c"
        echo "delete $c" >>"$WORK/logs/churn.log"
    done
    k -n "$CNS" delete "$COMP" "${names[@]}" --wait=false >/dev/null 2>>"$WORK/logs/churn.err" ||
        for c in "${names[@]}"; do record "$c"; done
}

# churn_start N INTERVAL: churn_op every INTERVAL seconds (fractions allowed) in the background.
churn_start() {
    local n=$1 interval=$2
    rm -f "$WORK/churn.stop"
    (
        while [ ! -e "$WORK/churn.stop" ]; do
            churn_locked churn_op "$n"
            sleep "$interval"
        done
    ) >>"$WORK/logs/churn.log" 2>&1 &
    CHURN_PID=$!
}

# churn_stop: ends the loop after its current operation. It is asked, not signalled: a signal
# could end it between a write and the record of it in STATE.
churn_stop() {
    [ -n "$CHURN_PID" ] || return 0
    touch "$WORK/churn.stop"
    wait "$CHURN_PID" 2>/dev/null
    CHURN_PID=""
}

churn_ops() { grep -c . "$WORK/logs/churn.log" 2>/dev/null || echo 0; }

# --- the end state ----------------------------------------------------------------------------------

# settle SECONDS: waits until every live Component is Ready at its last generation and every
# deleted one is gone. Returns 1 on timeout; NOT_READY and STUCK then name the laggards.
settle() {
    local end=$((SECONDS + $1)) live deleted
    while :; do
        k -n "$CNS" get "$COMP" -o json >"$WORK/comps.json" 2>/dev/null || { sleep 1; continue; }
        live=$(ls "$STATE/live" | sort)
        deleted=$(ls "$STATE/deleted" | sort)
        NOT_READY=$(jq -r --argjson live "$(printf '%s\n' "$live" | jq -R . | jq -s .)" '
            [.items[] | select(.status.state == "Ready"
                and (.status.observedGeneration // 0) == .metadata.generation)
              | .metadata.name] as $ready
            | $live - $ready | .[] | select(. != "")' "$WORK/comps.json")
        STUCK=$(jq -r --argjson del "$(printf '%s\n' "$deleted" | jq -R . | jq -s .)" '
            [.items[].metadata.name] as $present | $del - ($del - $present) | .[]
            | select(. != "")' "$WORK/comps.json")
        if [ -z "$NOT_READY" ] && [ -z "$STUCK" ]; then
            return 0
        fi
        [ $SECONDS -ge $end ] && return 1
        sleep 2
    done
}

# verify: counts, over the target namespaces, OBJECTS (labelled objects checked), LEAKS
# (labelled objects in no live Component's inventory, or in several; objects of deleted
# Components), LOST (expected objects missing or at a stale generation; inventory items whose
# object is gone). Details in WORK/verify.txt.
verify() {
    : >"$WORK/verify.txt"
    k -n "$CNS" get "$COMP" -o json >"$WORK/comps.json" || return 1
    list_objects "$WORK/objects.tsv" || return 1
    verify_listed
}

# list_objects FILE: every object of every listable namespaced type in the target namespaces, as
# Kind, namespace, name, owner label ("-": none), generation ("-": none; data.gen, or a Secret's
# decrypted password), uid (tab-separated).
list_objects() {
    local types ns out=$1
    [ -n "${LIST_TYPES:-}" ] ||
        LIST_TYPES=$(k api-resources --verbs=list --namespaced -o name | grep -v '^events' |
            paste -sd, -)
    types=$LIST_TYPES
    : >"$out"
    for ns in "${TNS[@]}"; do
        # every listable type: Kind namespace name owner-label gen-data
        k -n "$ns" get "$types" -o json 2>/dev/null | jq -r --arg l "$OWNER_LABEL" '
            .items[] | [.kind, .metadata.namespace, .metadata.name,
              (.metadata.labels[$l] // "-"),
              (if .kind == "Secret" and .data.password then
                  .data.password | @base64d | sub("^chaos-"; "gen-")
               else .data.gen // "-" end),
              .metadata.uid] | @tsv' \
            >>"$out" || return 1
    done
}

verify_listed() {
    # inventory items of live Components: Kind/namespace/name<TAB>component<TAB>phase
    jq -r '.items[] | .metadata.name as $c | .status.inventory[]?
        | ["\(.kind)/\(.namespace)/\(.name)", $c, .phase] | @tsv' "$WORK/comps.json" \
        >"$WORK/inventory.tsv"
    OBJECTS=0
    LEAKS=0
    LOST=0
    local kind ons name owner gen id n
    while IFS=$'\t' read -r kind ons name owner gen _; do
        [ "$owner" = - ] && continue # never ours
        OBJECTS=$((OBJECTS + 1))
        id="$kind/$ons/$name"
        n=$(awk -F'\t' -v id="$id" '$1 == id' "$WORK/inventory.tsv" | wc -l)
        if [ "$n" != 1 ]; then
            LEAKS=$((LEAKS + 1))
            echo "leak: $id is in $n inventories" >>"$WORK/verify.txt"
        fi
    done <"$WORK/objects.tsv"
    # objects of deleted Components, labelled or not
    local c f
    for f in "$STATE/deleted"/*; do
        [ -e "$f" ] || continue
        c=${f##*/}
        if awk -F'\t' -v p="$c-" 'index($3, p) == 1 {f = 1} END {exit !f}' "$WORK/objects.tsv"; then
            LEAKS=$((LEAKS + 1))
            echo "leak: objects of deleted $c remain:" \
                "$(awk -F'\t' -v p="$c-" 'index($3, p) == 1 {printf "%s/%s ", $1, $3}' \
                    "$WORK/objects.tsv")" >>"$WORK/verify.txt"
        fi
    done
    # what each live Component should have deployed, at its last generation
    local i want
    for f in "$STATE/live"/*; do
        [ -e "$f" ] || continue
        c=${f##*/}
        i=$((10#${c#c-}))
        gen=$(cat "$STATE/live/$c")
        while IFS= read -r want; do
            kind=${want%%/*}
            name=${want##*/}
            ons=${want#*/}
            ons=${ons%%/*}
            local row
            row=$(awk -F'\t' -v k="$kind" -v n="$ons" -v m="$name" \
                '$1 == k && $2 == n && $3 == m' "$WORK/objects.tsv")
            if [ -z "$row" ]; then
                LOST=$((LOST + 1))
                echo "lost: $want of $c (generation $gen) is missing" >>"$WORK/verify.txt"
            elif [ "$(cut -f5 <<<"$row")" != - ] &&
                [ "$(cut -f5 <<<"$row")" != "gen-$gen" ]; then
                LOST=$((LOST + 1))
                echo "lost: $want of $c holds generation $(cut -f5 <<<"$row"), not $gen" \
                    >>"$WORK/verify.txt"
            fi
        done < <(expected_objects "$i" "$gen")
    done
    # inventory items without their object (a purged hook is Completed and absent by design)
    local phase
    while IFS=$'\t' read -r id c phase; do
        [ "$phase" = Completed ] && continue
        kind=${id%%/*}
        name=${id##*/}
        ons=${id#*/}
        ons=${ons%%/*}
        if ! awk -F'\t' -v k="$kind" -v n="$ons" -v m="$name" \
            '$1 == k && $2 == n && $3 == m {f = 1} END {exit !f}' "$WORK/objects.tsv"; then
            LOST=$((LOST + 1))
            echo "lost: $id in the inventory of $c is gone" >>"$WORK/verify.txt"
        fi
    done <"$WORK/inventory.tsv"
}

# --- summary ----------------------------------------------------------------------------------------

summary() {
    local key=$1
    shift
    [ -n "${SUMMARY[$key]+x}" ] || SUMMARY_KEYS+=("$key")
    SUMMARY[$key]="$*"
}

summary_print() {
    local key
    printf '\n%s summary\n' "$CAMPAIGN"
    printf '| %-26s | %s\n' "figure" "value"
    printf '|%s|%s\n' "----------------------------" "----------------------"
    for key in "${SUMMARY_KEYS[@]}"; do
        printf '| %-26s | %s\n' "$key" "${SUMMARY[$key]}"
    done
    if [ -n "${CHAOS_SUMMARY:-}" ]; then
        : >"$CHAOS_SUMMARY"
        for key in "${SUMMARY_KEYS[@]}"; do
            printf '%s=%s\n' "${key// /_}" "${SUMMARY[$key]}" >>"$CHAOS_SUMMARY"
        done
    fi
}

# fail_details: the evidence of a failed campaign, on stderr.
fail_details() {
    [ -s "$WORK/verify.txt" ] && { say "details:"; head -n 40 "$WORK/verify.txt" >&2; }
    [ -n "${NOT_READY:-}" ] && say "not ready: $(echo $NOT_READY | head -c 400)"
    # what the laggards' statuses say (at most five): state, reason, message, inventory
    local c
    for c in $(printf '%s\n' ${NOT_READY:-} ${STUCK:-} | head -n 5); do
        jq -r --arg c "$c" '.items[] | select(.metadata.name == $c)
            | "\($c): generation \(.metadata.generation), observed \(.status.observedGeneration),"
              + " \(.status.state) \(.status.conditions[0].reason // "-"):"
              + " \(.status.conditions[0].message // "-" | .[0:300])",
              (.status.inventory[]? | "  \(.kind)/\(.name) \(.phase) \(.status // "-")")' \
            "$WORK/comps.json" >&2 2>/dev/null
        jq -e --arg c "$c" 'any(.items[]; .metadata.name == $c)' "$WORK/comps.json" \
            >/dev/null 2>&1 || echo "$c: not in the cluster" >&2
    done
    [ -n "${STUCK:-}" ] && say "still present after deletion: $(echo $STUCK | head -c 400)"
    say "controller log (last 30 lines):"
    tail -n 30 "$WORK/logs/controller.log" >&2
    [ -s "$WORK/logs/churn.err" ] && { say "churn errors (last 10):"; tail -n 10 "$WORK/logs/churn.err" >&2; }
    if [ -s "$WORK/logs/audit.log" ]; then
        say "Component deletions by client (audit log):"
        jq -r 'select(.verb == "delete" and .stage == "ResponseComplete")
            | "\(.user.username) \(.userAgent | split(" ")[0]) \(.responseStatus.code)"' \
            "$WORK/logs/audit.log" | sort | uniq -c >&2
    fi
}
