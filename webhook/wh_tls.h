/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The serving certificate and key, held in memory and swappable at any time. The TLS server
 * asks for them on every handshake (GnuTLS retrieve function), so a new pair is served to the
 * next connection without a restart, while established keep-alive connections continue with
 * the pair they negotiated. Whoever provides the material (files given by flags today, the
 * self-managed certificate authority later) calls wh_tls_set_pem().
 */
#ifndef WH_TLS_H
#define WH_TLS_H

#include <stddef.h>
#include <time.h>

#include "co/util/common.h"

typedef struct wh_tls wh_tls;

/** TLS versions the server accepts at minimum. */
typedef enum wh_tls_min_version {
    WH_TLS_MIN_12 = 0, /**< TLS 1.2 and 1.3 (default) */
    WH_TLS_MIN_13 = 1, /**< TLS 1.3 only */
} wh_tls_min_version;

/** Parses "VersionTLS12" / "VersionTLS13" (Kubernetes' spelling). @return 0 or CO_EINVALID. */
CO_MUST_CHECK int wh_tls_min_version_parse(wh_tls_min_version *out, const char *str);

/** The GnuTLS priority string for @p min (static). AEAD ciphers and ECDHE only. */
const char *wh_tls_priorities(wh_tls_min_version min);

/** Creates an empty store (nothing served until wh_tls_set_pem() succeeds). */
void wh_tls_new(wh_tls **out);

/** Frees the store and wipes the key. NULL is a no-op. Stop the server first. */
void wh_tls_free(wh_tls *t);

/**
 * Installs a certificate chain (PEM, leaf first) and its private key (PEM). The pair is
 * parsed and checked (the key must belong to the leaf) before it replaces the current one;
 * on failure the current pair keeps being served.
 * @param[out] changed_out 1 when the pair differs from the one served, else 0 (may be NULL)
 * @return 0, or CO_EINVALID naming the problem.
 */
CO_MUST_CHECK int wh_tls_set_pem(wh_tls *t,
                                 int *changed_out,
                                 const char *cert_pem,
                                 size_t cert_len,
                                 const char *key_pem,
                                 size_t key_len);

/** Whether a pair is loaded. */
int wh_tls_loaded(wh_tls *t);

/** Expiry (notAfter) of the served leaf, 0 when nothing is loaded. */
time_t wh_tls_not_after(wh_tls *t);

/**
 * Makes @p t the store the process's TLS handshakes draw from (the GnuTLS callback has no
 * closure argument, so this is process-wide). NULL stops serving certificates.
 */
void wh_tls_serve(wh_tls *t);

/**
 * The function to pass as MHD_OPTION_HTTPS_CERT_CALLBACK2 (a
 * gnutls_certificate_retrieve_function3 *), typed as void * so that this header stays free of
 * GnuTLS.
 */
void *wh_tls_retrieve_function(void);

#endif
