#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The short form of the API server and etcd restart campaign (tests/chaos/apiserver_restart.sh,
# docs/chaos.md): 10 Components in churn against both daemons, kube-apiserver restarted twice
# (SIGTERM, then SIGKILL) and etcd once; after each restart the controller takes a new
# Component to Ready and the webhook refuses a cycle through a Component created after it; no
# leak, no loss, no live object deleted.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"
# shellcheck source=../support/e2e.sh
. "$ROOT/tests/support/e2e.sh"
# shellcheck source=../support/chaos_tap.sh
. "$ROOT/tests/support/chaos_tap.sh"

e2e_need_cluster
if [ -z "${CO_TEST_CONTROLPLANE_DIR:-}" ]; then
    tap_skip "test_chaos_apiserver_restart__campaign_passes" "no control plane to restart"
    tap_done
    exit
fi
chaos_run apiserver_restart CHAOS_COMPONENTS=10 CHAOS_RESTARTS=2 CHAOS_SETTLE_SECONDS=150 \
    CHAOS_RESTART_MIN_MS=1000 CHAOS_RESTART_MAX_MS=4000
chaos_expect "restarts survived" eq 3
chaos_expect "live at the end" ge 5
chaos_expect "objects checked" ge 5
chaos_expect "live objects deleted" eq 0
chaos_expect leaks eq 0
chaos_expect lost eq 0
chaos_expect "not ready" eq 0
chaos_expect "stuck finalizers" eq 0
tap_done
