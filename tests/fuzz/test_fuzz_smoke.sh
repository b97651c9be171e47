#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A short libFuzzer run of every fuzz target that has no suite of its own
# (tests/fuzz/test_fuzz_<name>.sh): its seeds from tests/fuzz/corpus/<name>/, then mutations.
# Builds nothing: `make test` builds build/fuzz/fuzz_* first. The whole suite stays within
# CO_FUZZ_SMOKE_SECONDS (default 100) of fuzzing, shared between the targets (5 to 30 s each).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/support/tap.sh

budget=${CO_FUZZ_SMOKE_SECONDS:-100}
targets=()
for src in tests/fuzz/fuzz_*.c; do
    [ -e "$src" ] || continue
    name=$(basename "$src" .c)
    # targets with a dedicated suite are run there
    [ -e "tests/fuzz/test_${name}.sh" ] && continue
    targets+=("${name#fuzz_}")
done
if [ ${#targets[@]} -eq 0 ]; then
    tap_fail "fuzz targets found" "no tests/fuzz/fuzz_*.c without a dedicated suite"
    tap_done
    exit
fi
secs=$((budget / ${#targets[@]}))
[ "$secs" -lt 5 ] && secs=5
[ "$secs" -gt 30 ] && secs=30

work=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzz-smoke-XXXXXX")
trap 'rm -rf "$work"' EXIT
for name in "${targets[@]}"; do
    bin=build/fuzz/fuzz_$name
    if [ ! -x "$bin" ]; then
        tap_fail "fuzz_$name is built" "missing $bin (make fuzz builds it)"
        continue
    fi
    seeds=tests/fuzz/corpus/$name
    if [ ! -d "$seeds" ] || [ -z "$(ls -A "$seeds")" ]; then
        tap_fail "fuzz_$name has seeds" "no seed corpus in $seeds"
        continue
    fi
    mkdir -p "$work/$name"
    log=$work/$name.log
    if "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
        -artifact_prefix="$work/$name-" "$work/$name" "$seeds" >"$log" 2>&1; then
        runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')
        tap_ok "fuzz_$name: seeds and ${secs}s of mutations without a finding (${runs:-?} runs)"
    else
        tap_fail "fuzz_$name: seeds and ${secs}s of mutations without a finding" \
            "$(grep -E 'ERROR|SUMMARY|Test unit written|==[0-9]+==' "$log" | head -n 20)" \
            "$(tail -n 20 "$log")"
        for a in "$work/$name"-*; do
            [ -e "$a" ] && printf '# reproducer (base64): %s\n' "$(base64 -w0 "$a")"
        done
    fi
done
tap_done
