#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# component-operator on this machine, in one command (`make run`): installs what is missing
# (tests/env/deps.sh), builds both daemons, starts a local control plane (the test harness's
# etcd and kube-apiserver, tests/env/controlplane.sh), installs the CRDs (those of the default
# install: Components served as v1alpha1 only; with --v1beta1 as v1beta1 too), starts
# component-webhook with self-managed certificates and component-controller, creates a sample
# git repository served over smart HTTP on 127.0.0.1 (no Flux needed) holding a templated
# kustomization and a Helm chart, applies two sample Components (the chart's depends on the
# kustomization's), shows them reaching Ready with
# `kubectl get comp`, then keeps running until interrupted and removes everything on exit.
# Ctrl-C (SIGINT to the whole foreground process group), SIGTERM or SIGHUP is a stop that was
# asked for: the sample Components are deleted while the controller still runs (a bounded
# wait), then the daemons and the control plane stop, and the exit status is 0. The daemons run
# in sessions of their own, so that the terminal's signal reaches only this script.
#
#   tests/env/run-local.sh            interactive: runs until Ctrl-C
#   tests/env/run-local.sh --once     stops once both Components are Ready (exit 0) or after
#                                     --timeout seconds (exit 1); used by the e2e suite
#   tests/env/run-local.sh --v1beta1  the Component CRD of crds/v1beta1/ (README.md, "Serving
#                                     v1beta1"), converted by the local component-webhook
#
# Environment: CO_RUN_BIN_DIR=DIR takes the daemons from DIR instead of building build/release
# (the e2e suite uses build/test); CO_RUN_SKIP_DEPS=1 skips the dependency check;
# CO_RUN_DIR=DIR keeps the state (control plane, logs, repository) in DIR.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

once=0
v1beta1=0
timeout=300
while [ $# -gt 0 ]; do
    case $1 in
    --once) once=1 ;;
    --v1beta1) v1beta1=1 ;;
    --timeout)
        timeout=$2
        shift
        ;;
    -h | --help)
        sed -n '3,26p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "run-local: unknown argument $1 (see --help)" >&2
        exit 2
        ;;
    esac
    shift
done

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/component-operator"
NS_OP=component-operator
NS_SAMPLES=samples
say() { printf '\033[1m[run]\033[0m %s\n' "$*" >&2; }
die() {
    say "error: $*"
    exit 1
}

# --- dependencies and build --------------------------------------------------------------------

need_deps() {
    local t
    for t in gcc make pkg-config etcd git python3 curl openssl; do
        command -v "$t" >/dev/null 2>&1 || return 0
    done
    pkg-config --exists json-c yaml-0.1 libcurl openssl libgit2 libmicrohttpd gnutls libarchive \
        gpgme libpcre2-8 2>/dev/null || return 0
    python3 -c 'import yaml' 2>/dev/null || return 0
    [ -x "$CACHE/bin/helm" ] || return 0
    command -v kubectl >/dev/null 2>&1 || [ -x "$CACHE/bin/kubectl" ] || return 0
    return 1
}
if [ "${CO_RUN_SKIP_DEPS:-0}" != 1 ] && need_deps; then
    say "installing what is missing (tests/env/deps.sh)"
    "$ROOT/tests/env/deps.sh" || die "tests/env/deps.sh failed"
fi
KUBECTL=${KUBECTL:-$(command -v kubectl || echo "$CACHE/bin/kubectl")}

if [ -n "${CO_RUN_BIN_DIR:-}" ]; then
    BIN=$CO_RUN_BIN_DIR
else
    say "building both daemons (make release)"
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$ROOT" \
        -j"$(nproc 2>/dev/null || echo 2)" release || die "build failed"
    BIN=$ROOT/build/release
fi
if [ ! -x "$BIN/component-controller" ] || [ ! -x "$BIN/component-webhook" ]; then
    die "no daemons in $BIN"
fi

# --- state and clean-up ------------------------------------------------------------------------

