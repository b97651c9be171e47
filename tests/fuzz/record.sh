#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The fuzzing record (tests/fuzz/record.tsv; docs/fuzzing.md, "The record"): checks it, adds a
# campaign's rows to it, and prints the tables README.md shows.
#
#   record.sh check              every row well formed; a bad one is named by line and field
#   record.sh add SUMMARY...     append the rows of campaign summaries (build/fuzz/campaign/
#                                <UTC time>/summary.txt); a summary already recorded is refused
#   record.sh totals             per target: runs, time, executions, findings, the 10 million
#   record.sh runs               every run, oldest first
#   record.sh readme [--update]  README.md's two tables are what totals and runs print; with
#                                --update, rewrite them
#
# CO_FUZZ_RECORD and CO_FUZZ_README name other files (the tests use small ones).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RECORD=${CO_FUZZ_RECORD:-$ROOT/tests/fuzz/record.tsv}
README=${CO_FUZZ_README:-$ROOT/README.md}
GOAL=10000000
# The parsers of untrusted input the goal of 10 million executions is set for: JSON, YAML, the
# webhook's reviews, Components, templates, kustomize, Helm, SOPS, archives, kubeconfig, watch
# streams and PEM. The other targets show their count without a goal.
GOAL_TARGETS="json yaml webhook component template kustomize helm sops archive kube_config kube_watch pem"

die() {
    printf 'record.sh: %s\n' "$*" >&2
    exit 2
}

# check: prints the first malformed row's problem and fails; quiet when all are good.
check() {
    [ -r "$RECORD" ] || die "cannot read $RECORD"
    awk -F '\t' -v f="$(basename "$RECORD")" '
        function bad(what) { printf "%s:%d: %s\n", f, NR, what; err = 1; exit }
        /^#/ || /^$/ { next }
        {
            if (NF != 6) bad("expected 6 tab-separated fields, found " NF)
            if ($1 !~ /^20[0-9][0-9]-[01][0-9]-[0-3][0-9]$/) bad("date is not YYYY-MM-DD: \"" $1 "\"")
            if ($2 !~ /^[0-9a-f]+$/ || length($2) != 12) bad("commit is not 12 hex digits: \"" $2 "\"")
            if ($3 !~ /^[a-z][a-z0-9_]*$/) bad("target is not a fuzz target name: \"" $3 "\"")
            if ($4 !~ /^[0-9]+$/ || $4 == 0) bad("seconds is not a positive whole number: \"" $4 "\"")
            if ($5 !~ /^[0-9]+$/) bad("executions is not a whole number: \"" $5 "\"")
            if ($6 !~ /^[0-9]+$/) bad("findings is not a whole number: \"" $6 "\"")
            if ($1 < last) bad("date " $1 " is older than the row before (" last ")")
            last = $1
        }
        END { exit err }' "$RECORD" >&2 || exit 1
}

# The awk function that writes 1234567 as 1,234,567.
GROUP='function group(n,   s, out) { s = sprintf("%d", n); out = ""
    while (length(s) > 3) { out = "," substr(s, length(s) - 2) out; s = substr(s, 1, length(s) - 3) }
    return s out }'

totals() {
    check
    printf '| target | runs | hours | executions | findings | 10 million |\n'
    printf '|---|--:|--:|--:|--:|---|\n'
    awk -F '\t' -v goal="$GOAL" -v goals="$GOAL_TARGETS" "$GROUP"'
        BEGIN { n = split(goals, g, " "); for (i = 1; i <= n; i++) set[g[i]] = 1 }
        /^#/ || /^$/ { next }
        { runs[$3]++; secs[$3] += $4; execs[$3] += $5; found[$3] += $6 }
        END {
            for (t in runs) {
                left = goal - execs[t]
                state = !(t in set) ? "no goal" : left <= 0 ? "reached" : "short by " group(left)
                printf "%s\t| `%s` | %d | %.2f | %s | %d | %s |\n", t, t, runs[t],
                    secs[t] / 3600, group(execs[t]), found[t], state
            }
        }' "$RECORD" | LC_ALL=C sort | cut -f 2-
}

