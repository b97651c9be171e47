#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Conformance: tests/integration/test_ctl_sources against the published Flux source CRDs
# ($CO_SHARED_FIXTURES/flux-crds) instead of the repository's own (tests/fixtures/flux-crds):
# every behaviour of that suite, with the CRDs a cluster running Flux has.
set -uo pipefail
ROOT=${CO_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/support/tap.sh"
if [ -z "${CO_SHARED_FIXTURES:-}" ] || [ ! -d "$CO_SHARED_FIXTURES/flux-crds" ]; then
    tap_fail "the published Flux CRDs are there" \
        "CO_SHARED_FIXTURES (${CO_SHARED_FIXTURES:-unset}) holds no flux-crds; run make test-conformance"
    tap_done
    exit
fi
CO_FLUX_CRDS_DIR=$CO_SHARED_FIXTURES/flux-crds exec "$ROOT/build/test/tests/integration/test_ctl_sources"
