#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The short form of the soak (tests/chaos/soak.sh, docs/chaos.md): 2 minutes of Component
# churn against both daemons, memory, descriptors and threads sampled every 10 s; memory after
# warm-up grows by at most 5%, descriptors and threads stay bounded, nothing leaks or is lost.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"
# shellcheck source=../support/e2e.sh
. "$ROOT/tests/support/e2e.sh"
# shellcheck source=../support/chaos_tap.sh
. "$ROOT/tests/support/chaos_tap.sh"

e2e_need_cluster
chaos_run soak SOAK_MINUTES=2 SOAK_SAMPLE_SECONDS=10 CHAOS_COMPONENTS=10
chaos_expect samples ge 12
chaos_expect leaks eq 0
chaos_expect lost eq 0
chaos_expect "not ready" eq 0
chaos_expect "stuck finalizers" eq 0
tap_done