work=${CO_RUN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/co-run-XXXXXX")}
mkdir -p "$work/logs"
cp_dir=$work/controlplane
pids=()
ctl_pid=""
cp_started=0
samples_applied=0
cleaned=0
# How long the sample Components may take to go (their objects are deleted first).
DELETE_WAIT=20

# running PID: the process exists and is not a zombie awaiting its parent.
running() {
    local state
    state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
    [ -n "$state" ] && [ "$state" != Z ]
}

any_running() {
    local p
    for p in "${pids[@]}"; do
        running "$p" && return 0
    done
    return 1
}

# stop_daemons: SIGTERM to each, up to 10 s to finish their shutdown, then SIGKILL.
stop_daemons() {
    local p i
    for p in "${pids[@]}"; do
        kill -TERM "$p" 2>/dev/null
    done
    for i in $(seq 1 100); do
        any_running || break
        sleep 0.1
    done
    for p in "${pids[@]}"; do
        if running "$p"; then
            say "pid $p did not stop within 10 s; killing it"
            kill -KILL "$p" 2>/dev/null
        fi
        wait "$p" 2>/dev/null
    done
}

cleanup() {
    [ "$cleaned" = 1 ] && return
    cleaned=1
    # Another Ctrl-C while cleaning up cuts the wait for the Components short (kubectl, in this
    # process group, gets it); the daemons and the control plane are stopped all the same.
    trap ':' INT TERM HUP
    say "cleaning up"
    if [ "$samples_applied" = 1 ] && [ -n "$ctl_pid" ] && running "$ctl_pid"; then
        # The Components first, while the controller still runs: it deletes what they deployed
        # and then removes their finalizer.
        if k delete components.v1alpha1.core.cs.sap.com -n "$NS_SAMPLES" --all --wait=true \
            --timeout="${DELETE_WAIT}s" >/dev/null 2>&1; then
            say "the sample Components are deleted"
        else
            say "the sample Components were not deleted within ${DELETE_WAIT}s; they go with the control plane"
        fi
    fi
    stop_daemons
    if [ "$cp_started" = 1 ]; then
        "$ROOT/tests/env/controlplane.sh" stop "$cp_dir" >/dev/null 2>&1 || true
    fi
    if [ -z "${CO_RUN_DIR:-}" ]; then
        rm -rf "$work"
    fi
}
trap cleanup EXIT
# A stop that was asked for ends well: Ctrl-C, kill, a closed terminal.
trap 'exit 0' INT TERM HUP

free_port() {
    python3 "$ROOT/tests/support/free_port.py"
}

wait_for() { # SECONDS CMD...
    local end=$(($(date +%s) + $1))
    shift
    while [ "$(date +%s)" -lt "$end" ]; do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    return 1
}

# --- control plane and CRDs --------------------------------------------------------------------

say "starting the local control plane (etcd and kube-apiserver; logs in $work/logs)"
"$ROOT/tests/env/controlplane.sh" start "$cp_dir" >"$work/logs/controlplane.log" 2>&1 ||
    { tail -n 20 "$work/logs/controlplane.log" >&2; die "the control plane did not start"; }
cp_started=1
# shellcheck disable=SC1091
. "$cp_dir/env"
KCFG=$CO_TEST_KUBECONFIG
k() { "$KUBECTL" --kubeconfig "$KCFG" --request-timeout=60s "$@"; }

port=$(free_port)
wh_probe=$(free_port)
wh_metrics=$(free_port)
ctl_probe=$(free_port)
ctl_metrics=$(free_port)
url="https://127.0.0.1:$port"

say "installing the CRDs and the webhook configurations (pointing at $url)"
k create namespace "$NS_OP" >/dev/null || die "cannot create namespace $NS_OP"
k apply -f "$ROOT/crds/" >/dev/null || die "cannot install the CRDs"
if [ "$v1beta1" = 1 ]; then
    k apply -f "$ROOT/crds/v1beta1/" >/dev/null || die "cannot install the v1beta1 CRD"
fi
k wait --for=condition=Established --timeout=60s crd --all >/dev/null
if [ "$v1beta1" = 1 ]; then
    # Outside a cluster, the API server reaches the webhook on 127.0.0.1 instead of the Service.
    k patch crd components.core.cs.sap.com --type=json -p \
        "[{\"op\":\"replace\",\"path\":\"/spec/conversion/webhook/clientConfig\",\"value\":{\"url\":\"$url/convert\"}}]" \
        >/dev/null || die "cannot point the conversion webhook at $url"
fi
"$KUBECTL" kustomize "$ROOT/deploy/webhook" | python3 -c '
import json, sys, yaml
url = sys.argv[1]
items = [d for d in yaml.safe_load_all(sys.stdin) if d and d["kind"].endswith("WebhookConfiguration")]
for d in items:
    for w in d["webhooks"]:
        w["clientConfig"] = {"url": url + w["clientConfig"]["service"]["path"]}
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
' "$url" >"$work/webhooks.json" || die "cannot render deploy/webhook"
k apply -f "$work/webhooks.json" >/dev/null || die "cannot register the webhook configurations"

# --- the daemons -------------------------------------------------------------------------------

# Each daemon in a session of its own (setsid execs it: $! is the daemon), out of reach of the
# terminal's Ctrl-C, which this script turns into an orderly stop.
say "starting component-webhook (self-managed certificates; log $work/logs/webhook.log)"
setsid "$BIN/component-webhook" --kubeconfig "$KCFG" --namespace "$NS_OP" --cert-extra-name 127.0.0.1 \
    --webhook-bind-address "127.0.0.1:$port" --health-probe-bind-address "127.0.0.1:$wh_probe" \
    --metrics-bind-address "127.0.0.1:$wh_metrics" >"$work/logs/webhook.log" 2>&1 </dev/null &
pids+=("$!")
wait_for 120 curl -sf "http://127.0.0.1:$wh_probe/readyz" ||
    { tail -n 20 "$work/logs/webhook.log" >&2; die "component-webhook did not become ready"; }

say "starting component-controller (log $work/logs/controller.log)"
setsid "$BIN/component-controller" --kubeconfig "$KCFG" \
    --health-probe-bind-address "127.0.0.1:$ctl_probe" \
    --metrics-bind-address "127.0.0.1:$ctl_metrics" --source-cache-dir "$work/cache" \
    >"$work/logs/controller.log" 2>&1 </dev/null &
ctl_pid=$!
pids+=("$ctl_pid")
wait_for 120 curl -sf "http://127.0.0.1:$ctl_probe/readyz" ||
    { tail -n 20 "$work/logs/controller.log" >&2; die "component-controller did not become ready"; }

# --- the sample repository ---------------------------------------------------------------------

say "creating the sample git repository ($work/git/samples.git)"
src=$work/samples-src
mkdir -p "$src/base" "$src/app/templates" "$work/git"
# base: a templated kustomization. Every file is a Go template whose data root is the
# Component's values merged over the defaults of .component-config.yaml.
cat >"$src/base/.component-config.yaml" <<'YAML'
values:
  greeting: hello from the sample base
  colour: blue
YAML
cat >"$src/base/kustomization.yaml" <<'YAML'
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- settings.yaml
commonLabels:
  app.kubernetes.io/part-of: sample
YAML
cat >"$src/base/settings.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: sample-settings
data:
  greeting: {{ .greeting | quote }}
  colour: {{ .colour | upper | quote }}
YAML
# app: a Helm chart, rendered as `helm template` would with the Component's values.
cat >"$src/app/Chart.yaml" <<'YAML'
apiVersion: v2
name: sample-app
version: 0.1.0
description: The sample application of make run
YAML
cat >"$src/app/values.yaml" <<'YAML'
settings: sample-settings
YAML
cat >"$src/app/templates/app.yaml" <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}
  labels:
    app.kubernetes.io/part-of: sample
    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
  labels:
    app.kubernetes.io/part-of: sample
    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
