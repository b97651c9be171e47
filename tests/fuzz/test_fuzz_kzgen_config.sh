#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A short libFuzzer run of the kustomize generator's .component-config.yaml handling (parse
# and render of a small templated tree): the seeds (every option, JSON spelling, bad types,
# include cycles), then mutations for CO_FUZZ_SECONDS (default 20). A crash, a sanitizer report,
# a leak, a hang, or a result that is not a list of objects fails it.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/support/tap.sh

bin=build/fuzz/fuzz_kzgen_config
secs=${CO_FUZZ_SECONDS:-20}
if [ ! -x "$bin" ]; then
    tap_fail "fuzz_kzgen_config is built" "missing $bin; run make fuzz"
    tap_done
    exit
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/co-fuzz-kzgen-config-run-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
tap_check "fuzz_kzgen_config: seeds and ${secs}s of mutations without a finding" \
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -artifact_prefix="$work/" \
    "$work/corpus" tests/fuzz/corpus/kzgen_config
tap_done
