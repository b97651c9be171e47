# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# Sourced by the e2e suites that run the short form of a reliability campaign
# (tests/e2e/test_chaos_<name>.sh, after tap.sh and e2e.sh): the campaign runs against the
# suite's control plane with the release daemons, and its summary becomes TAP.
#
#   chaos_run NAME [VAR=VALUE...]   runs tests/chaos/NAME.sh with those variables; one check
#                                   that it passed (its output is the diagnostic otherwise)
#   chaos_expect KEY OP VALUE       one check per figure of the summary: OP is eq, ge or le

CHAOS_OUT=""
CHAOS_SUMMARY_FILE=""

chaos_run() {
    local name=$1
    shift
    CHAOS_OUT=$(mktemp "${TMPDIR:-/tmp}/co-chaos-out-XXXXXX")
    CHAOS_SUMMARY_FILE=$(mktemp "${TMPDIR:-/tmp}/co-chaos-summary-XXXXXX")
    trap 'rm -f "$CHAOS_OUT" "$CHAOS_SUMMARY_FILE"' EXIT
    if env CHAOS_SUMMARY="$CHAOS_SUMMARY_FILE" "$@" "$ROOT/tests/chaos/$name.sh" \
        >"$CHAOS_OUT" 2>&1; then
        tap_ok "test_chaos_${name}__campaign_passes"
    else
        # the verdict's details first (which object leaked, was lost or deleted): a failing
        # campaign prints them before the daemons' logs, which would push them out of the tail
        tap_fail "test_chaos_${name}__campaign_passes" \
            "$(awk '/\] details:$/ {p = 1; print; next} p && /^\[/ {exit} p && ++n <= 40' "$CHAOS_OUT"; tail -n 60 "$CHAOS_OUT")"
    fi
    # the summary table, for the log
    sed -n '/ summary$/,$p' "$CHAOS_OUT" | sed 's/^/# /'
}

chaos_expect() {
    local key=$1 op=$2 want=$3 got desc
    got=$(sed -n "s/^${key// /_}=//p" "$CHAOS_SUMMARY_FILE" | head -n 1)
    got=${got%%[ /]*}
    desc="test_chaos__${key// /_}_${op}_${want}"
    if [ -z "$got" ]; then
        tap_fail "$desc" "no figure '$key' in the summary"
    elif case $op in
        eq) [ "$got" -eq "$want" ] ;;
        ge) [ "$got" -ge "$want" ] ;;
        le) [ "$got" -le "$want" ] ;;
        *) false ;;
        esac 2>/dev/null; then
        tap_ok "$desc"
    else
        tap_fail "$desc" "$key: $got"
    fi
}
