#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A short libFuzzer run of the semantic version and constraint target: the seeds, then
# mutations for CO_FUZZ_SECONDS (default 5). A crash, a sanitizer report, a leak, a
# hang or a broken property (the target traps) fails the run. `make fuzz-campaign` runs it
# for longer.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/support/tap.sh

bin=build/fuzz/fuzz_semver
secs=${CO_FUZZ_SECONDS:-5}
if [ ! -x "$bin" ]; then
    tap_fail "fuzz_semver is built" "missing $bin; run make fuzz"
    tap_done
    exit
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzz-semver-run-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
tap_check "fuzz_semver: seeds and ${secs}s of mutations without a finding" \
    "$bin" -max_total_time="$secs" -max_len=512 -rss_limit_mb=2048 -timeout=30 \
    -artifact_prefix="$work/" "$work/corpus" tests/fuzz/corpus/semver
tap_done
