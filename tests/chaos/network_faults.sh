#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Slow and failing network campaign (docs/chaos.md): two component-controller replicas with
# leader election, each reaching kube-apiserver through its own fault proxy
# (tests/chaos/faultproxy.py: latency, connection resets, stalls, a new fault every few
# seconds), while the Components churn. A replica that loses its lease exits, as it should, and
# is started again. Afterwards the proxies stop injecting faults and the end state is checked
# as in controller_kill.sh; and from the replicas' logs (each reconcile is logged with its
# time) no two replicas acted at the same time: the span from a process becoming leader to
# its last reconcile never overlaps the span of a process of the other replica.
#
#   tests/chaos/network_faults.sh
#
# Environment: CHAOS_COMPONENTS (30), CHAOS_FAULT_SECONDS (300: how long faults are injected),
# CHAOS_FAULT_PERIOD (3: seconds per fault), CHAOS_CHURN_INTERVAL (0.5), CHAOS_SETTLE_SECONDS
# (600), CHAOS_SUMMARY, CO_TEST_KUBECONFIG (else a private control plane), CHAOS_BIN_DIR.
set -uo pipefail
CAMPAIGN=network_faults
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

N=${CHAOS_COMPONENTS:-30}
FAULT_SECONDS=${CHAOS_FAULT_SECONDS:-300}
PERIOD=${CHAOS_FAULT_PERIOD:-3}
INTERVAL=${CHAOS_CHURN_INTERVAL:-0.5}
SETTLE=${CHAOS_SETTLE_SECONDS:-600}

