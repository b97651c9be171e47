#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds a Go differential oracle from tests/oracle/<name>/ in GOPATH mode against Debian's
# golang-*-dev packages and prints the path of the binary, cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/component-operator/oracles/ and rebuilt when the source
# changes. Exits 3 (and prints nothing) when Go or the library package is missing.
#
#   tests/oracle/build.sh envsubst
set -euo pipefail
name=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$root/tests/oracle/$name
cache=${XDG_CACHE_HOME:-$HOME/.cache}/component-operator/oracles
command -v go >/dev/null 2>&1 || exit 3
case $name in
envsubst) [ -d /usr/share/gocode/src/github.com/drone/envsubst ] || exit 3 ;;
cryptocheck) [ -d /usr/share/gocode/src/golang.org/x/crypto/bcrypt ] || exit 3 ;;
esac
sum=$(cat "$src"/*.go | sha256sum | cut -c1-16)
bin=$cache/$name-$sum
if [ ! -x "$bin" ]; then
    mkdir -p "$cache"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    cp "$src"/*.go "$tmp"/
    (cd "$tmp" && GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS=-mod=mod \
        GOCACHE="${GOCACHE:-$cache/go-build}" go build -o "$bin.tmp" . >&2)
    mv "$bin.tmp" "$bin"
fi
echo "$bin"
