#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# API server and etcd restart campaign (docs/chaos.md): the churn of controller_kill.sh runs
# against both daemons while kube-apiserver is restarted R times (in turn with SIGTERM, its
# graceful shutdown, and SIGKILL, a crash) and etcd once (in the middle).
# After each restart: the time until the controller takes a new Component to Ready (its
# informers resumed), and the time until the webhook refuses a dependency cycle through a
# Component created after the restart (its cluster watch resumed). At the end: no leak, no loss,
# every live Component Ready, and no object of a Component that was never deleted was deleted
# and created again (a reconcile acting on a stale cache).
#
#   tests/chaos/apiserver_restart.sh
#
# Environment: CHAOS_COMPONENTS (100), CHAOS_RESTARTS (10 kube-apiserver restarts; etcd is
# restarted once more, in the middle: CHAOS_ETCD_RESTARTS=0 leaves it out),
# CHAOS_RESTART_MIN_MS / CHAOS_RESTART_MAX_MS (2000 / 8000: churn between restarts),
# CHAOS_CHURN_INTERVAL (0.3), CHAOS_RECOVERY_SECONDS (120: the most either daemon may take
# after a restart), CHAOS_SETTLE_SECONDS (600), CHAOS_SUMMARY, CO_TEST_KUBECONFIG with
# CO_TEST_CONTROLPLANE_DIR (a control plane to restart; else a private one), CHAOS_BIN_DIR.
set -uo pipefail
CAMPAIGN=apiserver_restart
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

N=${CHAOS_COMPONENTS:-100}
RESTARTS=${CHAOS_RESTARTS:-10}
ETCD_RESTARTS=${CHAOS_ETCD_RESTARTS:-1}
RMIN=${CHAOS_RESTART_MIN_MS:-2000}
RMAX=${CHAOS_RESTART_MAX_MS:-8000}
INTERVAL=${CHAOS_CHURN_INTERVAL:-0.3}
RECOVERY=${CHAOS_RECOVERY_SECONDS:-120}
SETTLE=${CHAOS_SETTLE_SECONDS:-600}

chaos_setup || { say "set-up failed"; exit 1; }
[ -n "${CO_TEST_CONTROLPLANE_DIR:-}" ] || { say "no CO_TEST_CONTROLPLANE_DIR to restart"; exit 1; }
[ -x "$WEBHOOK" ] || { say "missing $WEBHOOK"; exit 1; }
start=$SECONDS

wh_certs || { say "test certificates failed"; exit 1; }
wh_start
wait_ready "$WH_PROBE" 120 || { say "the webhook did not become ready"; tail -n 20 "$WORK/logs/webhook.log" >&2; exit 1; }
wh_register "$WORK/ca.crt" || { say "registering the webhook failed"; exit 1; }

# cycle TAG: A -> B is admitted, then B -> A must be refused (dry run, retried: the webhook
# learns of A through its watch). Prints the milliseconds until the refusal; fails after
# RECOVERY seconds.
cycle_component() { # NAME DEPENDENCY
    printf 'apiVersion: core.cs.sap.com/v1alpha1\nkind: Component\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  sourceRef:\n    fluxGitRepository:\n      name: repo\n  dependencies:\n  - name: %s\n' \
        "$1" "$WNS" "$2"
}
cycle() {
    local t0 end out
    t0=$(now_ms)
    end=$((SECONDS + RECOVERY))
    until cycle_component "$1-a" "$1-b" | k create -f - >/dev/null 2>>"$WORK/logs/cycle.err"; do
        [ $SECONDS -ge $end ] && return 1
        k -n "$WNS" get "$COMP" "$1-a" >/dev/null 2>&1 && break
        sleep 0.2
    done
    while [ $SECONDS -lt $end ]; do
        out=$(cycle_component "$1-b" "$1-a" | k create --dry-run=server -f - 2>&1)
        if grep -q "dependency cycle" <<<"$out"; then
            echo $(($(now_ms) - t0))
            return 0
        fi
        echo "$1: $out" >>"$WORK/logs/cycle.err"
        sleep 0.2
    done
    return 1
}

# probe TAG: a new Component (a ConfigMap and a ServiceAccount); prints the milliseconds until
# it is Ready; fails after RECOVERY seconds.
probe() {
    local t0 end
    t0=$(now_ms)
    end=$((SECONDS + RECOVERY))
    until sed -e "s/^  name: c-[0-9]*$/  name: $1/" -e "s/ID: c-[0-9]*$/ID: $1/" \
        <<<"$(manifest 4 0)" | k create -f - >/dev/null 2>>"$WORK/logs/probe.err"; do
        [ $SECONDS -ge $end ] && return 1
        k -n "$CNS" get "$COMP" "$1" >/dev/null 2>&1 && break
        sleep 0.2
    done
    while [ $SECONDS -lt $end ]; do
        if [ "$(k -n "$CNS" get "$COMP" "$1" -o jsonpath='{.status.state}' 2>/dev/null)" = Ready ]; then
            echo $(($(now_ms) - t0))
            return 0
        fi
        sleep 0.2
    done
    return 1
}

fmt_ms() { printf '%d.%d' $(($1 / 1000)) $((($1 % 1000) / 100)); }
fmt_or_timeout() { if [ -n "$1" ]; then echo "$(fmt_ms "$1")s"; else echo TIMEOUT; fi; }

