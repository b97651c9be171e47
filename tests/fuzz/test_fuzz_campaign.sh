#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The campaign script (tests/fuzz/campaign.sh) on one small target, without merging: a run
# ends with a table row for its target and exit status 0; a fuzzer stopped with SIGINT ends
# its target early with a note, not a finding, and the committed corpus is left alone.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/support/tap.sh"
cd "$ROOT" || exit 1
BIN=build/fuzz/fuzz_semver
if [ ! -x "$BIN" ]; then
    tap_fail "the fuzz target is built" "$BIN is missing (make fuzz)"
    tap_done
    exit
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/co-campaign-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
before=$(find tests/fuzz/corpus/semver -type f | sort | xargs sha1sum)

# col FILE K: column K of the summary's row for semver (1 target, 2 seconds, 3 executions,
# 4 exec/s, 5 cov, 6 ft, 7 corpus, 8 new, 9 findings); "-" when there is no row.
col() { awk -v k="$2" '/^semver +[0-9]+ / { v = $k } END { print (v == "" ? "-" : v) }' "$1"; }

# test_num DESC A OP B: passes when the numbers compare so ([ A OP B ]).
test_num() {
    if [[ $2 =~ ^[0-9]+$ ]] && [ "$2" "$3" "$4" ]; then
        tap_ok "$1 ($2)"
    else
        tap_fail "$1" "expected $2 $3 $4"
    fi
}

tests/fuzz/campaign.sh --no-merge --hours 0.001 semver >"$TMP/plain.out" 2>&1
rc=$?
tap_eq "a short campaign exits 0" 0 "$rc"
tap_eq "its table has the target's row, with no finding" 0 "$(col "$TMP/plain.out" 9)"
test_num "it counted executions" "$(col "$TMP/plain.out" 3)" -gt 0

# an interrupted fuzzer: the campaign's own child, never another suite's fuzz_semver
tests/fuzz/campaign.sh --no-merge --hours 0.05 semver >"$TMP/int.out" 2>&1 &
camp=$!
pid=""
for _ in $(seq 1 300); do # up to 30 s on a busy machine
    pid=$(pgrep -P "$camp" -f fuzz_semver | head -n 1)
    [ -n "$pid" ] && break
    sleep 0.1
done
sleep 2 # past loading the corpus
[ -n "$pid" ] && kill -INT "$pid"
wait "$camp"
rc=$?
tap_eq "a campaign whose fuzzer was interrupted exits 0" 0 "$rc"
NOTE='^  note: interrupted \(SIGINT\) after [0-9]+ s; not a finding$'
tap_eq "the table says so, as a note" 1 "$(grep -cE "$NOTE" "$TMP/int.out")"
tap_eq "and counts no finding" 0 "$(col "$TMP/int.out" 9)"
test_num "the target ended early, seconds of 180" "$(col "$TMP/int.out" 2)" -lt 170
tap_eq "without merging, the committed corpus is as it was" "$before" \
    "$(find tests/fuzz/corpus/semver -type f | sort | xargs sha1sum)"

tap_done
