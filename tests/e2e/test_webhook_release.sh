#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_webhook.sh once more with the release build of component-webhook: the binary that ships
# allocates with mimalloc, which the sanitizer build that test_webhook.sh runs replaces with the
# sanitizer's allocator, and is optimised; both must behave the same against the real API server.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export CO_WEBHOOK_BIN=${CO_WEBHOOK_RELEASE_BIN:-$ROOT/build/release/component-webhook}
exec "$ROOT/tests/e2e/test_webhook.sh"
