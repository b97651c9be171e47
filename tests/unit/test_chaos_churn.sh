#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The churn of the chaos campaigns (tests/chaos/lib.sh) keeps at least half of its N
# Components live at every step, whatever it draws: the short campaigns in `make test` assert
# "live at the end >= N/2", and a deletion of a waves Component takes its dependant with it, so
# the guard has to count both. Run against a stand-in kubectl that accepts every write; the
# campaigns themselves run against the real control plane (e2e/test_chaos_*).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/support/tap.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# writes succeed; a get finds nothing (so a missing Component is never "still deleting")
cat >"$tmp/kubectl" <<'EOF'
#!/usr/bin/env bash
for a in "$@"; do
    if [ "$a" = get ]; then
        echo "Error from server (NotFound): components \"${*: -1}\" not found" >&2
        exit 1
    fi
done
cat >/dev/null
EOF
chmod +x "$tmp/kubectl"

# one run of STEPS churn operations on N Components; prints the smallest live count seen and
# the operations done, as "MIN DELETES CREATES UPDATES"
churn_run() {
    (
        CAMPAIGN=unit
        KUBECTL=$tmp/kubectl
        CO_TEST_KUBECONFIG=/dev/null
        TMPDIR=$tmp
        HTTP_PORT=1
        # shellcheck source=../chaos/lib.sh
        . "$ROOT/tests/chaos/lib.sh"
        RANDOM=$3
        n=$1
        for i in $(seq 0 $((n - 1))); do echo 0 >"$STATE/live/$(cname "$i")"; done
        min=$n
        for _ in $(seq 1 "$2"); do
            churn_op "$n" >>"$WORK/ops.log"
            l=$(live_count)
            [ "$l" -lt "$min" ] && min=$l
        done
        printf '%s %s %s %s\n' "$min" "$(grep -c '^delete' "$WORK/ops.log")" \
            "$(grep -c '^create' "$WORK/ops.log")" "$(grep -c '^update' "$WORK/ops.log")"
        rm -rf "$WORK"
    )
}

for n in 10 7 20; do
    for seed in 1 2; do
        read -r min deletes creates updates <<<"$(churn_run "$n" 150 "$seed$n")"
        what="N=$n seed $seed"
        if [ "${min:-0}" -ge 1 ] && [ $((${min:-0} * 2)) -ge "$n" ]; then
            tap_ok "$what: at least half stay live (smallest live count $min)"
        else
            tap_fail "$what: at least half stay live" "smallest live count: ${min:-none}"
        fi
        # the draw reaches every branch, so the bound above is a bound on real deletions
        if [ "${deletes:-0}" -gt 0 ] && [ "${creates:-0}" -gt 0 ] && [ "${updates:-0}" -gt 0 ]; then
            tap_ok "$what: deletes, creates and updates ($deletes, $creates, $updates)"
        else
            tap_fail "$what: deletes, creates and updates" "got: $deletes, $creates, $updates"
        fi
    done
done
tap_done
