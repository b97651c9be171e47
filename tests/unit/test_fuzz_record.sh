#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The fuzzing record (tests/fuzz/record.sh, tests/fuzz/record.tsv): the committed record is well
# formed and README.md shows exactly its tables; on small records made here, the totals add the
# runs up, a campaign summary is recorded once, and malformed rows and summaries from
# uncommitted sources are refused with the line and field named, leaving the record as it was.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/support/tap.sh"
REC="$ROOT/tests/fuzz/record.sh"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzzrec-XXXXXX")
trap 'rm -rf "$TMP"' EXIT

tap_check "the committed record is well formed" "$REC" check
tap_check "README.md shows the record's tables" "$REC" readme

# a record of three runs of two targets, one of them past the goal
T=$'\t'
{
    echo '# a small record'
    echo "2026-11-29${T}0123456789ab${T}json${T}100${T}4000000${T}0"
    echo "2026-11-30${T}0123456789ab${T}semver${T}60${T}1234${T}0"
    echo "2026-11-30${T}abcdef012345${T}json${T}3500${T}6500000${T}1"
} >"$TMP/r.tsv"
export CO_FUZZ_RECORD=$TMP/r.tsv
tot=$("$REC" totals)
tap_eq "json's runs, hours, executions and findings are summed, past the goal" \
    '| `json` | 2 | 1.00 | 10,500,000 | 1 | reached |' "$(grep '`json`' <<<"$tot")"
tap_eq "a target outside the goal's list has none" \
    '| `semver` | 1 | 0.02 | 1,234 | 0 | no goal |' "$(grep '`semver`' <<<"$tot")"
tap_eq "every run is listed, with its rate" \
    '2026-11-30  abcdef012345  json              3500       6500000    1857  1' \
    "$("$REC" runs | tail -n 1)"

cat >"$TMP/s.txt" <<'EOF'

fuzz campaign 20261201T040050Z, commit 00112233aabb, 2.3h budget
target         seconds   executions   exec/s    cov      ft  corpus   new findings
pem               7200      3600000      500    240     600      40   +5        0
json               300       600000     2000    900    4000      60   +2        0
total                       4200000
EOF
tap_check "a campaign summary is recorded" "$REC" add "$TMP/s.txt"
tap_eq "its rows are appended, dated by the run" \
    "2026-12-01${T}00112233aabb${T}pem${T}7200${T}3600000${T}0" "$(tail -n 2 "$TMP/r.tsv" | head -n 1)"
tap_eq "pem is short of the goal by the rest" \
    '| `pem` | 1 | 2.00 | 3,600,000 | 0 | short by 6,400,000 |' "$("$REC" totals | grep '`pem`')"
before=$(cat "$TMP/r.tsv")
tap_check_fails "the same summary is refused a second time" \
    'the pem run at 00112233aabb of 2026-12-01 is already recorded' "$REC" add "$TMP/s.txt"
sed 's/00112233aabb,/00112233aabb+changes,/; s/20261201/20261202/' "$TMP/s.txt" >"$TMP/dirty.txt"
tap_check_fails "a run from uncommitted sources is refused" \
    'commit is not 12 hex digits: "00112233aabb\+changes"' "$REC" add "$TMP/dirty.txt"
printf 'no campaign here\n' >"$TMP/empty.txt"
tap_check_fails "a file that is no summary is refused" 'holds no campaign summary' \
    "$REC" add "$TMP/empty.txt"
tap_eq "a refused summary leaves the record as it was" "$before" "$(cat "$TMP/r.tsv")"

# malformed rows: each is named by file, line and field
bad() {
    local name=$1 pattern=$2 row=$3
    printf '# header\n%s\n' "$row" >"$TMP/$name.tsv"
    CO_FUZZ_RECORD=$TMP/$name.tsv tap_check_fails "refused: $name" "^$name\.tsv:2: $pattern" \
        "$REC" check
}
bad fields 'expected 6 tab-separated fields, found 5' "2026-11-29${T}0123456789ab${T}json${T}1${T}2"
bad date 'date is not YYYY-MM-DD: "29\.11\.2026"' \
    "29.11.2026${T}0123456789ab${T}json${T}1${T}2${T}0"
bad commit 'commit is not 12 hex digits: "0123456"' "2026-11-29${T}0123456${T}json${T}1${T}2${T}0"
bad target 'target is not a fuzz target name: "Json!"' \
    "2026-11-29${T}0123456789ab${T}Json!${T}1${T}2${T}0"
bad seconds 'seconds is not a positive whole number: "0"' \
    "2026-11-29${T}0123456789ab${T}json${T}0${T}2${T}0"
bad executions 'executions is not a whole number: "1e6"' \
    "2026-11-29${T}0123456789ab${T}json${T}1${T}1e6${T}0"
printf '# header\n%s\n%s\n' "2026-11-30${T}0123456789ab${T}json${T}1${T}2${T}0" \
    "2026-11-29${T}0123456789ab${T}json${T}1${T}2${T}0" >"$TMP/order.tsv"
CO_FUZZ_RECORD=$TMP/order.tsv tap_check_fails "refused: a row older than the one before" \
    '^order\.tsv:3: date 2026-11-29 is older than the row before \(2026-11-30\)' "$REC" check

# a README whose table lags the record is caught, and --update brings it in line
cat >"$TMP/README.md" <<'EOF'
# readme
<!-- record.sh totals -->
| stale |
<!-- end record.sh -->
between
<!-- record.sh runs -->
<!-- end record.sh -->
after
EOF
export CO_FUZZ_README=$TMP/README.md
tap_check_fails "a stale README table is caught" 'differs from the record' "$REC" readme
tap_check "--update rewrites it" "$REC" readme --update
tap_check "and then it matches" "$REC" readme
tap_eq "the text around the tables is kept" "# readme|between|after" \
    "$(grep -E '^(# readme|between|after)$' "$TMP/README.md" | paste -sd '|')"
tap_eq "the totals are in it" 1 "$(grep -c '^| `pem` | 1 | 2.00 | 3,600,000 |' "$TMP/README.md")"
printf '# readme\n' >"$TMP/README.md"
tap_check_fails "a README without the tables is refused" 'lacks a <!-- record.sh totals -->' \
    "$REC" readme

tap_done
