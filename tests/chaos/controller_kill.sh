#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Controller kill campaign (docs/chaos.md): N Components (apply waves, a Helm chart with a hook,
# a SOPS-encrypted Secret, dependencies) are created, updated and deleted in churn while
# component-controller is killed with SIGKILL at random moments K times and restarted. Then:
# every labelled object in the target namespaces is in exactly one Component's inventory, no
# object of a deleted Component remains, every live Component is Ready at its last generation
# with the objects of that generation, and no deleted Component keeps its finalizer. The last
# kill falls among the deletion of a tenth of the Components at once.
#
#   tests/chaos/controller_kill.sh
#
# Environment: CHAOS_COMPONENTS (100), CHAOS_KILLS (20), CHAOS_KILL_MIN_MS / CHAOS_KILL_MAX_MS
# (1000 / 6000: the random time the controller runs before each kill), CHAOS_CHURN_INTERVAL
# (0.2 s between churn operations), CHAOS_SETTLE_SECONDS (600), CHAOS_SUMMARY (also write the
# summary as KEY=VALUE lines there), CO_TEST_KUBECONFIG (use that control plane instead of a
# private one), CHAOS_BIN_DIR (build/release). Exit status 0 only with no leak, no loss and no
# timeout.
set -uo pipefail
CAMPAIGN=controller_kill
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

N=${CHAOS_COMPONENTS:-100}
KILLS=${CHAOS_KILLS:-20}
KMIN=${CHAOS_KILL_MIN_MS:-1000}
KMAX=${CHAOS_KILL_MAX_MS:-6000}
INTERVAL=${CHAOS_CHURN_INTERVAL:-0.2}
SETTLE=${CHAOS_SETTLE_SECONDS:-600}

chaos_setup || { say "set-up failed"; exit 1; }
start=$SECONDS
say "$N Components, $KILLS kills, SOPS=$SOPS"
ctl_start
create_all "$N" || { say "creating the Components failed"; exit 1; }
churn_start "$N" "$INTERVAL"

kills=0
exited=0
for r in $(seq 1 "$KILLS"); do
    # the last kill falls among deletions: a tenth of the Components at once
    [ "$r" = "$KILLS" ] && delete_some $(((N + 9) / 10))
    ms=$((KMIN + (RANDOM * 32768 + RANDOM) % (KMAX - KMIN + 1)))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    if ctl_kill; then
        kills=$((kills + 1))
    else
        exited=$((exited + 1))
    fi
    ctl_start
done
say "$kills kills done; churn stops, the controller settles"
churn_stop
settled=1
settle "$SETTLE" || settled=0
verify
not_ready=$(printf '%s' "${NOT_READY:-}" | grep -c .)
stuck=$(printf '%s' "${STUCK:-}" | grep -c .)

summary "campaign" "$CAMPAIGN"
summary "components" "$N"
summary "live at the end" "$(ls "$STATE/live" | wc -l)"
summary "deleted at the end" "$(ls "$STATE/deleted" | wc -l)"
summary "churn operations" "$(churn_ops)"
summary "kills" "$kills"
summary "exits before a kill" "$exited"
summary "objects checked" "$OBJECTS"
summary "leaks" "$LEAKS"
summary "lost" "$LOST"
summary "not ready" "$not_ready"
summary "stuck finalizers" "$stuck"
summary "seconds" "$((SECONDS - start))"
ok=1
[ "$kills" = "$KILLS" ] && [ "$exited" = 0 ] && [ "$settled" = 1 ] && [ "$LEAKS" = 0 ] &&
    [ "$LOST" = 0 ] && [ "$OBJECTS" -gt 0 ] || ok=0
summary "result" "$([ $ok = 1 ] && echo PASS || echo FAIL)"
summary_print
[ $ok = 1 ] || { fail_details; exit 1; }
