#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds one of the Go reference programs under tests/oracles/ and prints the path of the
# binary. Binaries are cached outside the repository, keyed by the source and the Go version:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/component-operator/oracles/<name>-<hash>/<name>
# They build in GOPATH mode against Debian's golang-*-dev packages (see tests/env/deps.sh).
#
#   tests/oracles/build.sh yamltojson
set -euo pipefail

name=${1:?usage: build.sh NAME}
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$root/tests/oracles/$name/main.go
[ -f "$src" ] || {
    echo "no oracle named $name ($src)" >&2
    exit 2
}
command -v go >/dev/null 2>&1 || {
    echo "go is not installed (make deps installs golang-go)" >&2
    exit 3
}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/component-operator
hash=$( (cat "$src"; go version) | sha256sum | cut -c1-16)
dir=$cache/oracles/$name-$hash
bin=$dir/$name
if [ ! -x "$bin" ]; then
    mkdir -p "$dir"
    tmp=$(mktemp "$dir/.build-XXXXXX")
    GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= GOCACHE=$cache/go-build \
        go build -o "$tmp" "$src" >&2
    mv -f "$tmp" "$bin"
fi
echo "$bin"
