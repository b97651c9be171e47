#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# crds/ cannot drift from the schema in the code: `make crds`, the one documented way to
# regenerate it, run into a scratch directory reproduces every committed file byte for byte
# (crds/, crds/v1beta1/, the chart's template of the Component CRD and the copies in deploy/)
# and no other file; and the unit tests that guard the committed files notice a tampered copy.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/co-test-crds-generated-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
gen=$tmp/gen

# a make of its own, not a part of the one that may be running the tests
if out=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$ROOT" crds \
    CRDS_OUT="$gen/crds" DEPLOY_OUT="$gen/deploy" 2>&1); then
    tap_ok "test_crds_generated__make_crds_runs"
else
    tap_fail "test_crds_generated__make_crds_runs" "$out"
fi

# generated DIR: the generated files under DIR, relative to it (kustomization.yaml is written
# by hand next to the copies in deploy/).
generated() {
    (cd "$1" && find . -type f -name '*.yaml' ! -name kustomization.yaml | sed 's|^\./||' | sort)
}
tap_eq "test_crds_generated__same_files" "$(generated "$ROOT/crds")" "$(generated "$gen/crds")"
# deploy/: the directories make crds writes into hold what it writes and nothing else (a
# Component CRD left in deploy/chart/crds would be installed by Helm next to the template)
for d in crds v1beta1 chart/crds; do
    tap_eq "test_crds_generated__same_files_in_deploy_${d//\//_}" \
        "$(generated "$ROOT/deploy/$d")" "$(generated "$gen/deploy/$d")"
done
tap_eq "test_crds_generated__chart_crds_hold_no_component_crd" \
    "$(printf '%s\n' core.cs.sap.com_blueprints.yaml core.cs.sap.com_blueprintversions.yaml \
        core.cs.sap.com_componentpolicies.yaml)" "$(generated "$ROOT/deploy/chart/crds")"
for rel in $(generated "$gen/crds" | sed 's|^|crds/|') $(generated "$gen/deploy" | sed 's|^|deploy/|'); do
    name=${rel//\//_}
    if out=$(diff -u "$ROOT/$rel" "$gen/$rel" 2>&1); then
        tap_ok "test_crds_generated__identical__$name"
    else
        tap_fail "test_crds_generated__identical__$name" "run \`make crds\` and commit $rel" "$out"
    fi
done

# The guards themselves: a generated file edited by hand fails the unit test that writes it.
# tamper FILE...: a copy of the generated tree with the first description of each FILE edited.
tamper() {
    rm -rf "$tmp/tampered"
    cp -r "$gen" "$tmp/tampered"
    local f
    for f in "$@"; do
        sed -i '0,/description: /s/description: /description: Edited by hand. /' "$tmp/tampered/$f"
    done
}
check_tampered() { # NAME TEST FILE...
    local name=$1 test=$2
    shift 2
    tamper "$@"
    tap_check_fails "test_crds_generated__tampered_file_fails_test_$name" \
        "$1 differs from the schema in the code; regenerate it with .make crds." \
        env CO_CRDS_DIR="$tmp/tampered/crds" CO_DEPLOY_DIR="$tmp/tampered/deploy" \
        "$ROOT/build/test/tests/unit/test_$test"
}
check_tampered component component crds/core.cs.sap.com_components.yaml
check_tampered component_v1beta1 component crds/v1beta1/core.cs.sap.com_components.yaml
check_tampered component_chart_template component deploy/chart/templates/crd-components.yaml
check_tampered policy policy crds/core.cs.sap.com_componentpolicies.yaml
check_tampered blueprint blueprint crds/core.cs.sap.com_blueprints.yaml
check_tampered blueprintversion blueprint crds/core.cs.sap.com_blueprintversions.yaml
# and the untouched tree passes them
for t in component policy blueprint; do
    tap_check "test_crds_generated__generated_tree_passes_test_$t" \
        env CO_CRDS_DIR="$gen/crds" CO_DEPLOY_DIR="$gen/deploy" "$ROOT/build/test/tests/unit/test_$t"
done

tap_done
