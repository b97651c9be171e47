#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `make run` (tests/env/run-local.sh) end to end: with --once it starts its own control plane,
# both daemons and the sample git repository (a templated kustomization and a Helm chart), and
# both sample Components reach Ready (shown by `kubectl get comp`); then it removes everything it
# made. Without --once (and here with --v1beta1, so that `comp` is v1beta1 and goes through the
# conversion webhook) it keeps running until interrupted: SIGINT sent to its whole process group
# (what a terminal's Ctrl-C does), and Ctrl-C typed on a pseudo-terminal running `make run`,
# each end in a clean stop with exit status 0 that deletes the samples first and leaves no
# process and no temporary directory behind. The daemons are the test build's
# (CO_RUN_BIN_DIR), so nothing is rebuilt here.
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
    # a run that did not stop: its whole process group
    if [ -n "$bg" ]; then
        kill -KILL -- "-$bg" 2>/dev/null || kill -KILL "$bg" 2>/dev/null
        wait "$bg" 2>/dev/null
    fi
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

# --- until interrupted: SIGINT to the process group ---------------------------------------------

# in_own_group CMD...: execs CMD as the leader of a new session and process group, with SIGINT
# and SIGQUIT at their defaults (a script's background job inherits them ignored; a terminal's
# foreground job has them), so that `kill -INT -- -PID` stands for Ctrl-C on a terminal.
# It execs itself too, so that the $! of `in_own_group ... &` is that process.
in_own_group() {
    exec python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
os.setsid()
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}
# exited_within SECONDS PID: waits until PID has exited, at most SECONDS (a bound against a
# hang, not a timing requirement).
exited_within() {
    local end=$(($(date +%s) + $1))
    while kill -0 "$2" 2>/dev/null; do
        [ "$(date +%s)" -lt "$end" ] || return 1
        sleep 0.2
    done
}
# nothing_left_of DIR ETCD_DATA TMP: the state directory, etcd's data and every process naming
# either are gone, and TMP (the run's private TMPDIR) is empty.
nothing_left_of() {
    if ! nothing_left "$1"; then
        echo "$1 or a process naming it remains:"
        pgrep -af -- "$1"
        return 1
    fi
    if [ -n "$2" ] && { [ -e "$2" ] || pgrep -f -- "$2" >/dev/null; }; then
        echo "etcd data $2 or its process remains"
        return 1
    fi
    if [ -n "$(ls -A "$3")" ]; then
        echo "left in TMPDIR:"
        ls -lA "$3"
        return 1
    fi
}

mkdir -p "$out/tmp-int"
in_own_group env CO_RUN_BIN_DIR="$BIN" CO_RUN_SKIP_DEPS=1 TMPDIR="$out/tmp-int" \
    "$ROOT/tests/env/run-local.sh" --timeout 300 --v1beta1 >"$out/run.out" 2>"$out/run.err" &
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
etcd_data=$(cat "$dir/controlplane/etcd-data.path" 2>/dev/null)
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
# Ctrl-C on a terminal signals every process of the foreground group at once
start=$(date +%s)
kill -INT -- "-$bg"
if exited_within 90 "$bg"; then
    wait "$bg"
    rc=$?
    echo "# exited $(($(date +%s) - start)) s after SIGINT"
else
    rc="still running 90 s after SIGINT"
    kill -KILL -- "-$bg" 2>/dev/null || kill -KILL "$bg" 2>/dev/null
    wait "$bg" 2>/dev/null
fi
bg=""
tap_eq "test_run_local__sigint_to_the_group_exits_zero" "0" "$rc"
tap_check "test_run_local__sigint_deletes_the_samples_first" \
    grep -q 'the sample Components are deleted' "$out/run.err"
if grep -q 'error:' "$out/run.err"; then
    tap_fail "test_run_local__sigint_reports_no_error" "$(grep 'error:' "$out/run.err")"
else
    tap_ok "test_run_local__sigint_reports_no_error"
fi
sleep 1
tap_check "test_run_local__sigint_leaves_nothing_behind" \
    nothing_left_of "$dir" "$etcd_data" "$out/tmp-int"
if [ "$TAP_FAILED" != 0 ]; then
    sed 's/^/# /' "$out/run.err" | tail -n 30
fi

# --- make run on a terminal: Ctrl-C typed -------------------------------------------------------

failed_before=$TAP_FAILED
mkdir -p "$out/tmp-make"
result=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL CO_RUN_BIN_DIR="$BIN" CO_RUN_SKIP_DEPS=1 \
    TMPDIR="$out/tmp-make" python3 "$ROOT/tests/support/pty_ctrl_c.py" "$out/make.log" \
    'Press Ctrl-C' 400 90 -- make -s --no-print-directory -C "$ROOT" run \
    RUN_ARGS="--timeout 300" 2>&1)
tr -d '\r' <"$out/make.log" >"$out/make.txt"
grep -o 'exited .* after Ctrl-C' "$out/make.txt" | sed 's/^/# /'
tap_eq "test_run_local__ctrl_c_in_make_run_exits_zero" "exit 0" "$result"
if grep -qE 'Interrupt|error:|\*\*\*' "$out/make.txt"; then
    tap_fail "test_run_local__ctrl_c_in_make_run_is_a_clean_stop" \
        "$(grep -E 'Interrupt|error:|\*\*\*' "$out/make.txt")"
else
    tap_check "test_run_local__ctrl_c_in_make_run_is_a_clean_stop" \
        grep -q 'the sample Components are deleted' "$out/make.txt"
fi
dir=$(state_dir "$out/make.txt")
sleep 1
tap_check "test_run_local__ctrl_c_in_make_run_leaves_nothing_behind" \
    nothing_left_of "$dir" "" "$out/tmp-make"
if [ "$TAP_FAILED" != "$failed_before" ]; then
    sed 's/^/# /' "$out/make.txt" | tail -n 30
fi

tap_done
