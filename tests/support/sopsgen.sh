#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# SOPS-encrypted test data made at test time, so that no test needs files encrypted elsewhere.
# Debian ships no sops program; tests/oracle/sopsgen (Go standard library only, built by
# tests/oracle/build.sh) writes the SOPS format instead and wraps each data key with the real
# `age` and `gpg` command-line tools, for keys made here by `age-keygen` and `gpg`.
#
#   tests/support/sopsgen.sh keys DIR             make the keys in DIR (created, mode 0700)
#   tests/support/sopsgen.sh encrypt DIR <REQ >F  encrypt: REQ is a sopsgen request (JSON, see
#                                                 tests/oracle/sopsgen/main.go) in which @0 and
#                                                 @1 stand for the age recipients and @pgp for
#                                                 the OpenPGP fingerprint
#   tests/support/sopsgen.sh stop DIR             stop DIR's gpg-agent (before removing DIR)
#
# DIR after `keys`:
#   age0.agekey, age1.agekey        age identities, as a decryption Secret's *.agekey entries
#   age0.recipient, age1.recipient  their public keys (age1...)
#   pgp.asc                         an unprotected RSA OpenPGP secret key, ASCII-armoured, as a
#                                   decryption Secret's *.asc entry
#   pgp.fpr                         its fingerprint
#   gnupg/                          the GnuPG home holding it
#   sopsgen                         the path of the sopsgen binary
# Exits 3 with a message naming the missing tool when age-keygen, gpg or go is absent (make deps
# installs them).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

usage() {
    sed -n '8,14p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
[ $# = 2 ] || usage
cmd=$1
dir=$2

missing() {
    echo "sopsgen.sh: $1 is missing (make deps installs it)" >&2
    exit 3
}

keys() {
    local t
    for t in age-keygen age gpg gpgconf go; do
        command -v "$t" >/dev/null 2>&1 || missing "$t"
    done
    mkdir -p "$dir"
    chmod 0700 "$dir"
    local bin
    bin=$("$ROOT/tests/oracle/build.sh" sopsgen) || missing "go (to build tests/oracle/sopsgen)"
    printf '%s\n' "$bin" >"$dir/sopsgen"
    for i in 0 1; do
        age-keygen -o "$dir/age$i.agekey" 2>/dev/null
        age-keygen -y "$dir/age$i.agekey" >"$dir/age$i.recipient"
    done
    mkdir -p "$dir/gnupg"
    chmod 0700 "$dir/gnupg"
    local g=(gpg --homedir "$dir/gnupg" --batch --quiet)
    # RSA, the kind most SOPS users hold; an encryption subkey under a signing primary key, as
    # gpg makes them by default. No passphrase: a decryption Secret holds the key unprotected.
    "${g[@]}" --gen-key 2>/dev/null <<'EOF'
%no-protection
Key-Type: RSA
Key-Length: 2048
Key-Usage: sign
Subkey-Type: RSA
Subkey-Length: 2048
Subkey-Usage: encrypt
Name-Real: component-operator test
Name-Email: test@example.invalid
Expire-Date: 0
%commit
EOF
    "${g[@]}" --with-colons --list-secret-keys | awk -F: '$1 == "fpr" { print $10; exit }' \
        >"$dir/pgp.fpr"
    [ -s "$dir/pgp.fpr" ] || {
        echo "sopsgen.sh: gpg made no key in $dir/gnupg" >&2
        exit 1
    }
    "${g[@]}" --armor --export-secret-keys "$(cat "$dir/pgp.fpr")" >"$dir/pgp.asc"
}

encrypt() {
    [ -s "$dir/sopsgen" ] || {
        echo "sopsgen.sh: $dir holds no keys (run: sopsgen.sh keys $dir)" >&2
        exit 1
    }
    sed -e "s/@pgp/$(cat "$dir/pgp.fpr")/g" -e "s/@0/$(cat "$dir/age0.recipient")/g" \
        -e "s/@1/$(cat "$dir/age1.recipient")/g" |
        GNUPGHOME=$dir/gnupg "$(cat "$dir/sopsgen")"
}

case $cmd in
keys) keys ;;
encrypt) encrypt ;;
stop) [ ! -d "$dir/gnupg" ] || gpgconf --homedir "$dir/gnupg" --kill all 2>/dev/null || true ;;
*) usage ;;
esac
