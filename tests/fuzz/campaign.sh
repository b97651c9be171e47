#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A fuzzing campaign over every libFuzzer target (docs/fuzzing.md):
#
#   tests/fuzz/campaign.sh [--hours N] [--no-merge] [TARGET...]    (make fuzz-campaign HOURS=N)
#
# N hours (fractional: 0.05 is three minutes) of fuzzing are split between the targets by the
# weights of tests/fuzz/campaign.conf, and the targets run one after the other. Each starts
# from a scratch copy of its committed corpus, tests/fuzz/corpus/<target>/, and writes what it
# finds there; afterwards libFuzzer's -merge=1 folds the scratch corpus back: the hand-written
# seeds stay as they are, and the machine-found files (named by their SHA-1) are replaced by a
# minimal set that adds coverage over the seeds, within the target's max_len and max_files.
# Crashes, leaks, timeouts and out-of-memory inputs land in the run's findings directory and
# are named in the table; any finding makes the exit status 1. A target's fuzzer stopped with
# SIGINT (kill -INT on the build/fuzz/fuzz_<target> process) ends that target early: what it
# found is merged and the table says it was interrupted, which is not a finding.
#
# Builds nothing: `make fuzz-campaign` builds build/fuzz/fuzz_* first. Everything else of a run
# (logs, scratch corpora, findings, the table as summary.txt) is kept in
# build/fuzz/campaign/<UTC time>/.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

usage() {
    sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

hours=${HOURS:-1}
merge=1
only=()
while [ $# -gt 0 ]; do
    case "$1" in
    --hours)
        [ $# -ge 2 ] || usage
        hours=$2
        shift 2
        ;;
    --no-merge)
        merge=0
        shift
        ;;
    -h | --help) usage ;;
    -*) usage ;;
    *)
        only+=("${1#fuzz_}")
        shift
        ;;
    esac
done
if ! [[ $hours =~ ^([0-9]+(\.[0-9]*)?|\.[0-9]+)$ ]]; then
    echo "campaign: HOURS must be a non-negative number, not '$hours'" >&2
    exit 2
fi
budget=$(awk -v h="$hours" 'BEGIN { printf "%d", h * 3600 }')

CONF=tests/fuzz/campaign.conf
DEFAULT_WEIGHT=1
DEFAULT_MAX_LEN=4096
DEFAULT_MAX_FILES=60
# At most this many runs of one target: after a finding the target goes on with what is left of
# its time, so that one crash does not end its share of the campaign.
MAX_RUNS=3
# libFuzzer's exit status for a run stopped with SIGINT (-interrupted_exitcode)
INTERRUPTED=72

# conf TARGET COLUMN DEFAULT: a column (2 weight, 3 max_len, 4 max_files) of campaign.conf.
conf() {
    local v
    v=$(awk -v t="$1" -v c="$2" '$1 == t && $1 !~ /^#/ { print $c; exit }' "$CONF" 2>/dev/null)
    printf '%s\n' "${v:-$3}"
}

