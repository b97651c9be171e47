#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A short libFuzzer run of the kube_watch target: the seeds, then mutations for CO_FUZZ_SECONDS
# (default 20). A crash, a sanitizer report, a leak or a hang fails the run.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/support/tap.sh

bin=build/fuzz/fuzz_kube_watch
secs=${CO_FUZZ_SECONDS:-20}
if [ ! -x "$bin" ]; then
    tap_fail "fuzz_kube_watch is built" "missing $bin; run make fuzz"
    tap_done
    exit
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzz-kube_watch-run-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/extra"
tap_check "fuzz_kube_watch: seeds and ${secs}s of mutations without a finding" \
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -artifact_prefix="$work/" \
    "$work/corpus" tests/fuzz/corpus/kube_watch "$work/extra"
tap_done
