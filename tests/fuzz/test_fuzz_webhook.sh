#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A short libFuzzer run of the webhook request handler: the seeds (fixture reviews with a route
# and media-type prefix), then mutations for CO_FUZZ_SECONDS (default 20). A crash, a sanitizer
# report, a leak, a hang, or an answer that breaks the protocol (the target traps) fails it.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/support/tap.sh

bin=build/fuzz/fuzz_webhook
secs=${CO_FUZZ_SECONDS:-20}
if [ ! -x "$bin" ]; then
    tap_fail "fuzz_webhook is built" "missing $bin; run make fuzz"
    tap_done
    exit
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzz-webhook-run-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
tap_check "fuzz_webhook: seeds and ${secs}s of mutations without a finding" \
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -artifact_prefix="$work/" \
    "$work/corpus" tests/fuzz/corpus/webhook
tap_done
