#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# crds/ cannot drift from the schema in the code: `make crds`, the one documented way to
# regenerate it, run into a scratch directory reproduces every committed file byte for byte and
# no other file; and the unit tests that guard the committed files notice a tampered copy.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/co-test-crds-generated-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# a make of its own, not a part of the one that may be running the tests
if out=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$ROOT" crds \
    CRDS_OUT="$tmp/crds" 2>&1); then
    tap_ok "test_crds_generated__make_crds_runs"
else
    tap_fail "test_crds_generated__make_crds_runs" "$out"
fi

tap_eq "test_crds_generated__same_files" "$(cd "$ROOT/crds" && ls)" "$(cd "$tmp/crds" && ls)"
for f in "$ROOT"/crds/*.yaml; do
    name=$(basename "$f")
    if out=$(diff -u "$f" "$tmp/crds/$name" 2>&1); then
        tap_ok "test_crds_generated__identical__$name"
    else
        tap_fail "test_crds_generated__identical__$name" "run \`make crds\` and commit crds/" "$out"
    fi
done

# The guards themselves: a committed file edited by hand fails the unit tests.
mkdir -p "$tmp/tampered"
cp "$ROOT"/crds/*.yaml "$tmp/tampered/"
sed -i '0,/description: /s/description: /description: Edited by hand. /' "$tmp/tampered"/*.yaml
for t in component policy; do
    tap_check_fails "test_crds_generated__tampered_file_fails_test_$t" \
        "differs from the schema in the code; regenerate it with .make crds." \
        env CO_CRDS_DIR="$tmp/tampered" "$ROOT/build/test/tests/unit/test_$t"
done

tap_done
