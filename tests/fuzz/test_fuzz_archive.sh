#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A short libFuzzer run of the archive extraction target: the seeds, then mutations for
# CO_FUZZ_SECONDS (default 20). The target aborts on a crash, a sanitizer report, a file left
# behind by a failed extraction, or a symlink that resolves outside the extracted tree.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/support/tap.sh

bin=build/fuzz/fuzz_archive
secs=${CO_FUZZ_SECONDS:-20}
if [ ! -x "$bin" ]; then
    tap_fail "fuzz_archive is built" "missing $bin; run make fuzz"
    tap_done
    exit
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzz-archive-run-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
tap_check "fuzz_archive: seeds and ${secs}s of mutations without a finding" \
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -artifact_prefix="$work/" \
    "$work/corpus" tests/fuzz/corpus/archive
tap_done