# the webhook is in force once the API server's informer has its configuration
cycle warmup >/dev/null || { say "the webhook never refused a cycle"; exit 1; }

ctl_start
wait_ready "$CTL_PROBE" 120 || { say "the controller did not become ready"; exit 1; }
create_all "$N" || { say "creating the Components failed"; exit 1; }
say "$N Components created; waiting for them before the restarts"
settle "$SETTLE" || { say "the Components did not settle before the restarts"; fail_details; exit 1; }
list_objects "$WORK/before.tsv"
churn_start "$N" "$INTERVAL"

total=$((RESTARTS + ETCD_RESTARTS))
etcd_at=$(((total + 1) / 2))
survived=0
failed_recoveries=0
times=()
ctl_max=0
wh_max=0
api=0
for r in $(seq 1 "$total"); do
    ms=$((RMIN + (RANDOM * 32768 + RANDOM) % (RMAX - RMIN + 1)))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    # graceful (SIGTERM; kube-apiserver waits up to 30 s for open watches) and crash (SIGKILL)
    # restarts alternate
    if [ "$ETCD_RESTARTS" -gt 0 ] && [ "$r" = "$etcd_at" ]; then
        what=etcd
        cmd=etcd-restart
    elif [ $((api % 2)) = 0 ]; then
        api=$((api + 1))
        what="kube-apiserver (SIGKILL)"
        cmd=apiserver-crash
    else
        api=$((api + 1))
        what=kube-apiserver
        cmd=restart
    fi
    t0=$(now_ms)
    if ! "$ROOT/tests/env/controlplane.sh" "$cmd" "$CO_TEST_CONTROLPLANE_DIR" \
        >>"$WORK/logs/restarts.log" 2>&1; then
        say "$what did not come back"
        failed_recoveries=$((failed_recoveries + 1))
        break
    fi
    down=$(($(now_ms) - t0))
    c=$(probe "probe-$r") || c=""
    w=$(cycle "cycle-$r") || w=""
    if [ -n "$c" ] && [ -n "$w" ]; then
        survived=$((survived + 1))
        [ "$c" -gt "$ctl_max" ] && ctl_max=$c
        [ "$w" -gt "$wh_max" ] && wh_max=$w
    else
        failed_recoveries=$((failed_recoveries + 1))
    fi
    times+=("$r:$what restart $(fmt_ms "$down")s, controller $(fmt_or_timeout "$c"), webhook $(fmt_or_timeout "$w")")
    say "restart $r ($what): ${times[-1]#*:}"
done
say "churn stops, the controller settles"
churn_stop
settled=1
settle "$SETTLE" || settled=0
verify
list_objects "$WORK/after.tsv"
# objects of Components the churn never deleted, taken before the restarts: same uid after
# (the optional ConfigMap of the Helm Components comes and goes with updates by design)
recreated=0
while IFS=$'\t' read -r kind ons name owner _ uid; do
    [ "$owner" = - ] && continue
    [[ $name =~ ^(c-[0-9]+|probe-[0-9]+)- ]] || continue
    c=${BASH_REMATCH[1]}
    case $name in *-x) continue ;; esac
    grep -qx "delete $c" "$WORK/logs/churn.log" && continue
    if ! awk -F'\t' -v u="$uid" '$6 == u {f = 1} END {exit !f}' "$WORK/after.tsv"; then
        recreated=$((recreated + 1))
        echo "deleted: $kind/$ons/$name of $c, never deleted itself, has a new uid or is gone" \
            >>"$WORK/verify.txt"
    fi
done <"$WORK/before.tsv"
not_ready=$(printf '%s' "${NOT_READY:-}" | grep -c .)
stuck=$(printf '%s' "${STUCK:-}" | grep -c .)

summary "campaign" "$CAMPAIGN"
summary "components" "$N"
summary "live at the end" "$(live_count)"
summary "deleted at the end" "$(find "$STATE/deleted" -mindepth 1 -maxdepth 1 | wc -l)"
summary "churn operations" "$(churn_ops)"
summary "kube-apiserver restarts" "$RESTARTS"
summary "etcd restarts" "$ETCD_RESTARTS"
summary "restarts survived" "$survived/$total"
summary "max controller recovery" "$(fmt_ms "$ctl_max")s"
summary "max webhook recovery" "$(fmt_ms "$wh_max")s"
summary "objects checked" "$OBJECTS"
summary "live objects deleted" "$recreated"
summary "leaks" "$LEAKS"
summary "lost" "$LOST"
summary "not ready" "$not_ready"
summary "stuck finalizers" "$stuck"
summary "seconds" "$((SECONDS - start))"
ok=1
[ "$survived" = "$total" ] && [ "$settled" = 1 ] && [ "$LEAKS" = 0 ] && [ "$LOST" = 0 ] &&
    [ "$recreated" = 0 ] && [ "$OBJECTS" -gt 0 ] || ok=0
summary "result" "$([ $ok = 1 ] && echo PASS || echo FAIL)"
summary_print
echo "recovery after each restart (restart duration; until the controller made a new Component"
echo "Ready; until the webhook refused a cycle through a Component created after it):"
printf '  %s\n' "${times[@]#*:}"
[ $ok = 1 ] || { fail_details; exit 1; }
