#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Conformance: `component-controller render` decrypts Secrets written by the real sops, Flux's
# kustomize-controller test data with its age and OpenPGP keys ($CO_SHARED_FIXTURES/sops/flux),
# given with --decryption-keys or through a Component's decryption Secret. `make test` checks
# the same with files encrypted at test time (tests/unit/test_cli_render.sh).
set -uo pipefail
ROOT=${CO_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/support/tap.sh"
BIN=${CO_CONTROLLER_BIN:-$ROOT/build/test/component-controller}
if [ -z "${CO_SHARED_FIXTURES:-}" ] || [ ! -d "$CO_SHARED_FIXTURES/sops/flux" ]; then
    tap_fail "the fixtures of other projects are there" \
        "CO_SHARED_FIXTURES (${CO_SHARED_FIXTURES:-unset}) holds no sops/flux; run make test-conformance"
    tap_done
    exit
fi
DATA=$CO_SHARED_FIXTURES/sops/flux/controller/testdata/sops
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

mkdir -p "$TMP/enc" "$TMP/agekeys" "$TMP/pgpkeys" "$TMP/pgp" "$TMP/src/enc"
cp "$DATA/algorithms/age.yaml" "$TMP/enc/secret.yaml"
cp "$DATA/algorithms/age.yaml" "$TMP/src/enc/secret.yaml"
cp "$DATA/keys/age.txt" "$TMP/agekeys/flux.agekey"
cp "$DATA/algorithms/pgp.yaml" "$TMP/pgp/secret.yaml"
cp "$DATA/keys/pgp.asc" "$TMP/pgpkeys/flux.asc"

secret_key() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["items"][0]["stringData"]["key"])' "$1" 2>&1
}
# expect_key DESC: the rendered Secret's stringData.key is kustomize-controller's `value`.
expect_key() {
    local got
    got=$(secret_key "$TMP/out.json")
    if [ "$got" = value ]; then
        tap_ok "$1"
    else
        tap_fail "$1" "expected: value" "actual:   $got" "$(cat "$TMP/err")"
    fi
}

tap_check_fails "a file sops encrypted, without keys, is an error naming the file" "secret.yaml" \
    "$BIN" render "$TMP/enc"
"$BIN" render -o json --decryption-keys "$TMP/agekeys" "$TMP/enc" >"$TMP/out.json" 2>"$TMP/err"
expect_key "--decryption-keys: Flux's age key decrypts Flux's age-encrypted Secret"
"$BIN" render -o json --decryption-keys "$TMP/pgpkeys" "$TMP/pgp" >"$TMP/out.json" 2>"$TMP/err"
expect_key "--decryption-keys: Flux's OpenPGP key decrypts Flux's PGP-encrypted Secret"
tap_check_fails "keys that do not fit fail the decryption" "secret.yaml" \
    "$BIN" render --decryption-keys "$TMP/pgpkeys" "$TMP/enc"

cat >"$TMP/component.yaml" <<'Y'
apiVersion: core.cs.sap.com/v1alpha1
kind: Component
metadata:
  name: shop
  namespace: apps
spec:
  sourceRef:
    fluxGitRepository:
      name: repo
  path: enc
  decryption:
    secretRef:
      name: sops-keys
Y
python3 - "$TMP/agekeys/flux.agekey" >"$TMP/key-secret.yaml" <<'PY'
import base64, sys
print("apiVersion: v1\nkind: Secret\nmetadata:\n  name: sops-keys\ndata:\n  identity.agekey: "
      + base64.b64encode(open(sys.argv[1], "rb").read()).decode())
PY
"$BIN" render -o json --component "$TMP/component.yaml" --secret "$TMP/key-secret.yaml" \
    "$TMP/src" >"$TMP/out.json" 2>"$TMP/err"
expect_key "--component: spec.decryption's Secret decrypts Flux's age-encrypted Secret"
tap_done
