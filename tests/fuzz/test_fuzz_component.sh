#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A short libFuzzer run of the Component API target (validation, defaulting, parsing,
# conversion round trips, dependency graph, ComponentPolicy): the seeds, then mutations for
# CO_FUZZ_SECONDS (default 20). A crash, a sanitizer report, a leak, a hang or a broken
# round-trip property fails the run.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/support/tap.sh

bin=build/fuzz/fuzz_component
secs=${CO_FUZZ_SECONDS:-20}
if [ ! -x "$bin" ]; then
    tap_fail "fuzz_component is built" "missing $bin; run make fuzz"
    tap_done
    exit
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzz-component-run-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
tap_check "fuzz_component: seeds and ${secs}s of mutations without a finding" \
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -max_len=65536 \
    -artifact_prefix="$work/" "$work/corpus" tests/fuzz/corpus/component
tap_done
