#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# sprig's crypto functions against Go, where results are random: keys, certificates, bcrypt
# hashes and AES ciphertexts made by our engine (through `component-controller template`) are
# checked by Go (x509 chain verification, key/certificate pairs, the shape of the certificate
# sprig makes from the same template, x/crypto/bcrypt, sprig's decryptAES), and Go's CAs and
# ciphertexts are used by ours (tests/oracle/cryptocheck). Deterministic results and error
# messages are compared byte for byte by the template oracle suite (cases/sprig_crypto.txt).
set -uo pipefail
ROOT=${CO_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/support/tap.sh"
BIN=${CO_CONTROLLER_BIN:-$ROOT/build/test/component-controller}
TMPL=$ROOT/tests/oracle/cryptocheck/crosscheck.tpl
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if ! checker=$("$ROOT/tests/oracle/build.sh" cryptocheck 2>"$TMP/build.err"); then
    tap_fail "the Go crypto checker builds (needs golang-go and golang-golang-x-crypto-dev)" \
        "$(cat "$TMP/build.err")"
    tap_done
    exit
fi

if ! "$checker" gen >"$TMP/go.json" 2>"$TMP/gen.err"; then
    tap_fail "Go makes the cross-check data" "$(cat "$TMP/gen.err")"
    tap_done
    exit
fi
tap_ok "Go makes the cross-check data"

if ! "$BIN" template --data "$TMP/go.json" --set ours=true "$TMPL" >"$TMP/ours.json" \
    2>"$TMP/ours.err"; then
    tap_fail "our engine renders the cross-check template" "$(cat "$TMP/ours.err")"
    tap_done
    exit
fi
tap_ok "our engine renders the cross-check template"

"$checker" check "$TMPL" "$TMP/go.json" "$TMP/ours.json" >"$TMP/check.out" 2>"$TMP/check.err"
while IFS= read -r line; do
    case $line in
    "ok - "*) tap_ok "${line#ok - }" ;;
    "not ok - "*)
        rest=${line#not ok - }
        tap_fail "${rest%%: *}" "${rest#*: }"
        ;;
    esac
done <"$TMP/check.out"
if [ -s "$TMP/check.err" ]; then
    tap_fail "the Go checker runs cleanly" "$(cat "$TMP/check.err")"
fi
checks=$(grep -c '^ok - \|^not ok - ' "$TMP/check.out")
if [ "$checks" -ge 60 ]; then
    tap_ok "the Go checker ran all its checks ($checks)"
else
    tap_fail "the Go checker ran all its checks" "only $checks"
fi
tap_done
