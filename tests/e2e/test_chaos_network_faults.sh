#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The short form of the slow and failing network campaign (tests/chaos/network_faults.sh,
# docs/chaos.md): two controller replicas with leader election, each through a fault proxy
# (latency, resets, stalls) for 60 s while 10 Components churn; no two replicas act at the
# same time, and afterwards nothing leaked or was lost.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"
# shellcheck source=../support/e2e.sh
. "$ROOT/tests/support/e2e.sh"
# shellcheck source=../support/chaos_tap.sh
. "$ROOT/tests/support/chaos_tap.sh"

e2e_need_cluster
chaos_run network_faults CHAOS_COMPONENTS=10 CHAOS_FAULT_SECONDS=60 CHAOS_SETTLE_SECONDS=150
chaos_expect "leadership terms" ge 1
chaos_expect "overlapping leaders" eq 0
chaos_expect leaks eq 0
chaos_expect lost eq 0
chaos_expect "not ready" eq 0
chaos_expect "stuck finalizers" eq 0
tap_done
