#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Soak (docs/chaos.md): SOAK_MINUTES of Component churn at a steady rate against both daemons
# (every write admitted by component-webhook, every Component reconciled by
# component-controller). Every SOAK_SAMPLE_SECONDS the resident memory (VmRSS), open file
# descriptors (/proc/PID/fd) and threads of each daemon are sampled and printed. The first third
# of the run is warm-up. The run fails when a daemon's memory at the end (the mean of the last
# three samples) exceeds its memory after warm-up (the mean of the three samples after it) by
# more than 5%, when its descriptors or threads at the end (the median of the last three
# samples) exceed the most seen in the first half after warm-up by more than max(4, 10%), or
# when the end state shows a leak or a loss.
#
#   tests/chaos/soak.sh
#
# Environment: SOAK_MINUTES (30), SOAK_SAMPLE_SECONDS (10), CHAOS_COMPONENTS (20),
# CHAOS_CHURN_INTERVAL (0.5 s between operations), CHAOS_SUMMARY, CO_TEST_KUBECONFIG (else a
# private control plane), CHAOS_BIN_DIR.
set -uo pipefail
CAMPAIGN=soak
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

MINUTES=${SOAK_MINUTES:-30}
EVERY=${SOAK_SAMPLE_SECONDS:-10}
N=${CHAOS_COMPONENTS:-20}
INTERVAL=${CHAOS_CHURN_INTERVAL:-0.5}

chaos_setup || { say "set-up failed"; exit 1; }
[ -x "$WEBHOOK" ] || { say "missing $WEBHOOK"; exit 1; }
start=$SECONDS
wh_certs || { say "test certificates failed"; exit 1; }
wh_start
wait_ready "$WH_PROBE" 120 || { say "the webhook did not become ready"; exit 1; }
wh_register "$WORK/ca.crt" || { say "registering the webhook failed"; exit 1; }
ctl_start
wait_ready "$CTL_PROBE" 120 || { say "the controller did not become ready"; exit 1; }
create_all "$N" || { say "creating the Components failed"; exit 1; }
churn_start "$N" "$INTERVAL"

# sample PID: VmRSS (KiB), open descriptors, threads
sample() {
    local rss thr fds
    rss=$(awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status" 2>/dev/null)
    thr=$(awk '$1 == "Threads:" {print $2}' "/proc/$1/status" 2>/dev/null)
    fds=$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    echo "${rss:-0} $fds ${thr:-0}"
}

samples=$((MINUTES * 60 / EVERY))
[ "$samples" -ge 9 ] || samples=9
printf '%6s %8s | %10s %5s %4s | %10s %5s %4s\n' second ops "ctl KiB" fds thr "wh KiB" fds thr
: >"$WORK/samples"
t0=$SECONDS
died=0
for s in $(seq 1 "$samples"); do
    sleep $((t0 + s * EVERY - SECONDS > 0 ? t0 + s * EVERY - SECONDS : 0))
    if ! kill -0 "$CTL_PID" 2>/dev/null || ! kill -0 "$WH_PID" 2>/dev/null; then
        say "a daemon exited"
        died=1
        break
    fi
    read -r cr cf ct <<<"$(sample "$CTL_PID")"
    read -r wr wf wt <<<"$(sample "$WH_PID")"
    echo "$cr $cf $ct $wr $wf $wt" >>"$WORK/samples"
    printf '%6d %8d | %10d %5d %4d | %10d %5d %4d\n' $((SECONDS - t0)) "$(churn_ops)" \
        "$cr" "$cf" "$ct" "$wr" "$wf" "$wt"
done
churn_stop
settle 300 || true
verify
not_ready=$(printf '%s' "${NOT_READY:-}" | grep -c .)
stuck=$(printf '%s' "${STUCK:-}" | grep -c .)

# judge COLUMN: prints "after-warm-up end growth-% verdict" for the memory column, or
# "bound end verdict" for a count column
n=$(wc -l <"$WORK/samples")
warm=$((n / 3))
half=$(((warm + n) / 2))
mem() {
    awk -v c="$1" -v w="$warm" -v n="$n" '
        { v[NR] = $c }
        END {
            for (i = w + 1; i <= w + 3; i++) a += v[i]; a /= 3
            for (i = n - 2; i <= n; i++) e += v[i]; e /= 3
            g = a > 0 ? (e - a) * 100 / a : 0
            printf "%d %d %.1f %s\n", a, e, g, (g > 5 ? "FAIL" : "ok")
        }' "$WORK/samples"
}
count() {
    awk -v c="$1" -v w="$warm" -v h="$half" -v n="$n" '
        { v[NR] = $c }
        END {
            for (i = w + 1; i <= h; i++) if (v[i] > m) m = v[i]
            # the median of the last three: a count that grows is high in all of them, a
            # passing peak (requests in flight, a source being fetched) in one
            a = v[n - 2]; b = v[n - 1]; c = v[n]
            hi = a > b ? a : b; hi = hi > c ? hi : c
            lo = a < b ? a : b; lo = lo < c ? lo : c
            e = a + b + c - hi - lo
            slack = m / 10 > 4 ? m / 10 : 4
            printf "%d %d %s\n", m, e, (e > m + slack ? "FAIL" : "ok")
        }' "$WORK/samples"
}

ok=1
[ "$died" = 0 ] && [ "$n" -ge 9 ] || ok=0
summary "campaign" "$CAMPAIGN"
summary "minutes" "$MINUTES"
summary "samples" "$n every ${EVERY}s (warm-up: $warm)"
summary "churn operations" "$(churn_ops)"
for d in controller:1 webhook:4; do
    name=${d%:*}
    col=${d#*:}
    read -r a e g v <<<"$(mem "$col")"
    summary "$name RSS growth %" "$g ($a -> $e KiB) $v"
    [ "$v" = ok ] || ok=0
    read -r m e v <<<"$(count $((col + 1)))"
    summary "$name fds" "$e (bound $m) $v"
    [ "$v" = ok ] || ok=0
    read -r m e v <<<"$(count $((col + 2)))"
    summary "$name threads" "$e (bound $m) $v"
    [ "$v" = ok ] || ok=0
done
summary "objects checked" "$OBJECTS"
summary "leaks" "$LEAKS"
summary "lost" "$LOST"
summary "not ready" "$not_ready"
summary "stuck finalizers" "$stuck"
[ "$LEAKS" = 0 ] && [ "$LOST" = 0 ] && [ "$not_ready" = 0 ] && [ "$stuck" = 0 ] || ok=0
summary "seconds" "$((SECONDS - start))"
summary "result" "$([ $ok = 1 ] && echo PASS || echo FAIL)"
summary_print
[ $ok = 1 ] || { fail_details; exit 1; }