# --- targets ---------------------------------------------------------------------------------
targets=()
if [ ${#only[@]} -gt 0 ]; then
    targets=("${only[@]}")
else
    for src in tests/fuzz/fuzz_*.c; do
        [ -e "$src" ] || continue
        name=$(basename "$src" .c)
        targets+=("${name#fuzz_}")
    done
fi
if [ ${#targets[@]} -eq 0 ]; then
    echo "campaign: no fuzz targets (tests/fuzz/fuzz_*.c)" >&2
    exit 2
fi
for t in "${targets[@]}"; do
    if [ ! -x "build/fuzz/fuzz_$t" ]; then
        echo "campaign: build/fuzz/fuzz_$t is missing; run make fuzz first" >&2
        exit 2
    fi
done

total_weight=0
for t in "${targets[@]}"; do
    total_weight=$((total_weight + $(conf "$t" 2 "$DEFAULT_WEIGHT")))
done

stamp=$(date -u +%Y%m%dT%H%M%SZ)
run=build/fuzz/campaign/$stamp
mkdir -p "$run"
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no -- shared webhook controller certs \
    tests/fuzz/*.c 2>/dev/null)" ]; then
    commit="$commit+changes"
fi

echo "campaign: ${hours}h (${budget}s) over ${#targets[@]} targets, commit $commit, in $run"

rows=()
any_finding=0
grand_execs=0
for t in "${targets[@]}"; do
    bin=build/fuzz/fuzz_$t
    weight=$(conf "$t" 2 "$DEFAULT_WEIGHT")
    max_len=$(conf "$t" 3 "$DEFAULT_MAX_LEN")
    max_files=$(conf "$t" 4 "$DEFAULT_MAX_FILES")
    secs=$((budget * weight / total_weight))
    [ "$secs" -lt 1 ] && secs=1
    seeds=tests/fuzz/corpus/$t
    scratch=$run/$t/corpus
    findings=$run/$t/findings
    mkdir -p "$scratch" "$findings" "$seeds"
    cp -rp "$seeds"/. "$scratch"/
    dict=()
    [ -f "tests/fuzz/dict/$t.dict" ] && dict=(-dict="tests/fuzz/dict/$t.dict")

    printf 'campaign: %-14s %6ss (max_len %s)\n' "$t" "$secs" "$max_len"
    execs=0 cov=- ft=- runs=0 errors=() notes=()
    start=$(date +%s)
    while :; do
        now=$(date +%s)
        left=$((start + secs - now))
        [ "$left" -ge 1 ] || break
        runs=$((runs + 1))
        log=$run/$t/fuzz-$runs.log
        "$bin" -max_total_time="$left" -max_len="$max_len" -rss_limit_mb=2048 -timeout=30 \
            -interrupted_exitcode=$INTERRUPTED -print_final_stats=1 -artifact_prefix="$findings/" \
            "${dict[@]}" "$scratch" >"$log" 2>&1
        rc=$?
        n=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | tail -n 1 |
            grep -oE '[0-9]+$')
        if [ -z "$n" ]; then
            n=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
        fi
        execs=$((execs + ${n:-0}))
        last=$(grep -E 'cov: [0-9]+' "$log" | tail -n 1)
        if [ -n "$last" ]; then
            cov=$(printf '%s\n' "$last" | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+')
            ft=$(printf '%s\n' "$last" | grep -oE 'ft: [0-9]+' | grep -oE '[0-9]+')
        fi
        if [ "$rc" -eq "$INTERRUPTED" ] && [ -z "$(ls -A "$findings")" ]; then
            notes+=("interrupted (SIGINT) after $(($(date +%s) - start)) s; not a finding")
            break
        fi
        if [ "$rc" -ne 0 ] && [ -z "$(ls -A "$findings")" ]; then
            # not a finding libFuzzer wrote down: a failure of the run itself
            errors+=("exit $rc (see $log)")
            break
        fi
        [ "$rc" -eq 0 ] && break
        [ "$runs" -ge "$MAX_RUNS" ] && break
    done
    elapsed=$(($(date +%s) - start))
    [ "$elapsed" -lt 1 ] && elapsed=1
    grand_execs=$((grand_execs + execs))

    # --- fold the scratch corpus back -------------------------------------------------------
    added=0
    if [ "$merge" = 1 ]; then
        stage=$run/$t/merged
        hexdir=$run/$t/committed-found
        mkdir -p "$stage" "$hexdir"
        for f in "$seeds"/*; do
            [ -f "$f" ] || continue
            if [[ $(basename "$f") =~ ^[0-9a-f]{40}$ ]]; then
                cp -p "$f" "$hexdir/"
            else
                cp -p "$f" "$stage/"
            fi
        done
        # the hand-written seeds are the base; found files join when they add coverage
        if "$bin" -merge=1 -max_len="$max_len" -rss_limit_mb=2048 -timeout=30 \
            -artifact_prefix="$findings/merge-" "$stage" "$hexdir" "$scratch" \
            >"$run/$t/merge.log" 2>&1; then
            mapfile -t found < <(cd "$stage" && find . -maxdepth 1 -type f -regextype posix-egrep \
                -regex './[0-9a-f]{40}' -printf '%s %f\n' | sort -n | cut -d' ' -f2)
            find "$seeds" -maxdepth 1 -type f -regextype posix-egrep -regex '.*/[0-9a-f]{40}' \
                -delete
            kept=0
            for f in "${found[@]}"; do
                [ "$kept" -lt "$max_files" ] || break
                cp -p "$stage/$f" "$seeds/$f"
                [ -e "$hexdir/$f" ] || added=$((added + 1))
                kept=$((kept + 1))
            done
            if [ ${#found[@]} -gt "$max_files" ]; then
                echo "campaign: $t: kept the $max_files smallest of ${#found[@]} found inputs"
            fi
        else
            errors+=("merge failed (see $run/$t/merge.log)")
        fi
    fi
    corpus=$(find "$seeds" -maxdepth 1 -type f | wc -l)

    # --- findings ---------------------------------------------------------------------------
    names=()
    for f in "$findings"/*; do
        [ -f "$f" ] || continue
        case "$(basename "$f")" in
        crash-* | leak-* | timeout-* | oom-* | merge-*) names+=("$f") ;;
        esac
    done
    names+=("${errors[@]}")
    nfind=${#names[@]}
    [ "$nfind" -gt 0 ] && any_finding=1
    eps=$((execs / elapsed))
    rows+=("$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$t" "$elapsed" "$execs" "$eps" \
        "$cov" "$ft" "$corpus" "+$added" "$nfind")")
    for f in "${names[@]}"; do
        rows+=("$(printf '#\t%s' "$f")")
    done
    for f in "${notes[@]}"; do
        rows+=("$(printf '=\t%s' "$f")")
    done
done

# --- the table -------------------------------------------------------------------------------
{
    echo
    echo "fuzz campaign $stamp, commit $commit, ${hours}h budget"
    printf '%-14s %7s %12s %8s %6s %7s %7s %5s %8s\n' target seconds executions exec/s cov ft \
        corpus new findings
    for r in "${rows[@]}"; do
        case "$r" in
        "#"*) printf '  finding: %s\n' "${r#*	}" ;;
        "="*) printf '  note: %s\n' "${r#*	}" ;;
        *)
            IFS=$'\t' read -r t el ex eps cv f c a n <<<"$r"
            printf '%-14s %7s %12s %8s %6s %7s %7s %5s %8s\n' "$t" "$el" "$ex" "$eps" "$cv" "$f" \
                "$c" "$a" "$n"
            ;;
        esac
    done
    printf '%-14s %7s %12s\n' total "" "$grand_execs"
} | tee "$run/summary.txt"
if [ "$any_finding" = 1 ]; then
    echo "campaign: findings above (reproduce with build/fuzz/fuzz_<target> FILE)" >&2
    exit 1
fi
exit 0
