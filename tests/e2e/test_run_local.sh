#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `make run` (tests/env/run-local.sh) end to end, non-interactively: with --once it starts its
# own control plane, both daemons and the sample git repository (a templated kustomization
# and a Helm chart), and both sample Components reach Ready (shown by `kubectl get comp`);
# then it removes everything it made. Without --once (and here with --v1beta1, so that `comp`
# is v1beta1 and goes through the conversion webhook) it keeps running until a signal and
# cleans up the same way. The daemons are the test build's (CO_RUN_BIN_DIR), so nothing is
# rebuilt here.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/component-operator"
KUBECTL=${KUBECTL:-$(command -v kubectl || echo "$CACHE/bin/kubectl")}
BIN=${CO_RUN_BIN_DIR:-$ROOT/build/test}
if [ ! -x "$BIN/component-controller" ] || [ ! -x "$BIN/component-webhook" ]; then
    tap_fail "test_run_local__daemons_built" "no daemons in $BIN; run make test-build"
    tap_done
    exit
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/co-e2e-run-local-XXXXXX")
bg=""
cleanup() {
    [ -n "$bg" ] && kill -TERM "$bg" 2>/dev/null && wait "$bg" 2>/dev/null
    rm -rf "$out"
}
trap cleanup EXIT

# (through env, which execs: $! of a background run is the script itself, not a subshell)
run_local() {
    env CO_RUN_BIN_DIR="$BIN" CO_RUN_SKIP_DEPS=1 "$ROOT/tests/env/run-local.sh" "$@"
}
# state_dir LOG: the state directory run-local.sh announced.
state_dir() {
    sed -n 's/.*logs in \(.*\)\/logs).*/\1/p' "$1" | head -n 1
}
# nothing_left DIR: the directory is gone and no process mentions it any more.
nothing_left() {
    [ -n "$1" ] && [ ! -e "$1" ] && ! pgrep -f -- "$1" >/dev/null
}

# --- --once ---------------------------------------------------------------------------------------

run_local --once --timeout 300 >"$out/once.out" 2>"$out/once.err"
rc=$?
if [ "$rc" = 0 ]; then
    tap_ok "test_run_local__once_exits_zero"
else
    tap_fail "test_run_local__once_exits_zero" "exit $rc" "$(tail -n 30 "$out/once.err")"
fi
# `kubectl get comp -A` lists both, Ready
for c in sample-base sample-app; do
    if grep -qE "^samples +$c +Ready " "$out/once.out"; then
        tap_ok "test_run_local__get_comp_shows_${c//-/_}_ready"
    else
        tap_fail "test_run_local__get_comp_shows_${c//-/_}_ready" "$(cat "$out/once.out")"
    fi
done
tap_check "test_run_local__webhook_used_self_managed_certificates" \
    grep -q 'starting component-webhook (self-managed certificates' "$out/once.err"
dir=$(state_dir "$out/once.err")
sleep 1
tap_check "test_run_local__once_cleans_up" nothing_left "$dir"

# --- until interrupted --------------------------------------------------------------------------

env CO_RUN_BIN_DIR="$BIN" CO_RUN_SKIP_DEPS=1 "$ROOT/tests/env/run-local.sh" --timeout 300 \
    --v1beta1 >"$out/run.out" 2>"$out/run.err" &
bg=$!
end=$(($(date +%s) + 400))
while [ "$(date +%s)" -lt "$end" ] && kill -0 "$bg" 2>/dev/null &&
    ! grep -q 'Press Ctrl-C' "$out/run.err"; do
    sleep 1
done
tap_check "test_run_local__interactive_reaches_ready_and_waits" grep -q 'Press Ctrl-C' "$out/run.err"
sleep 3
tap_check "test_run_local__interactive_still_running" kill -0 "$bg"
dir=$(state_dir "$out/run.err")
kubeconfig=$(sed -n 's/^  export KUBECONFIG=//p' "$out/run.err" | head -n 1)
tap_check "test_run_local__printed_kubeconfig_works" \
    "$KUBECTL" --kubeconfig "$kubeconfig" get components.v1alpha1.core.cs.sap.com -A
tap_eq "test_run_local__v1beta1_get_comp_converts" "core.cs.sap.com/v1beta1 sample-base" \
    "$("$KUBECTL" --kubeconfig "$kubeconfig" -n samples get comp sample-app \
        -o 'jsonpath={.apiVersion} {.spec.dependencies[0].name}' 2>&1)"
# what the samples rendered: the templated kustomization with the Component's values over the
# defaults of its .component-config.yaml, the Helm chart with its release and chart metadata
ks() { "$KUBECTL" --kubeconfig "$kubeconfig" -n samples "$@"; }
tap_eq "test_run_local__kustomization_template_takes_component_values" "hello from make run" \
    "$(ks get configmap sample-settings -o 'jsonpath={.data.greeting}' 2>&1)"
tap_eq "test_run_local__kustomization_template_keeps_config_defaults" "BLUE" \
    "$(ks get configmap sample-settings -o 'jsonpath={.data.colour}' 2>&1)"
tap_eq "test_run_local__helm_chart_rendered_as_release" "sample-app in samples" \
    "$(ks get configmap sample-app -o 'jsonpath={.data.release}' 2>&1)"
tap_eq "test_run_local__helm_chart_metadata" "sample-app-0.1.0" \
    "$(ks get serviceaccount sample-app -o 'jsonpath={.metadata.labels.helm\.sh/chart}' 2>&1)"
kill -TERM "$bg"
wait "$bg"
rc=$?
bg=""
tap_eq "test_run_local__signal_ends_it" "143" "$rc"
sleep 1
tap_check "test_run_local__signal_cleans_up" nothing_left "$dir"
tap_check "test_run_local__signal_said_cleaning_up" grep -q 'cleaning up' "$out/run.err"
if [ "$TAP_FAILED" != 0 ]; then
    sed 's/^/# /' "$out/run.err" | tail -n 30
fi

tap_done
