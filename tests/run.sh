#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Runs the test suites and prints one summary line over all of them:
#   N passed, M failed[, K skipped]
#
#   tests/run.sh                     every suite
#   tests/run.sh --only unit         one kind (unit, fuzz, integration, e2e, tsan, conformance)
#   tests/run.sh unit/test_buf e2e/test_webhook    named suites
#
# A suite is a cmocka binary build/test/tests/<kind>/test_<name> or an executable script
# tests/<kind>/test_<name>.sh; both report in TAP. The tsan kind runs the integration suites
# that start the controller's manager once more, built with ThreadSanitizer
# (build/tsan/tests/integration/test_<name>, named tsan/test_<name>); any report fails them. A suite that crashes, times out, exits
# non-zero without reporting a failure, or reports no test at all counts as failed.
# Integration and e2e suites share one real control plane (etcd + kube-apiserver) started
# here unless CO_TEST_KUBECONFIG already points at one; they run one at a time, beside the
# unit and fuzz suites (CO_TEST_LANES=1: everything one after the other). Logs: build/test/logs/<kind>/.
# Conformance suites (tests/conformance: other projects' data, $CO_SHARED_FIXTURES) run only with
# --only conformance (make test-conformance), on a control plane of their own.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
KINDS=(unit fuzz integration e2e tsan)
SUITE_TIMEOUT=${CO_SUITE_TIMEOUT:-1200}
LOGDIR=build/test/logs

only=""
filters=()
while [ $# -gt 0 ]; do
    case "$1" in
    --only)
        only=$2
        shift 2
        ;;
    *)
        filters+=("$1")
        shift
        ;;
    esac
done

if [ "$only" = conformance ]; then
    KINDS=(conformance)
fi

