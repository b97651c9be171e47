# SPDX-License-Identifier: Apache-2.0
#
# TAP output for shell test suites (source it). Each check prints "ok N - desc" or
# "not ok N - desc" followed by diagnostics; tap_done prints the plan and sets the exit status.
#
#   . tests/support/tap.sh
#   tap_check "webhook rejects a bad enum" kubectl apply -f bad.yaml --expect-fail...
#   tap_done

TAP_N=0
TAP_FAILED=0

# tap_ok DESC: record a pass.
tap_ok() {
    TAP_N=$((TAP_N + 1))
    echo "ok $TAP_N - $1"
}

# tap_fail DESC [DIAGNOSTIC...]: record a failure with diagnostics.
tap_fail() {
    TAP_N=$((TAP_N + 1))
    TAP_FAILED=$((TAP_FAILED + 1))
    echo "not ok $TAP_N - $1"
    shift
    for line in "$@"; do
        printf '%s\n' "$line" | sed 's/^/# /'
    done
}

# tap_skip DESC REASON: record a skipped check.
tap_skip() {
    TAP_N=$((TAP_N + 1))
    echo "ok $TAP_N - $1 # SKIP $2"
}

# tap_check DESC CMD...: pass when CMD exits 0; its output becomes the diagnostic otherwise.
tap_check() {
    local desc=$1
    shift
    local out
    if out=$("$@" 2>&1); then
        tap_ok "$desc"
    else
        tap_fail "$desc" "command: $*" "$out"
    fi
}

# tap_check_fails DESC PATTERN CMD...: pass when CMD fails and its output matches PATTERN
# (an extended regular expression).
tap_check_fails() {
    local desc=$1 pattern=$2
    shift 2
    local out
    if out=$("$@" 2>&1); then
        tap_fail "$desc" "command unexpectedly succeeded: $*" "$out"
    elif grep -qE -- "$pattern" <<<"$out"; then
        tap_ok "$desc"
    else
        tap_fail "$desc" "output does not match /$pattern/: $*" "$out"
    fi
}

# tap_eq DESC EXPECTED ACTUAL: pass when the two strings are equal.
tap_eq() {
    if [ "$2" = "$3" ]; then
        tap_ok "$1"
    else
        tap_fail "$1" "expected: $2" "actual:   $3"
    fi
}

# tap_done: print the plan; exit status 1 if anything failed or nothing was checked.
tap_done() {
    echo "1..$TAP_N"
    [ "$TAP_FAILED" = 0 ] && [ "$TAP_N" -gt 0 ]
}
