#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A short libFuzzer run of the sops target: the seeds, then mutations for CO_FUZZ_SECONDS
# (default 20). A crash, a sanitizer report, a leak or a hang fails the run.
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
work=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzz-sops-run-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/extra"
# Real sops files from the shared fixtures (beside the repository) join the seeds for this run.
if [ -d ../shared/fixtures/sops ]; then
    find ../shared/fixtures/sops -type f \( -name '*.yaml' -o -name '*.json' -o -name '*.env' \
        -o -name '*.ini' -o -name '*.txt' \) -size -64k -exec cp --backup=numbered {} "$work/extra/" \; 2>/dev/null
fi
tap_check "fuzz_sops: seeds and ${secs}s of mutations without a finding" \
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -artifact_prefix="$work/" \
    "$work/corpus" tests/fuzz/corpus/sops "$work/extra"
tap_done
