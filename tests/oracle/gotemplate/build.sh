#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds the Go text/template + sprig oracle (tests/oracle/gotemplate/main.go) in GOPATH mode
# against Debian's golang-* packages, once per source version, into the tool cache, and prints
# the path of the binary. Needs golang-go, golang-github-masterminds-sprig-dev and
# golang-k8s-sigs-yaml-dev and golang-github-burntsushi-toml-dev (tests/env/deps.sh installs them).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/component-operator/oracle"
hash=$(sha256sum "$here/main.go" | cut -c1-16)
bin="$cache/gotemplate-$hash"
if [ -x "$bin" ]; then
    echo "$bin"
    exit 0
fi
if ! command -v go >/dev/null 2>&1; then
    echo "go is not installed (run tests/env/deps.sh)" >&2
    exit 1
fi
mkdir -p "$cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/gotemplate"
cp "$here/main.go" "$work/src/gotemplate/"
(
    cd "$work/src/gotemplate"
    GOPATH="$work:/usr/share/gocode" GO111MODULE=off GOCACHE="$cache/gocache" \
        go build -o "$bin.tmp" . >&2
)
mv "$bin.tmp" "$bin"
echo "$bin"
