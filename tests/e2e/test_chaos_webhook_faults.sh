#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The short form of the webhook fault campaign (tests/chaos/webhook_faults.sh, docs/chaos.md):
# 100 admissions with failurePolicy Fail, the webhook killed with SIGKILL during them; writes
# are refused while it is down and pass right after its restart; then 2 rotations of the
# serving certificate under load without one failed write.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"
# shellcheck source=../support/e2e.sh
. "$ROOT/tests/support/e2e.sh"
# shellcheck source=../support/chaos_tap.sh
. "$ROOT/tests/support/chaos_tap.sh"

e2e_need_cluster
chaos_run webhook_faults CHAOS_ADMISSIONS=100 CHAOS_ROTATIONS=2
chaos_expect "webhook kills" ge 1
chaos_expect "refused while down" ge 1
chaos_expect "failed right after restart" eq 0
chaos_expect "failed while up" eq 0
chaos_expect "serving rotations" ge 2
chaos_expect "failed during rotation" eq 0
tap_done
