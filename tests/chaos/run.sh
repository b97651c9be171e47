#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# make chaos: runs the reliability campaigns (docs/chaos.md) one after the other, each at its
# full size and against a private control plane of its own, and prints every summary.
#
#   tests/chaos/run.sh                   every campaign
#   tests/chaos/run.sh controller_kill   one (controller_kill, apiserver_restart, network_faults,
#                                        webhook_faults, soak)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ALL=(controller_kill apiserver_restart network_faults webhook_faults soak)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${ALL[@]}")
failed=()
for n in "${names[@]}"; do
    if [ ! -x "$ROOT/tests/chaos/$n.sh" ]; then
        echo "no campaign $n (one of: ${ALL[*]})" >&2
        exit 2
    fi
done
for n in "${names[@]}"; do
    echo "=== $n ($(date -u +%FT%TZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null))"
    # a private control plane: the campaigns restart it and fill it
    if ! env -u CO_TEST_KUBECONFIG -u CO_TEST_CONTROLPLANE_DIR "$ROOT/tests/chaos/$n.sh"; then
        failed+=("$n")
    fi
done
echo
if [ ${#failed[@]} -gt 0 ]; then
    echo "campaigns failed: ${failed[*]}"
    exit 1
fi
echo "all ${#names[@]} campaigns passed"
