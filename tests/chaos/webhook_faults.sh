#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Webhook fault campaign (docs/chaos.md): component-webhook (self-managed certificates, the
# webhook configurations of deploy/webhook with failurePolicy Fail) admits M Component writes
# in batches; every fifth batch it is killed with SIGKILL at a random moment of the batch and
# started again. Writes refused while it is down are counted; the batch written again right
# after the restart (readyz) must pass whole, as must every batch while it runs. Then, under
# the same load, the serving certificate (valid 30 s) rotates ROTATIONS times, and the CA (90 s)
# with it: no write may fail.
#
#   tests/chaos/webhook_faults.sh
#
# Environment: CHAOS_ADMISSIONS (1000), CHAOS_BATCH (20 writes per kubectl apply),
# CHAOS_ROTATIONS (10), CHAOS_SUMMARY, CO_TEST_KUBECONFIG (else a private control plane),
# CHAOS_BIN_DIR.
set -uo pipefail
CAMPAIGN=webhook_faults
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

M=${CHAOS_ADMISSIONS:-1000}
B=${CHAOS_BATCH:-20}
ROTATIONS=${CHAOS_ROTATIONS:-10}

chaos_setup || { say "set-up failed"; exit 1; }
[ -x "$WEBHOOK" ] || { say "missing $WEBHOOK"; exit 1; }
start=$SECONDS

WH_FLAGS=(--namespace "$CNS" --cert-extra-name 127.0.0.1
    --validating-webhook-configuration "co-chaos-$SUFFIX"
    --mutating-webhook-configuration "co-chaos-$SUFFIX" --conversion-crd ""
    --ca-validity 90s --cert-validity 30s --cert-backdate 0s --ca-publish-delay 3s
    --cert-check-interval 1s)
WH_PORT=$(free_port) # where wh_register points and wh_start listens
export WH_PORT
wh_register || { say "registering the webhook failed"; exit 1; }
wh_start "${WH_FLAGS[@]}"
wait_ready "$WH_PROBE" 120 || { say "the webhook did not become ready"; tail -n 20 "$WORK/logs/webhook.log" >&2; exit 1; }

metric() { # NAME-AND-LABELS: its value, 0 when absent
    curl -sf "http://127.0.0.1:$WH_PROBE/metrics" |
        awk -v m="$1" '$1 == m {print $2; f=1} END {if (!f) print 0}'
}

# batch FILE ROUND: B Components (names wrap at 50, so objects stay few) labelled with ROUND,
# so that every one is a write the API server admits.
batch() {
    local i
    : >"$1"
    for i in $(seq 1 "$B"); do
        printf 'apiVersion: core.cs.sap.com/v1alpha1\nkind: Component\nmetadata:\n  name: w-%02d\n  namespace: %s\n  labels:\n    round: "%s"\nspec:\n  sourceRef:\n    fluxGitRepository:\n      name: repo\n---\n' \
            $(((BATCH_NO * B + i) % 50)) "$CNS" "$2" >>"$1"
    done
}
# apply FILE: applies it; sets OK and FAILED (writes, from kubectl's per-object lines).
apply() {
    k apply -f "$1" >"$WORK/apply.out" 2>&1
    counted
}
counted() {
    OK=$(grep -cE ' (created|configured)$' "$WORK/apply.out")
    FAILED=$((B - OK))
    [ "$FAILED" = 0 ] || cat "$WORK/apply.out" >>"$WORK/logs/failures.log"
}

# the configurations are in force once the webhook refuses what only it refuses
end=$((SECONDS + 60))
while :; do
    out=$(printf 'apiVersion: core.cs.sap.com/v1alpha1\nkind: Component\nmetadata:\n  name: self\n  namespace: %s\nspec:\n  sourceRef:\n    fluxGitRepository:\n      name: repo\n  dependencies:\n  - name: self\n' "$CNS" |
        k create --dry-run=server -f - 2>&1)
    grep -q 'cannot depend on itself' <<<"$out" && break
    [ $SECONDS -ge $end ] && { say "the webhook configurations never took effect: $out"; exit 1; }
    sleep 0.5
