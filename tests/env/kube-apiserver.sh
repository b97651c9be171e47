#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Prints the absolute path of a kube-apiserver binary (or, with the argument `etcd`, of an
# etcd binary), building kube-apiserver once per machine when none is available.
#
#   tests/env/kube-apiserver.sh          path of kube-apiserver
#   tests/env/kube-apiserver.sh etcd     path of etcd
#
# Search order for kube-apiserver: $KUBE_APISERVER, $KUBEBUILDER_ASSETS/kube-apiserver, the
# tool cache ${XDG_CACHE_HOME:-$HOME/.cache}/component-operator/bin/kube-apiserver-<version>-<rev>;
# otherwise it is built from Debian's `kubernetes` source package (a deb-src entry is added by
# tests/env/deps.sh): `apt-get source kubernetes`, then `make WHAT=cmd/kube-apiserver` with
# Debian's golang-go (about six minutes on two cores). The result is copied into the cache
# atomically, under a lock, so concurrent callers build at most once.
# Search order for etcd: $ETCD, $KUBEBUILDER_ASSETS/etcd, etcd on PATH (Debian etcd-server).
# Build progress goes to stderr; stdout carries only the path.
set -euo pipefail

KUBE_VERSION=1.20.2
# Bumped whenever the build recipe changes, so that machines rebuild the cached binary.
BUILD_REVISION=co3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/component-operator"
BIN="$CACHE/bin"
CACHED="$BIN/kube-apiserver-$KUBE_VERSION-$BUILD_REVISION"
# The vendored github.com/modern-go/reflect2 v1.0.1 of Kubernetes 1.20 is broken under Go 1.18
# and newer: decoding any JSON request body with a map (metadata.labels...) panics in the
# apiserver. Debian's golang-github-modern-go-reflect2-dev (1.0.2, API-compatible) replaces it.
REFLECT2_SRC=/usr/share/gocode/src/github.com/modern-go/reflect2
# The custom-resource validator vendored from k8s.io/kube-openapi takes a value for JSON null
# when its reflect.Value equals that of the type's zero value; under Go 1.19 the empty string
# compares equal, so every "" in a custom resource was refused with `must be of type string:
# "null"`. Only nil is null (the check later versions of the validator make).
OPENAPI_TYPE_GO=vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go
OPENAPI_NULL_CHECK='data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data))'

log() { printf '[kube-apiserver] %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

executable() { [ -n "$1" ] && [ -f "$1" ] && [ -x "$1" ]; }

find_etcd() {
    if [ -n "${ETCD:-}" ]; then
        executable "$ETCD" || die "ETCD=$ETCD is not an executable file"
        echo "$ETCD"
        return
    fi
    if [ -n "${KUBEBUILDER_ASSETS:-}" ] && executable "$KUBEBUILDER_ASSETS/etcd"; then
        echo "$KUBEBUILDER_ASSETS/etcd"
        return
    fi
    local p
    if p=$(command -v etcd 2>/dev/null); then
        echo "$p"
        return
    fi
    die "no etcd found: install Debian's etcd-server (make deps) or set ETCD"
}

# build_apiserver: builds into a private temporary tree and moves the binary into the cache.
build_apiserver() {
    local work
    work=$(mktemp -d "${TMPDIR:-/tmp}/co-kube-build-XXXXXX")
    # shellcheck disable=SC2064
    trap "rm -rf '$work'" RETURN
    if ! command -v go >/dev/null 2>&1 || ! command -v rsync >/dev/null 2>&1 ||
        ! command -v jq >/dev/null 2>&1 || ! command -v dpkg-source >/dev/null 2>&1 ||
        [ ! -f "$REFLECT2_SRC/reflect2.go" ] || ! apt-cache showsrc kubernetes >/dev/null 2>&1; then
        log "installing build dependencies (tests/env/deps.sh)"
        "$ROOT/tests/env/deps.sh" >&2
    fi
    log "fetching Debian's kubernetes source package into $work"
    (cd "$work" && apt-get source -qq kubernetes >&2) ||
        die "apt-get source kubernetes failed (is there a deb-src entry? run make deps)"
    local tree
    tree=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' -print -quit)
    [ -n "$tree" ] || die "the kubernetes source package did not unpack as expected"
    [ -d "$tree/vendor/github.com/modern-go/reflect2" ] ||
        die "the source tree has no vendored reflect2 to replace"
    [ -f "$REFLECT2_SRC/go_above_118.go" ] ||
        die "$REFLECT2_SRC is missing or older than 1.0.2 (golang-github-modern-go-reflect2-dev)"
    log "replacing the vendored reflect2 v1.0.1 with $REFLECT2_SRC"
    rsync -a --delete --exclude go.mod --exclude '*_test.go' "$REFLECT2_SRC/" \
        "$tree/vendor/github.com/modern-go/reflect2/"
    grep -qF "if $OPENAPI_NULL_CHECK {" "$tree/$OPENAPI_TYPE_GO" ||
        die "$OPENAPI_TYPE_GO does not have the expected null check"
    log "treating only nil as null in $OPENAPI_TYPE_GO"
    sed -i "s/if data == nil || reflect\.DeepEqual(reflect\.Zero(reflect\.TypeOf(data)), reflect\.ValueOf(data)) {/if data == nil {/" \
        "$tree/$OPENAPI_TYPE_GO"
    ! grep -qF "$OPENAPI_NULL_CHECK" "$tree/$OPENAPI_TYPE_GO" ||
        die "could not patch $OPENAPI_TYPE_GO"
    log "building kube-apiserver in $tree (this takes several minutes)"
    # The Debian tree has no .git; the build scripts then take the version from these.
    (cd "$tree" &&
        KUBE_GIT_VERSION="v$KUBE_VERSION" KUBE_GIT_TREE_STATE=clean \
            make WHAT=cmd/kube-apiserver >&2) ||
        die "make WHAT=cmd/kube-apiserver failed"
    local out
    out=$(find "$tree/_output" -type f -name kube-apiserver -perm -u+x -print -quit)
    [ -n "$out" ] || die "the build produced no kube-apiserver binary"
    "$out" --version >&2 || die "the built kube-apiserver does not run"
    mkdir -p "$BIN"
    cp "$out" "$CACHED.tmp.$$"
    chmod 0755 "$CACHED.tmp.$$"
    mv -f "$CACHED.tmp.$$" "$CACHED"
    log "cached $CACHED"
}

find_apiserver() {
    if [ -n "${KUBE_APISERVER:-}" ]; then
        executable "$KUBE_APISERVER" || die "KUBE_APISERVER=$KUBE_APISERVER is not an executable file"
        echo "$KUBE_APISERVER"
        return
    fi
    if [ -n "${KUBEBUILDER_ASSETS:-}" ] && executable "$KUBEBUILDER_ASSETS/kube-apiserver"; then
        echo "$KUBEBUILDER_ASSETS/kube-apiserver"
        return
    fi
    if executable "$CACHED"; then
        echo "$CACHED"
        return
    fi
    mkdir -p "$BIN"
    # One builder per machine: the others wait on the lock and then find the cached binary.
    exec 9>"$BIN/.kube-apiserver.lock"
    log "waiting for the build lock $BIN/.kube-apiserver.lock"
    flock 9
    if ! executable "$CACHED"; then
        build_apiserver
    fi
    flock -u 9
    exec 9>&-
    echo "$CACHED"
}

case "${1:-kube-apiserver}" in
kube-apiserver) find_apiserver ;;
etcd) find_etcd ;;
*) die "usage: $0 [kube-apiserver|etcd]" ;;
esac