# --- discover suites ------------------------------------------------------------------------
suites=()
for kind in "${KINDS[@]}"; do
    [ -n "$only" ] && [ "$only" != "$kind" ] && continue
    if [ "$kind" = tsan ]; then
        # the rule TSAN_BINS of the Makefile: the suites that start the manager
        mapfile -t candidates < <(grep -lw ctl_manager_start tests/integration/test_*.c |
            sed 's|^\(.*\)\.c$|build/tsan/\1|')
    else
        candidates=(build/test/tests/$kind/test_* tests/$kind/test_*.sh)
    fi
    for f in "${candidates[@]}"; do
        [ -e "$f" ] || continue
        case "$f" in *.o | *.d) continue ;; esac
        [ -x "$f" ] || continue
        name=$kind/$(basename "$f" .sh)
        if [ ${#filters[@]} -gt 0 ]; then
            keep=0
            for want in "${filters[@]}"; do
                [ "$want" = "$name" ] && keep=1
            done
            [ $keep = 1 ] || continue
        fi
        suites+=("$name=$f")
    done
done

if [ ${#suites[@]} -eq 0 ]; then
    echo "no test suites found (did the build run?)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

# --- control plane for integration and e2e suites -----------------------------------------
needs_cluster=0
for s in "${suites[@]}"; do
    case "$s" in integration/* | e2e/* | tsan/* | conformance/*) needs_cluster=1 ;; esac
done
cp_dir=""
lane=""
cleanup() {
    if [ -n "$lane" ]; then
        kill "$lane" 2>/dev/null || true
    fi
    if [ -n "$cp_dir" ]; then
        tests/env/controlplane.sh stop "$cp_dir" >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ $needs_cluster = 1 ] && [ -z "${CO_TEST_KUBECONFIG:-}" ]; then
    mkdir -p build/test
    cp_dir=$(mktemp -d "${TMPDIR:-/tmp}/co-controlplane-XXXXXX")
    echo "starting control plane in $cp_dir" >&2
    if ! tests/env/controlplane.sh start "$cp_dir" >"$LOGDIR.controlplane.log" 2>&1; then
        echo "control plane failed to start; see $LOGDIR.controlplane.log" >&2
        tail -n 30 "$LOGDIR.controlplane.log" >&2
        cp_dir_keep=$cp_dir
        cp_dir=""
        tests/env/controlplane.sh stop "$cp_dir_keep" >/dev/null 2>&1 || true
        echo "0 passed, 1 failed"
        exit 1
    fi
    # shellcheck disable=SC1091
    . "$cp_dir/env"
    export CO_TEST_KUBECONFIG CO_TEST_CONTROLPLANE_DIR
fi

# --- run ------------------------------------------------------------------------------------
total_pass=0
total_fail=0
total_skip=0
failed_suites=()
export CMOCKA_MESSAGE_OUTPUT=TAP
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# every race of a run in the log, then a failing exit status
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:exitcode=66:second_deadlock_stack=1}
export CO_SOURCE_ROOT=$ROOT
# the ports the suites' daemons listen on, handed out once per run (tests/support/free_port.py)
mkdir -p build/test
export CO_TEST_PORT_REGISTRY=${CO_TEST_PORT_REGISTRY:-$ROOT/build/test/ports.registry}
: >"$CO_TEST_PORT_REGISTRY"

# run_suite NAME PATH RESULTS: runs one suite, prints its line (and on failure its diagnostics)
# and appends "name pass fail skip" to RESULTS.
run_suite() {
    local name=$1 path=$2 results=$3
    local log=$LOGDIR/$name.log
    mkdir -p "$(dirname "$log")"
    local start rc secs pass skip fail why report races
    start=$(date +%s)
    timeout -k 15 "$SUITE_TIMEOUT" "$path" >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(($(date +%s) - start))
    # TAP: "ok N - name", "not ok N - name", "... # SKIP ..." (cmocka marks skips "not ok").
    pass=$(grep -cE '^ok [0-9]+' "$log" | tr -d ' ')
    skip=$(grep -E '^(not )?ok [0-9]+' "$log" | grep -ciE '# *SKIP' | tr -d ' ')
    fail=$(grep -E '^not ok [0-9]+' "$log" | grep -viE '# *SKIP' | grep -c . | tr -d ' ')
    pass=$((pass - $(grep -E '^ok [0-9]+' "$log" | grep -ciE '# *SKIP')))
    why=""
    races=$(grep -c '^WARNING: ThreadSanitizer' "$log" | tr -d ' ')
    if [ "$races" -gt 0 ]; then
        why="ThreadSanitizer: $races reports"
        fail=$((fail + 1))
    elif [ $rc = 124 ] || [ $rc = 137 ]; then
        why="timed out after ${SUITE_TIMEOUT}s"
        fail=$((fail + 1))
    elif [ $rc != 0 ] && [ "$fail" = 0 ]; then
        why="exited with status $rc"
        fail=$((fail + 1))
    elif [ $((pass + fail + skip)) = 0 ]; then
        why="reported no tests"
        fail=1
    fi
    if [ "$fail" -gt 0 ]; then
        report=$(
            printf 'FAIL %-40s %3d passed %3d failed %3d skipped %4ss %s\n' "$name" "$pass" \
                "$fail" "$skip" "$secs" "$why"
            grep -E '^not ok|^# ' "$log" | head -n 40 | sed 's/^/    /'
            if [ "$races" -gt 0 ]; then
                echo "    --- the first ThreadSanitizer report:"
                sed -n '/^WARNING: ThreadSanitizer/,/^=======/p' "$log" | head -n 60 |
                    sed 's/^/    /'
            fi
            echo "    --- last lines of $log:"
            tail -n 25 "$log" | sed 's/^/    /'
        )
    else
        report=$(printf 'ok   %-40s %3d passed %3d failed %3d skipped %4ss' "$name" "$pass" 0 \
            "$skip" "$secs")
    fi
    # one write per suite, so that the two lanes never interleave inside a report
    printf '%s\n' "$report"
    echo "$name $pass $fail $skip" >>"$results"
}

# run_lane RESULTS SUITE...: runs suites one after the other.
run_lane() {
    local results=$1 s
    shift
    for s in "$@"; do
        run_suite "${s%%=*}" "${s#*=}" "$results"
    done
}

# Two lanes: suites that need no cluster run beside those that share the control plane (which
# run one at a time, since some of them restart the apiserver). CO_TEST_LANES=1 runs
# everything in one lane.
local_suites=()
cluster_suites=()
for s in "${suites[@]}"; do
    case "$s" in
    integration/* | e2e/* | tsan/* | conformance/*) cluster_suites+=("$s") ;;
    *) local_suites+=("$s") ;;
    esac
done
results=$(mktemp)
if [ "${CO_TEST_LANES:-2}" = 1 ]; then
    run_lane "$results" "${suites[@]}"
else
    run_lane "$results" "${cluster_suites[@]}" &
    lane=$!
    run_lane "$results" "${local_suites[@]}"
    wait "$lane"
    lane=""
fi
while read -r name pass fail skip; do
    total_pass=$((total_pass + pass))
    total_fail=$((total_fail + fail))
    total_skip=$((total_skip + skip))
    [ "$fail" -gt 0 ] && failed_suites+=("$name")
done <"$results"
rm -f "$results"

if [ -n "$cp_dir" ] && [ ${#failed_suites[@]} -gt 0 ]; then
    # keep the control plane's logs next to the suite logs for the post-mortem
    cp -r "$cp_dir/logs" "$LOGDIR/controlplane-logs" 2>/dev/null || true
fi

summary="$total_pass passed, $total_fail failed"
if [ "$total_skip" -gt 0 ]; then
    summary="$summary, $total_skip skipped"
fi
if [ ${#failed_suites[@]} -gt 0 ]; then
    echo "failed suites: ${failed_suites[*]}"
fi
echo "$summary"
[ "$total_fail" = 0 ]