data:
  uses: {{ .Values.settings | quote }}
  release: {{ .Release.Name }} in {{ .Release.Namespace }}
YAML
(
    cd "$src" && git init -q -b main && git add -A &&
        git -c user.name=sample -c user.email=sample@localhost commit -qm "samples"
) || die "cannot create the sample repository"
git clone -q --bare "$src" "$work/git/samples.git" || die "cannot create the bare repository"
setsid python3 "$ROOT/tests/support/git_http_server.py" --root "$work/git" \
    --port-file "$work/git-port" >"$work/logs/git-http.log" 2>&1 </dev/null &
pids+=("$!")
wait_for 30 test -s "$work/git-port" || die "the git server did not start"
repo="http://127.0.0.1:$(cat "$work/git-port")/samples.git"

# --- the sample Components ---------------------------------------------------------------------

say "applying two Components (sample-app depends on sample-base) from $repo"
k create namespace "$NS_SAMPLES" >/dev/null
cat >"$work/components.yaml" <<YAML
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: sample-base
  namespace: $NS_SAMPLES
spec:
  sourceRef:
    git:
      url: $repo
      ref:
        branch: main
  path: base
  values:
    greeting: hello from make run
---
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: sample-app
  namespace: $NS_SAMPLES
spec:
  sourceRef:
    git:
      url: $repo
      ref:
        branch: main
  path: app
  values:
    settings: sample-settings
  dependencies:
  - name: sample-base
YAML
samples_applied=1
k apply -f "$work/components.yaml" || die "the Components were refused"

both_ready() {
    local s
    s=$(k -n "$NS_SAMPLES" get components.v1alpha1.core.cs.sap.com \
        -o 'jsonpath={range .items[*]}{.metadata.name}={.status.state}{"\n"}{end}')
    grep -qx 'sample-base=Ready' <<<"$s" && grep -qx 'sample-app=Ready' <<<"$s"
}
if ! wait_for "$timeout" both_ready; then
    k get comp -n "$NS_SAMPLES" -o wide >&2
    tail -n 20 "$work/logs/controller.log" >&2
    die "the sample Components did not become Ready within ${timeout}s"
fi
say "both Components are Ready:"
# `comp` is the preferred version: v1beta1 with --v1beta1, and the listing then goes through
# the conversion webhook.
k get comp -A
say "what they deployed:"
k -n "$NS_SAMPLES" get configmaps,serviceaccounts -l app.kubernetes.io/part-of=sample
if [ "$once" = 1 ]; then
    exit 0
fi

cat >&2 <<EOF

The operator is running. In another terminal:

  export KUBECONFIG=$KCFG
  kubectl get comp -A                      # the sample Components
  kubectl -n $NS_SAMPLES get configmaps    # what they deployed
  curl -s http://127.0.0.1:$ctl_metrics/metrics | grep ^component_   # controller metrics

Logs: $work/logs. Press Ctrl-C to stop and remove everything.
EOF
while :; do
    for p in "${pids[@]}"; do
        running "$p" || die "a daemon exited; see $work/logs"
    done
    sleep 2
done
