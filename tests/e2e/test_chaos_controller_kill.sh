#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The short form of the controller kill campaign (tests/chaos/controller_kill.sh,
# docs/chaos.md): 10 Components in churn, the controller killed with SIGKILL 3 times; no leak,
# no loss, every live Component Ready, no finalizer left on a deleted one.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"
# shellcheck source=../support/e2e.sh
. "$ROOT/tests/support/e2e.sh"
# shellcheck source=../support/chaos_tap.sh
. "$ROOT/tests/support/chaos_tap.sh"

e2e_need_cluster
chaos_run controller_kill CHAOS_COMPONENTS=10 CHAOS_KILLS=3 CHAOS_SETTLE_SECONDS=150
chaos_expect kills eq 3
chaos_expect "live at the end" ge 5
chaos_expect "objects checked" ge 5
chaos_expect leaks eq 0
chaos_expect lost eq 0
chaos_expect "not ready" eq 0
chaos_expect "stuck finalizers" eq 0
tap_done