runs() {
    check
    printf '%-10s  %-12s  %-13s  %7s  %12s  %6s  %s\n' date commit target seconds executions \
        exec/s findings
    awk -F '\t' '/^#/ || /^$/ { next }
        { printf "%-10s  %-12s  %-13s  %7d  %12d  %6d  %d\n", $1, $2, $3, $4, $5, $5 / $4, $6 }' \
        "$RECORD"
}

# add SUMMARY...: the header names the run (fuzz campaign <UTC time>, commit <hex>, ...), then
# one line per target: target seconds executions exec/s cov ft corpus new findings.
add() {
    [ $# -ge 1 ] || die "add: no summary given"
    check
    local s rows next
    next=$(mktemp "${TMPDIR:-/tmp}/co-record-XXXXXX")
    cp "$RECORD" "$next"
    for s in "$@"; do
        [ -r "$s" ] || die "add: cannot read $s"
        rows=$(awk 'BEGIN { OFS = "\t" }
            /^fuzz campaign / {
                split($3, w, ""); day = w[1] w[2] w[3] w[4] "-" w[5] w[6] "-" w[7] w[8]
                commit = $5; sub(/,$/, "", commit)
            }
            day && /^[a-z][a-z0-9_]* +[0-9]+ +[0-9]+ +[0-9]+ / {
                print day, commit, $1, $2, $3, $NF
            }' "$s")
        [ -n "$rows" ] || die "add: $s holds no campaign summary"
        while IFS=$'\t' read -r d c t sec n f; do
            if awk -F '\t' -v d="$d" -v c="$c" -v t="$t" -v n="$n" \
                '$1 == d && $2 == c && $3 == t && $5 == n { found = 1 } END { exit !found }' \
                "$next"; then
                rm -f "$next"
                die "add: $s: the $t run at $c of $d is already recorded"
            fi
        done <<<"$rows"
        printf '%s\n' "$rows" >>"$next"
    done
    # the record changes only when every row added is well formed
    if ! CO_FUZZ_RECORD=$next "$0" check; then
        rm -f "$next"
        die "add: nothing recorded (a campaign run from uncommitted sources names no commit)"
    fi
    cat "$next" >"$RECORD"
    rm -f "$next"
}

# readme [--update]: the blocks between "<!-- record.sh totals -->" (or runs) and
# "<!-- end record.sh -->" in README.md.
readme() {
    local update=0 tmp
    [ "${1:-}" = --update ] && update=1
    [ -r "$README" ] || die "cannot read $README"
    tmp=$(mktemp "${TMPDIR:-/tmp}/co-record-XXXXXX")
    totals >"$tmp.totals"
    { printf '```\n'; runs; printf '```\n'; } >"$tmp.runs"
    awk -v tf="$tmp.totals" -v rf="$tmp.runs" '
        /^<!-- record\.sh (totals|runs) -->$/ {
            print; file = ($3 == "totals") ? tf : rf; seen[$3] = 1
            while ((getline line < file) > 0) print line
            close(file); skipping = 1; next
        }
        /^<!-- end record\.sh -->$/ { skipping = 0 }
        !skipping { print }
        END { if (!seen["totals"] || !seen["runs"]) exit 3 }' "$README" >"$tmp" || {
        rm -f "$tmp" "$tmp.totals" "$tmp.runs"
        die "$(basename "$README") lacks a <!-- record.sh totals --> or runs block"
    }
    rm -f "$tmp.totals" "$tmp.runs"
    if cmp -s "$tmp" "$README"; then
        rm -f "$tmp"
        return 0
    fi
    if [ "$update" = 1 ]; then
        cat "$tmp" >"$README"
        rm -f "$tmp"
        return 0
    fi
    diff -u "$README" "$tmp" | sed -n '3,40p' >&2 || true
    rm -f "$tmp"
    printf 'record.sh: %s differs from the record; run tests/fuzz/record.sh readme --update\n' \
        "$(basename "$README")" >&2
    return 1
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
check) check ;;
add) add "$@" ;;
totals) totals ;;
runs) runs ;;
readme) readme "$@" ;;
*) die "usage: record.sh check | add SUMMARY... | totals | runs | readme [--update]" ;;
esac
