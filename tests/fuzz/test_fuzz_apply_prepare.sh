#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A short libFuzzer run of the apply engine's pre-processing of rendered objects (annotations of
# policies, waves, participation and status hints; normalisation, scope fix-up, the inventory
# round trip, readiness): the seeds, then mutations for CO_FUZZ_SECONDS (default 20). A crash,
# a sanitizer report, a leak, a hang or a broken idempotence / round-trip property fails the run.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/support/tap.sh

bin=build/fuzz/fuzz_apply_prepare
secs=${CO_FUZZ_SECONDS:-20}
if [ ! -x "$bin" ]; then
    tap_fail "fuzz_apply_prepare is built" "missing $bin; run make fuzz"
    tap_done
    exit
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzz-apply-prepare-run-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
tap_check "fuzz_apply_prepare: seeds and ${secs}s of mutations without a finding" \
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -max_len=65536 \
    -artifact_prefix="$work/" "$work/corpus" tests/fuzz/corpus/apply_prepare
tap_done