chaos_setup || { say "set-up failed"; exit 1; }
start=$SECONDS
api=$(sed -n 's/^    server: https:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$CO_TEST_KUBECONFIG" | head -n 1)
[ -n "$api" ] || { say "no API server port in $CO_TEST_KUBECONFIG"; exit 1; }

declare -A PROXY_PID REPLICA_PID REPLICA_STARTS
for r in a b; do
    port=$(free_port)
    python3 "$ROOT/tests/chaos/faultproxy.py" "$port" 127.0.0.1 "$api" "$PERIOD" \
        "$WORK/proxy-$r.stats" 2>>"$WORK/logs/proxy-$r.log" &
    PROXY_PID[$r]=$!
    sed "s|^    server: https://127.0.0.1:$api\$|    server: https://127.0.0.1:$port|" \
        "$CO_TEST_KUBECONFIG" >"$WORK/kubeconfig-$r"
    REPLICA_STARTS[$r]=0
done

# replica_start R: a controller replica through proxy R, logging at debug level.
replica_start() {
    local r=$1
    REPLICA_STARTS[$r]=$((REPLICA_STARTS[$r] + 1))
    echo "=== start ${REPLICA_STARTS[$r]}" >>"$WORK/logs/ctl-$r.log"
    "$CONTROLLER" --kubeconfig "$WORK/kubeconfig-$r" --namespace "$CNS" --leader-elect \
        --leader-election-namespace "$CNS" --metrics-bind-address 0 \
        --health-probe-bind-address "127.0.0.1:$(free_port)" \
        --source-cache-dir "$WORK/cache-$r" --log-level debug >>"$WORK/logs/ctl-$r.log" 2>&1 &
    REPLICA_PID[$r]=$!
}

network_cleanup() {
    local r
    for r in a b; do
        [ -n "${REPLICA_PID[$r]:-}" ] && { kill -TERM "${REPLICA_PID[$r]}" 2>/dev/null; wait "${REPLICA_PID[$r]}" 2>/dev/null; }
    done
    # the finalizers are removed by chaos_cleanup; the proxies go last
    chaos_cleanup
    for r in a b; do
        [ -n "${PROXY_PID[$r]:-}" ] && { kill -TERM "${PROXY_PID[$r]}" 2>/dev/null; wait "${PROXY_PID[$r]}" 2>/dev/null; }
    done
}
trap network_cleanup EXIT

replica_start a
replica_start b
create_all "$N" || { say "creating the Components failed"; exit 1; }
churn_start "$N" "$INTERVAL"
end=$((SECONDS + FAULT_SECONDS))
while [ $SECONDS -lt $end ]; do
    for r in a b; do
        if ! kill -0 "${REPLICA_PID[$r]}" 2>/dev/null; then
            wait "${REPLICA_PID[$r]}" 2>/dev/null
            replica_start "$r"
        fi
    done
    sleep 1
done
say "faults end; churn stops, the replicas settle"
for r in a b; do kill -USR1 "${PROXY_PID[$r]}" 2>/dev/null; done
churn_stop
settled=1
settle "$SETTLE" || settled=0
verify
not_ready=$(printf '%s' "${NOT_READY:-}" | grep -c .)
stuck=$(printf '%s' "${STUCK:-}" | grep -c .)

# acting spans: per process (a log segment), from "became leader" to its last "reconciled"
overlaps=$(python3 - "$WORK/logs/ctl-a.log" "$WORK/logs/ctl-b.log" 2>"$WORK/overlap.txt" <<'PY'
import re, sys
spans = []
for path in sys.argv[1:]:
    seg, led, last, unled = 0, None, None, 0
    def close():
        if led is not None and last is not None:
            spans.append((led, last, path, seg))
    for line in open(path, errors="replace"):
        if line.startswith("=== start"):
            close()
            seg, led, last = seg + 1, None, None
            continue
        m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z ", line)
        if not m:
            continue
        t = m.group(1)
        if 'msg="became leader"' in line and led is None:
            led = t
        elif "msg=reconciled" in line:
            if led is None:
                unled += 1
                print("%s segment %d: reconciled before becoming leader: %s" % (path, seg, line.strip()), file=sys.stderr)
            else:
                last = t
    close()
n = 0
spans.sort()
for i in range(len(spans)):
    for j in range(i + 1, len(spans)):
        a, b = spans[i], spans[j]
        if a[2] != b[2] and b[0] <= a[1]:
            n += 1
            print("overlap: %s #%d acted %s..%s, %s #%d became leader %s" % (a[2], a[3], a[0], a[1], b[2], b[3], b[0]), file=sys.stderr)
print(n + unled, len(spans))
PY
)
read -r overlap_count spans <<<"$overlaps"
stat() { sed -n "s/^$2=//p" "$WORK/proxy-$1.stats" 2>/dev/null | head -n 1; }

summary "campaign" "$CAMPAIGN"
summary "components" "$N"
summary "churn operations" "$(churn_ops)"
summary "fault seconds" "$FAULT_SECONDS (a new fault every ${PERIOD}s)"
for r in a b; do
    summary "proxy $r faults" "latency $(stat "$r" latency), resets $(stat "$r" reset), stalls $(stat "$r" stall), connections $(stat "$r" connections)"
    summary "replica $r starts" "${REPLICA_STARTS[$r]}"
done
summary "leadership terms" "${spans:-0}"
summary "overlapping leaders" "${overlap_count:-unknown}"
summary "objects checked" "$OBJECTS"
summary "leaks" "$LEAKS"
summary "lost" "$LOST"
summary "not ready" "$not_ready"
summary "stuck finalizers" "$stuck"
summary "seconds" "$((SECONDS - start))"
ok=1
[ "$settled" = 1 ] && [ "$LEAKS" = 0 ] && [ "$LOST" = 0 ] && [ "${overlap_count:-1}" = 0 ] &&
    [ "$OBJECTS" -gt 0 ] || ok=0
summary "result" "$([ $ok = 1 ] && echo PASS || echo FAIL)"
summary_print
if [ $ok != 1 ]; then
    [ -s "$WORK/overlap.txt" ] && { say "leadership:"; head -n 20 "$WORK/overlap.txt" >&2; }
    fail_details
    for r in a b; do say "replica $r log (last 15 lines):"; tail -n 15 "$WORK/logs/ctl-$r.log" >&2; done
    exit 1
fi
