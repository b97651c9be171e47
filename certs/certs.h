/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Certificates for the webhook, with GnuTLS's X.509 API: a self-signed CA and serving
 * certificates it signs, PEM in and out, inspection, chain verification, and CA bundles.
 * Everything here is a pure function of its arguments (the clock is a parameter), so the
 * rotation rules built on it (certs_plan.h) can be tested at any point in time.
 *
 * Keys are ECDSA P-256 unless told otherwise, written as PKCS#8 PEM. Serial numbers are 128
 * random bits. Serving certificates carry EKU serverAuth, the DNS and IP SANs asked for, and
 * never outlive the CA that signs them.
 */
#ifndef CERTS_CERTS_H
#define CERTS_CERTS_H

#include <stddef.h>
#include <time.h>

#include "co/util/buf.h"
#include "co/util/common.h"

/** Key algorithms. */
typedef enum co_certs_key_type {
    CO_CERTS_ECDSA_P256 = 0, /**< default */
    CO_CERTS_ECDSA_P384 = 1,
    CO_CERTS_RSA_2048 = 2,
} co_certs_key_type;

/** Parses "ecdsa-p256", "ecdsa-p384" or "rsa-2048". @return 0 or CO_EINVALID. */
CO_MUST_CHECK int co_certs_key_type_parse(co_certs_key_type *out, const char *s);

/** A certificate and its private key as PEM text (owned; dispose with co_certs_pair_dispose). */
typedef struct co_certs_pair {
    char *cert_pem;
    char *key_pem;
} co_certs_pair;

/** Frees both strings (wiping the key) and empties @p p. NULL is a no-op. */
void co_certs_pair_dispose(co_certs_pair *p);

/** What to issue. Strings are borrowed. */
typedef struct co_certs_request {
    const char *common_name;      /**< subject CN */
    const char *const *dns_names; /**< DNS SANs (serving certificates) */
    size_t ndns;                  /**< number of DNS names */
    const char *const *ip_addrs;  /**< IP SANs, textual IPv4 or IPv6 */
    size_t nips;                  /**< number of IP addresses */
    co_certs_key_type key_type;   /**< algorithm of the new key */
    time_t now;                   /**< issuing time */
    long long validity_s;         /**< lifetime from @p now */
    long long backdate_s;         /**< notBefore = now - backdate (clock skew) */
} co_certs_request;

/**
 * Creates a self-signed CA: basicConstraints CA:TRUE (critical, pathlen 0), keyUsage
 * keyCertSign and cRLSign (critical), subject key identifier.
 * @param[out] out the CA certificate and key
 * @return 0, CO_EINVALID for a bad request (no CN, validity <= 0), CO_ERROR for a GnuTLS
 *         failure (the message names it).
 */
CO_MUST_CHECK int co_certs_create_ca(co_certs_pair *out, const co_certs_request *req);

/**
 * Creates a serving certificate signed by @p ca: basicConstraints CA:FALSE, keyUsage
 * digitalSignature (plus keyEncipherment for RSA), EKU serverAuth, the SANs asked for,
 * authority key identifier. notAfter is capped at the CA's notAfter.
 * @return 0; CO_EINVALID for a bad request (no SAN, a malformed name or address, an unusable
 *         CA pair: the message says which); CO_ERROR for a GnuTLS failure.
 */
CO_MUST_CHECK int
co_certs_create_serving(co_certs_pair *out, const co_certs_pair *ca, const co_certs_request *req);

/** What co_certs_inspect() finds in a certificate. */
typedef struct co_certs_info {
    time_t not_before; /**< notBefore */
    time_t not_after;  /**< notAfter */
    int is_ca;         /**< basicConstraints CA:TRUE */
    int server_auth;   /**< EKU serverAuth present */
    char subject[256]; /**< subject as one line, e.g. "CN=component-webhook-ca" */
    char issuer[256];  /**< issuer as one line */
    char serial[80];   /**< serial in hex */
    char sha256[65];   /**< SHA-256 of the DER, hex */
    char sans[1024];   /**< "DNS:a, DNS:b, IP Address:127.0.0.1" (truncated), "" when none */
} co_certs_info;

/**
 * Inspects the first certificate of @p pem.
 * @return 0; CO_EINVALID with a message that says what is wrong ("no PEM certificate found",
 *         "malformed PEM certificate: <the reason>").
 */
CO_MUST_CHECK int co_certs_inspect(co_certs_info *out, const char *pem, size_t len);

/** How many certificates @p pem holds. @return the count, or CO_EINVALID when one is broken. */
int co_certs_count(const char *pem, size_t len);

/**
 * Checks that @p key_pem is a private key (PEM) and belongs to the first certificate of
 * @p cert_pem. @return 0 or CO_EINVALID saying which part is wrong.
 */
CO_MUST_CHECK int co_certs_check_pair(const char *cert_pem, const char *key_pem);

/**
 * Verifies the first certificate of @p cert_pem (a serving certificate) against the CAs of
 * @p bundle_pem at time @p now, for the TLS server purpose and, when @p name is not NULL, for
 * that DNS name or IP address. @return 0 or CO_EINVALID saying why it does not verify.
 */
CO_MUST_CHECK int
co_certs_verify(const char *cert_pem, const char *bundle_pem, const char *name, time_t now);

/**
 * Appends to @p out, as PEM, every certificate of the @p n PEM texts that is still valid at
 * @p now, each once (by SHA-256), in the order first seen. Broken PEM texts are skipped.
 * @return the number of certificates written, or CO_ETOOBIG.
 */
int co_certs_bundle(co_buf *out, const char *const *pems, size_t n, time_t now);

#endif
