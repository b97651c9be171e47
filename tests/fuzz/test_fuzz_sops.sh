#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A short libFuzzer run of the sops target: the seeds (tests/fuzz/corpus/sops and files
# encrypted for the run), then mutations for CO_FUZZ_SECONDS (default 20). A crash, a sanitizer
# report, a leak or a hang fails the run.
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
trap 'tests/support/sopsgen.sh stop "$work/keys" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/extra"
# Files encrypted for this run join the seeds: every format, age and OpenPGP recipients, key
# groups (tests/support/sopsgen.sh; the target's own identity is not among them).
seeds_made() {
    local f req
    tests/support/sopsgen.sh keys "$work/keys" || return 1
    for f in yaml json dotenv ini binary; do
        req='{"format":"'$f'","tree":{"s":{"k":"v","n":1,"b":true,"l":["x",2.5]},"t":{"p_unencrypted":"open"}},"groups":[[{"age":"@0"},{"pgp":"@pgp"}]],"lastmodified":"2024-01-02T03:04:05Z"}'
        case $f in
        dotenv) req='{"format":"dotenv","tree":{"K":"v","M":"a\nb"},"groups":[[{"age":"@0"}]],"lastmodified":"2024-01-02T03:04:05Z"}' ;;
        ini) req='{"format":"ini","tree":{"s":{"k":"v"},"t":{"p_unencrypted":"open"}},"groups":[[{"age":"@1"}]],"lastmodified":"2024-01-02T03:04:05Z"}' ;;
        binary) req='{"format":"binary","tree":{"data":"raw\u0001bytes"},"groups":[[{"age":"@0"}],[{"age":"@1"}]],"threshold":2,"lastmodified":"2024-01-02T03:04:05Z"}' ;;
        esac
        tests/support/sopsgen.sh encrypt "$work/keys" <<<"$req" >"$work/extra/made.$f" || return 1
    done
}
tap_check "fuzz_sops: seed files are encrypted for the run (age-keygen, gpg, sopsgen)" seeds_made
tap_check "fuzz_sops: seeds and ${secs}s of mutations without a finding" \
    "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -artifact_prefix="$work/" \
    "$work/corpus" tests/fuzz/corpus/sops "$work/extra"
tap_done
