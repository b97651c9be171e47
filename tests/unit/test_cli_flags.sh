#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Both daemons take the command lines the Go operator's Deployments pass: controller-runtime's
# zap flags as aliases of --log-level/--log-format (values checked as controller-runtime checks
# them; flags without an equivalent accepted with a warning; unknown --zap-* flags a warning,
# not an exit) and Go's single-dash forms of every flag. Without a cluster the daemons get past
# the flags and stop at the kubeconfig (exit 1); a refused flag is a usage error (exit 2).
set -uo pipefail
ROOT=${CO_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/support/tap.sh"
CTL=${CO_CONTROLLER_BIN:-$ROOT/build/test/component-controller}
WH=${CO_WEBHOOK_BIN:-$ROOT/build/test/component-webhook}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
missing=$TMP/no-such-kubeconfig

# run DAEMON ARGS...: stderr in $TMP/err, exit status in $rc
run() {
    "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
}

# The Go chart's arguments (chart/templates/deployment.yaml), zap flags as users add them,
# and the single-dash spellings of Go's flag package.
run "$CTL" -kubeconfig "$missing" --leader-elect --default-service-account=component-default \
    --max-concurrent-reconciles=3 \
    --events-address=http://notification-controller.flux-system.svc.cluster.local./ \
    --zap-log-level=info --zap-devel=false --zap-encoder=json \
    --zap-stacktrace-level=error --zap-time-encoding=epoch --zap-sampling=false \
    -metrics-bind-address=127.0.0.1:0 -health-probe-bind-address 127.0.0.1:0 -leader-elect=T
tap_eq "controller: the Go operator's arguments get past flag parsing to the kubeconfig" 1 "$rc"
if grep -q "$missing" "$TMP/err" && ! grep -q "unknown flag:" "$TMP/err"; then
    tap_ok "controller: -kubeconfig is the kubeconfig; no flag refused"
else
    tap_fail "controller: -kubeconfig is the kubeconfig; no flag refused" "$(cat "$TMP/err")"
fi
# --zap-encoder=json: every line is a JSON object
if python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1]) if l.strip()]' \
    "$TMP/err" 2>/dev/null; then
    tap_ok "controller: --zap-encoder=json logs JSON"
else
    tap_fail "controller: --zap-encoder=json logs JSON" "$(cat "$TMP/err")"
fi
for want in 'flag --zap-stacktrace-level=error has no effect' \
    'flag --zap-time-encoding=epoch has no effect' 'unknown flag --zap-sampling=false ignored'; do
    if grep -q -- "\"level\":\"warn\".*$want" "$TMP/err"; then
        tap_ok "controller: warns \"$want\""
    else
        tap_fail "controller: warns \"$want\"" "$(cat "$TMP/err")"
    fi
done

# --zap-devel: text lines at debug level
run "$CTL" --kubeconfig "$missing" --zap-devel
if [ "$rc" = 1 ] && grep -q 'level=info' "$TMP/err" && ! grep -q '^{' "$TMP/err"; then
    tap_ok "controller: --zap-devel logs text"
else
    tap_fail "controller: --zap-devel logs text" "rc=$rc" "$(cat "$TMP/err")"
fi

# values controller-runtime refuses are refused, naming the flag
for bad in --zap-log-level=loud --zap-encoder=logfmt --zap-stacktrace-level=debug \
    --zap-time-encoding=unix --zap-devel=maybe; do
    run "$CTL" --kubeconfig "$missing" "$bad"
    name=${bad%%=*}
    if [ "$rc" = 2 ] && grep -q -- "$name" "$TMP/err"; then
        tap_ok "controller: $bad is a usage error naming the flag"
    else
        tap_fail "controller: $bad is a usage error naming the flag" "rc=$rc" "$(cat "$TMP/err")"
    fi
done
run "$CTL" --kubeconfig "$missing" --no-such-flag
tap_eq "controller: other unknown flags stay usage errors" 2 "$rc"
# the client-side rate limit: accepted in range, refused (named) outside it
run "$CTL" --kubeconfig "$missing" --kube-api-qps=50 --kube-api-burst=80 --dependent-events
tap_eq "controller: --kube-api-qps, --kube-api-burst and --dependent-events get to the kubeconfig" 1 "$rc"
run "$CTL" --kubeconfig "$missing" --cache-dependents=false
tap_eq "controller: --cache-dependents=false gets to the kubeconfig" 1 "$rc"
run "$CTL" --kubeconfig "$missing" --cache-dependents=maybe
tap_eq "controller: --cache-dependents takes a boolean" 2 "$rc"
for bad in --kube-api-qps=-1 --kube-api-burst=-5 --kube-api-qps=100001; do
    run "$CTL" --kubeconfig "$missing" "$bad"
    if [ "$rc" = 2 ] && grep -q -- "--kube-api-qps must be" "$TMP/err"; then
        tap_ok "controller: $bad is a usage error naming the flag"
    else
        tap_fail "controller: $bad is a usage error naming the flag" "rc=$rc" "$(cat "$TMP/err")"
    fi
done
run "$CTL" --kubeconfig "$missing" --events-address=notification-controller:80
if [ "$rc" = 1 ] && grep -q -- '--events-address: events address .*notification-controller:80.*: not an http:// or https:// URL' "$TMP/err"; then
    tap_ok "controller: an --events-address that is no http(s) URL stops the start, named"
else
    tap_fail "controller: an --events-address that is no http(s) URL stops the start, named" \
        "rc=$rc" "$(cat "$TMP/err")"
fi

# the webhook shares the parser and the logging flags
run "$WH" -kubeconfig "$missing" --zap-log-level=debug --zap-encoder=console --zap-foo=bar \
    -metrics-bind-address=127.0.0.1:0 -health-probe-bind-address=127.0.0.1:0 \
    -webhook-bind-address=127.0.0.1:0
if [ "$rc" != 2 ] && grep -q 'unknown flag --zap-foo=bar ignored' "$TMP/err" &&
    ! grep -q "unknown flag:" "$TMP/err"; then
    tap_ok "webhook: zap and single-dash flags are accepted"
else
    tap_fail "webhook: zap and single-dash flags are accepted" "rc=$rc" "$(cat "$TMP/err")"
fi
run "$WH" --zap-encoder=xml
tap_eq "webhook: a bad --zap-encoder is a usage error" 2 "$rc"
tap_done