done
# a warm-up round, not counted
BATCH_NO=0
batch "$WORK/b.yaml" warmup
apply "$WORK/b.yaml"

# --- kills during admissions -----------------------------------------------------------------
sent=0
failed_up=0
failed_down=0
failed_after=0
kills=0
restart_ms=0
BATCH_NO=0
while [ "$sent" -lt "$M" ]; do
    BATCH_NO=$((BATCH_NO + 1))
    batch "$WORK/b.yaml" "$BATCH_NO"
    if [ $((BATCH_NO % 5)) = 3 ]; then
        apply "$WORK/b.yaml" &
        ap=$!
        sleep "0.$(printf '%03d' $((RANDOM % 1000)))"
        wh_kill
        kills=$((kills + 1))
        wait "$ap"
        counted # the writes of the batch the kill cut off
        failed_down=$((failed_down + FAILED))
        batch "$WORK/b.yaml" "$BATCH_NO-down"
        apply "$WORK/b.yaml" # while it is down: all refused
        failed_down=$((failed_down + FAILED))
        sent=$((sent + B))
        t0=$(now_ms)
        wh_start "${WH_FLAGS[@]}"
        wait_ready "$WH_PROBE" 60 || { say "the webhook did not come back"; exit 1; }
        restart_ms=$((restart_ms + $(now_ms) - t0))
        batch "$WORK/b.yaml" "$BATCH_NO-again"
        apply "$WORK/b.yaml"
        failed_after=$((failed_after + FAILED))
        sent=$((sent + B))
    else
        apply "$WORK/b.yaml"
        failed_up=$((failed_up + FAILED))
    fi
    sent=$((sent + B))
done
say "$sent admissions, $kills kills: $failed_down refused while down, $failed_after after restarts, $failed_up while up"

# --- certificate rotations under load ------------------------------------------------------------
ser0=$(metric 'component_webhook_certificate_rotations_total{certificate="serving"}')
ca0=$(metric 'component_webhook_certificate_rotations_total{certificate="ca"}')
rot_sent=0
rot_failed=0
end=$((SECONDS + ROTATIONS * 30 + 120))
rotations=0
while [ "$rotations" -lt "$ROTATIONS" ] && [ $SECONDS -lt $end ]; do
    BATCH_NO=$((BATCH_NO + 1))
    batch "$WORK/b.yaml" "$BATCH_NO"
    apply "$WORK/b.yaml"
    rot_failed=$((rot_failed + FAILED))
    rot_sent=$((rot_sent + B))
    rotations=$(($(metric 'component_webhook_certificate_rotations_total{certificate="serving"}') - ser0))
done
ca_rotations=$(($(metric 'component_webhook_certificate_rotations_total{certificate="ca"}') - ca0))

summary "campaign" "$CAMPAIGN"
summary "admissions" "$sent"
summary "webhook kills" "$kills"
summary "refused while down" "$failed_down"
summary "failed right after restart" "$failed_after"
summary "failed while up" "$failed_up"
summary "mean restart to ready" "$((restart_ms / (kills > 0 ? kills : 1))) ms"
summary "writes during rotation" "$rot_sent"
summary "serving rotations" "$rotations"
summary "CA rotations" "$ca_rotations"
summary "failed during rotation" "$rot_failed"
summary "seconds" "$((SECONDS - start))"
ok=1
[ "$failed_after" = 0 ] && [ "$failed_up" = 0 ] && [ "$rot_failed" = 0 ] &&
    [ "$rotations" -ge "$ROTATIONS" ] && [ "$failed_down" -gt 0 ] || ok=0
summary "result" "$([ $ok = 1 ] && echo PASS || echo FAIL)"
summary_print
if [ $ok != 1 ]; then
    [ -s "$WORK/logs/failures.log" ] && { say "failed writes (first 20 lines):"; head -n 20 "$WORK/logs/failures.log" >&2; }
    say "webhook log (last 30 lines):"
    tail -n 30 "$WORK/logs/webhook.log" >&2
    exit 1
fi
