#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A short libFuzzer run of the chart metadata target (Chart.yaml, requirements.yaml,
# values.yaml): the seeds, then mutations for CO_FUZZ_SECONDS (default 5). A crash, a sanitizer report, a leak, a
# hang or a broken property (the target traps) fails the run. `make fuzz-campaign` runs it
# for longer.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/support/tap.sh

bin=build/fuzz/fuzz_helm_chart
secs=${CO_FUZZ_SECONDS:-5}
if [ ! -x "$bin" ]; then
    tap_fail "fuzz_helm_chart is built" "missing $bin; run make fuzz"
    tap_done
    exit
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzz-helm_chart-run-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
tap_check "fuzz_helm_chart: seeds and ${secs}s of mutations without a finding" \
    "$bin" -max_total_time="$secs" -max_len=4096 -rss_limit_mb=2048 -timeout=30 \
    -artifact_prefix="$work/" "$work/corpus" tests/fuzz/corpus/helm_chart
tap_done
