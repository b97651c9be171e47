#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A short libFuzzer run of the PEM and key parsers (certs/ and the serving pair store): the
# seeds (pairs, chains, broken PEM), then mutations for CO_FUZZ_SECONDS (default 20). A crash,
# a sanitizer report, a leak, a hang, or parsers that disagree (the target traps) fails it.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/support/tap.sh

bin=build/fuzz/fuzz_pem
secs=${CO_FUZZ_SECONDS:-20}
if [ ! -x "$bin" ]; then
    tap_fail "fuzz_pem is built" "missing $bin; run make fuzz"
    tap_done
    exit
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzz-pem-run-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
tap_check "fuzz_pem: seeds and ${secs}s of mutations without a finding" \
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -artifact_prefix="$work/" \
    "$work/corpus" tests/fuzz/corpus/pem
tap_done
