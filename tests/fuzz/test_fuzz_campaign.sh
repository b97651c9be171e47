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

# the summary's row for semver: "semver seconds executions exec/s cov ft corpus new findings"
row() { grep -E '^semver +[0-9]+ ' "$1"; }

tests/fuzz/campaign.sh --no-merge --hours 0.001 semver >"$TMP/plain.out" 2>&1
rc=$?
tap_eq "a short campaign exits 0" 0 "$rc"
r=$(row "$TMP/plain.out")
tap_eq "its table has the target's row, with no finding" 0 "$(awk '{ print $NF }' <<<"$r")"
n=$(awk '{ print $3 }' <<<"$r")
if [ "${n:-0}" -gt 0 ]; then
    tap_ok "it counted executions ($n)"
else
    tap_fail "it counted executions" "$r"
fi

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
tap_eq "the table says so, as a note" 1 "$(grep -cE '^  note: interrupted \(SIGINT\) after [0-9]+ s; not a finding$' "$TMP/int.out")"
r=$(row "$TMP/int.out")
tap_eq "and counts no finding" 0 "$(awk '{ print $NF }' <<<"$r")"
secs=$(awk '{ print $2 }' <<<"$r")
if [ "${secs:-999}" -lt 170 ]; then
    tap_ok "the target ended early (${secs} s of 180)"
else
    tap_fail "the target ended early" "$r"
fi
tap_eq "without merging, the committed corpus is as it was" "$before" \
    "$(find tests/fuzz/corpus/semver -type f | sort | xargs sha1sum)"

tap_done
