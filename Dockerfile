# SPDX-License-Identifier: Apache-2.0
#
# Both daemons in one image: a Debian bookworm build stage and a slim runtime stage with only
# the shared libraries the binaries link (tests/unit/test_dockerfile.sh checks the runtime
# package list against `readelf`/`ldd` of a local release build), running as an unprivileged
# user. deploy/ starts /usr/local/bin/component-webhook and /usr/local/bin/component-controller.
#
#   docker build -t component-operator:0.1.0 .

FROM debian:bookworm AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        gcc make pkg-config libc6-dev \
        libjson-c-dev libyaml-dev libcurl4-openssl-dev libssl-dev libgit2-dev \
        libmicrohttpd-dev libgnutls28-dev libarchive-dev libgpgme-dev libpcre2-dev libcrypt-dev \
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

FROM debian:bookworm-slim
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates gpg gpg-agent tzdata \
        libarchive13 libcrypt1 libcurl4 libgit2-1.5 libgnutls30 libgpgme11 libjson-c5 \
        libmicrohttpd12 libmimalloc2.0 libnettle8 libpcre2-8-0 libssl3 libyaml-0-2 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 65532 nonroot \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin nonroot \
    && mkdir -p /var/cache/component-controller \
    && chown 65532:65532 /var/cache/component-controller
COPY --from=build /src/build/release/component-controller /src/build/release/component-webhook \
    /usr/local/bin/
ENV TMPDIR=/tmp GNUPGHOME=/tmp
USER 65532:65532
EXPOSE 9443 8080 8081
ENTRYPOINT ["/usr/local/bin/component-controller"]
