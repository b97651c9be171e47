#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A short libFuzzer run of the template target (parse and render): the seeds, then mutations
# for CO_FUZZ_SECONDS (default 20). A crash, a sanitizer report, a leak or a hang fails the run.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/support/tap.sh

bin=build/fuzz/fuzz_template
secs=${CO_FUZZ_SECONDS:-20}
if [ ! -x "$bin" ]; then
    tap_fail "fuzz_template is built" "missing $bin; run make fuzz"
    tap_done
    exit
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzz-template-run-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
tap_check "fuzz_template: seeds and ${secs}s of mutations without a finding" \
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -max_len=4096 \
    -artifact_prefix="$work/" "$work/corpus" tests/fuzz/corpus/template
tap_done
