#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Conformance: a short libFuzzer run of the sops target seeded with files written by the real
# sops ($CO_SHARED_FIXTURES/sops: Flux's and sops' own test data) besides the repository's
# seeds, for CO_FUZZ_SECONDS (default 20). A crash, a sanitizer report, a leak or a hang fails
# the run. tests/fuzz/test_fuzz_sops.sh does the same in `make test` with files made at test
# time.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/support/tap.sh

bin=build/fuzz/fuzz_sops
secs=${CO_FUZZ_SECONDS:-20}
if [ ! -x "$bin" ]; then
    tap_fail "fuzz_sops is built" "missing $bin; run make fuzz"
    tap_done
    exit
fi
if [ -z "${CO_SHARED_FIXTURES:-}" ] || [ ! -d "$CO_SHARED_FIXTURES/sops" ]; then
    tap_fail "the fixtures of other projects are there" \
        "CO_SHARED_FIXTURES (${CO_SHARED_FIXTURES:-unset}) holds no sops; run make test-conformance"
    tap_done
    exit
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzz-sops-files-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/extra"
find "$CO_SHARED_FIXTURES/sops" -type f \( -name '*.yaml' -o -name '*.json' -o -name '*.env' \
    -o -name '*.ini' -o -name '*.txt' \) -size -64k -exec cp --backup=numbered {} "$work/extra/" \;
tap_check "fuzz_sops: files the real sops wrote are among the seeds" \
    test -n "$(ls -A "$work/extra")"
tap_check "fuzz_sops: those seeds and ${secs}s of mutations without a finding" \
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -artifact_prefix="$work/" \
    "$work/corpus" tests/fuzz/corpus/sops "$work/extra"
tap_done
