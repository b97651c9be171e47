# SPDX-License-Identifier: Apache-2.0
#
# Both daemons in one image: a Debian bookworm build stage and a slim runtime stage with only
# the shared libraries the binaries link (tests/unit/test_dockerfile.sh checks the runtime
# package list against `readelf`/`ldd` of a local release build), running as an unprivileged
# user. deploy/ starts /usr/local/bin/component-webhook and /usr/local/bin/component-controller.
#
#   docker build -t component-operator:0.1.0 .
#
# Both base images are pinned by the digest of their multi-platform index, both from the same
# Debian image build (the dated tag names it), so the build and runtime stages share one point
# release and a rebuild starts from the same bytes. To move to a newer build, take the dated
# tags of the newest bookworm build and their index digests, e.g.
#   docker buildx imagetools inspect debian:bookworm-slim    (the "Digest:" line)
#   crane digest debian:bookworm-YYYYMMDD-slim
# and update both FROM lines together, from one build date.

FROM debian:bookworm-20261005@sha256:2c037a04925515fdd6ea85ea14a682d0e79931f5e9f5d07b6dbfc6ba12f9e858 AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        gcc make pkg-config libc6-dev \
        libjson-c-dev libyaml-dev libcurl4-openssl-dev libssl-dev libgit2-dev \
        libmicrohttpd-dev libgnutls28-dev libarchive-dev libgpgme-dev libpcre2-dev libcrypt-dev \
        zlib1g-dev \
        libmimalloc-dev nettle-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY shared/ shared/
COPY certs/ certs/
COPY controller/ controller/
COPY webhook/ webhook/
RUN make -j"$(nproc)" release \
    && strip --strip-unneeded build/release/component-controller build/release/component-webhook

# gpg and gpg-agent: SOPS PGP keys go through gpgme, which runs gpg, and GnuPG 2 hands every
# secret-key operation, the import of a decryption Secret's keys included, to gpg-agent (gpg
# starts it on demand; without it no PGP key imports). Each key set has its own GnuPG home
# under $TMPDIR (mode 0700, the Pod's emptyDir); the agent's sockets are made in that home, as
# the image has no /run/user, and when the key set is freed the agent is stopped (gpgconf
# --kill) and the home removed, so no agent outlives a decryption. GNUPGHOME is left unset on
# purpose: with HOME=/nonexistent on a read-only root, anything that missed the per-key-set
# home would fail instead of sharing one.
FROM debian:bookworm-20261005-slim@sha256:7c7b2c966bc9ee8cedfeef67e0e279108992c77681fa595db4a9d65c06ccc587
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates gpg gpg-agent tzdata \
        libarchive13 libcrypt1 libcurl4 libgit2-1.5 libgnutls30 libgpgme11 libjson-c5 \
        libmicrohttpd12 libmimalloc2.0 libnettle8 libpcre2-8-0 libssl3 libyaml-0-2 zlib1g \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 65532 nonroot \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin nonroot \
    && mkdir -p /var/cache/component-controller \
    && chown 65532:65532 /var/cache/component-controller
COPY --from=build /src/build/release/component-controller /src/build/release/component-webhook \
    /usr/local/bin/
ENV TMPDIR=/tmp
USER 65532:65532
EXPOSE 9443 8080 8081
ENTRYPOINT ["/usr/local/bin/component-controller"]
