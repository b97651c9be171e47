/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Serving key pair store. The pair is kept as PEM text; each handshake gets its own freshly
 * imported copy that GnuTLS frees with the session (GNUTLS_CERT_RETR_DEINIT_ALL). That costs
 * a few tens of microseconds per handshake, against about a millisecond for the handshake
 * itself, and buys the property that matters: a swap can free the old pair at once, because
 * no session ever points into it. The lock is held only while copying.
 */
#include "webhook/wh_tls.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "certs/certs.h"
#include "co/util/error.h"

/* Longest chain we accept: leaf plus intermediates. */
#define MAX_CHAIN 8

struct wh_tls {
    pthread_mutex_t lock;
    char *cert_pem; /* NULL until loaded */
    size_t cert_len;
    char *key_pem;
    size_t key_len;
    time_t not_after;
};

static _Atomic(wh_tls *) served;

int wh_tls_min_version_parse(wh_tls_min_version *out, const char *str)
{
    if (!strcmp(str, "VersionTLS12")) {
        *out = WH_TLS_MIN_12;
        return 0;
    }
    if (!strcmp(str, "VersionTLS13")) {
        *out = WH_TLS_MIN_13;
        return 0;
    }
    return co_error_set(CO_EINVALID,
                        "unsupported TLS version \"%s\": use VersionTLS12 or VersionTLS13", str);
}

const char *wh_tls_priorities(wh_tls_min_version min)
{
    /* ECDHE key exchange and AEAD ciphers only: what Go clients such as kube-apiserver offer
     * first, and nothing that needs CBC or RSA key transport. */
    if (min == WH_TLS_MIN_13) {
        return "NORMAL:-VERS-ALL:+VERS-TLS1.3";
    }
    return "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
           "+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA";
}

void wh_tls_new(wh_tls **out)
{
    wh_tls *t = co_xcalloc(1, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
    *out = t;
}

void wh_tls_free(wh_tls *t)
{
    if (!t) {
        return;
    }
    wh_tls *expected = t;
    atomic_compare_exchange_strong(&served, &expected, NULL);
    free(t->cert_pem);
    co_free_secret(t->key_pem, t->key_len);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* Imports a chain into pcerts[] (caller deinits *n entries). */
static int import_chain(gnutls_pcert_st *pcerts, unsigned *n, const char *pem, size_t len)
{
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
    *n = MAX_CHAIN;
    int grc = gnutls_pcert_list_import_x509_raw(pcerts, n, &d, GNUTLS_X509_FMT_PEM, 0);
    if (grc == GNUTLS_E_SHORT_MEMORY_BUFFER) {
        *n = 0;
        return co_error_set(CO_EINVALID, "certificate chain is longer than %d certificates",
                            MAX_CHAIN);
    }
    if (grc < 0 || *n == 0) {
        *n = 0;
        return co_error_set(CO_EINVALID, "certificate: %s",
                            grc < 0 ? gnutls_strerror(grc) : "no certificate found");
    }
    return 0;
}

static int import_key(gnutls_privkey_t *out, const char *pem, size_t len)
{
    gnutls_privkey_t key = NULL;
    if (gnutls_privkey_init(&key) < 0) {
        return co_error_set(CO_ERROR, "out of memory");
    }
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
    int grc = gnutls_privkey_import_x509_raw(key, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (grc < 0) {
        gnutls_privkey_deinit(key);
        return co_error_set(CO_EINVALID, "private key: %s", gnutls_strerror(grc));
    }
    *out = key;
    return 0;
}

/* The DER SubjectPublicKeyInfo of @p pub (free d->data with gnutls_free). */
static int spki(gnutls_datum_t *d, gnutls_pubkey_t pub)
{
    return gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, d);
}

/* Whether @p key is the private half of @p leaf's public key. */
static int key_matches(gnutls_pcert_st *leaf, gnutls_privkey_t key)
{
    gnutls_pubkey_t pub = NULL;
    gnutls_datum_t a = {NULL, 0}, b = {NULL, 0};
    int same = 0;
    if (gnutls_pubkey_init(&pub) == 0 &&
        gnutls_pubkey_import_privkey(pub, key, GNUTLS_KEY_DIGITAL_SIGNATURE, 0) == 0 &&
        spki(&a, pub) == 0 && spki(&b, leaf->pubkey) == 0) {
        same = a.size == b.size && memcmp(a.data, b.data, a.size) == 0;
    }
    gnutls_free(a.data);
    gnutls_free(b.data);
    gnutls_pubkey_deinit(pub);
    return same;
}

static time_t leaf_not_after(const gnutls_pcert_st *leaf)
{
    gnutls_x509_crt_t crt = NULL;
    time_t t = 0;
    if (gnutls_x509_crt_init(&crt) == 0 &&
        gnutls_x509_crt_import(crt, &leaf->cert, GNUTLS_X509_FMT_DER) == 0) {
        t = gnutls_x509_crt_get_expiration_time(crt);
    }
    gnutls_x509_crt_deinit(crt);
    return t;
}

int wh_tls_set_pem(wh_tls *t,
                   int *changed_out,
                   const char *cert_pem,
                   size_t cert_len,
                   const char *key_pem,
                   size_t key_len)
{
    if (cert_len > UINT32_MAX || key_len > UINT32_MAX) {
        return co_error_set(CO_ETOOBIG, "certificate or key is too large");
    }
    pthread_mutex_lock(&t->lock);
    int same = t->cert_pem && t->cert_len == cert_len && t->key_len == key_len &&
               !memcmp(t->cert_pem, cert_pem, cert_len) && !memcmp(t->key_pem, key_pem, key_len);
    pthread_mutex_unlock(&t->lock);
    if (same) {
        if (changed_out) {
            *changed_out = 0;
        }
        return 0;
    }
    gnutls_pcert_st pcerts[MAX_CHAIN];
    unsigned n = 0;
    gnutls_privkey_t key = NULL;
    int rc = import_chain(pcerts, &n, cert_pem, cert_len);
    if (rc == 0) {
        rc = import_key(&key, key_pem, key_len);
    }
    if (rc == 0 && !key_matches(&pcerts[0], key)) {
        rc = co_error_set(CO_EINVALID, "private key does not match the certificate's public key");
    }
    time_t not_after = rc == 0 ? leaf_not_after(&pcerts[0]) : 0;
    if (rc == 0 && not_after <= 0) {
        /* an expiry GnuTLS cannot read, or one before 1970: nothing a client would accept, and
         * the expiry is what the served pair is watched by */
        rc = co_error_set(CO_EINVALID, "the certificate's notAfter cannot be read or lies before "
                                       "1970");
    }
    for (unsigned i = 0; i < n; i++) {
        gnutls_pcert_deinit(&pcerts[i]);
    }
    gnutls_privkey_deinit(key);
    if (rc < 0) {
        return rc;
    }
    char *new_cert = co_xmemdup(cert_pem, cert_len);
    char *new_key = co_xmemdup(key_pem, key_len);
    /* GnuTLS's PEM list import is looser than certs/, which cuts out whole BEGIN/END blocks (a
     * damaged END line, for one), and certs/ inspects what is served: serve only what both
     * accept. */
    rc = co_certs_check_pair(new_cert, new_key);
    if (rc < 0) {
        free(new_cert);
        co_free_secret(new_key, key_len);
        return rc;
    }
    pthread_mutex_lock(&t->lock);
    char *old_cert = t->cert_pem, *old_key = t->key_pem;
    size_t old_key_len = t->key_len;
    t->cert_pem = new_cert;
    t->cert_len = cert_len;
    t->key_pem = new_key;
    t->key_len = key_len;
    t->not_after = not_after;
    pthread_mutex_unlock(&t->lock);
    free(old_cert);
    co_free_secret(old_key, old_key_len);
    if (changed_out) {
        *changed_out = 1;
    }
    return 0;
}

int wh_tls_loaded(wh_tls *t)
{
    pthread_mutex_lock(&t->lock);
    int loaded = t->cert_pem != NULL;
    pthread_mutex_unlock(&t->lock);
    return loaded;
}

time_t wh_tls_not_after(wh_tls *t)
{
    pthread_mutex_lock(&t->lock);
    time_t v = t->not_after;
    pthread_mutex_unlock(&t->lock);
    return v;
}

void wh_tls_serve(wh_tls *t)
{
    atomic_store(&served, t);
}

/* gnutls_certificate_retrieve_function3: a private copy of the pair for this session. */
static int retrieve(gnutls_session_t session,
                    const struct gnutls_cert_retr_st *info,
                    gnutls_pcert_st **certs,
                    unsigned int *certs_length,
                    gnutls_ocsp_data_st **ocsp,
                    unsigned int *ocsp_length,
                    gnutls_privkey_t *privkey,
                    unsigned int *flags)
{
    (void)session;
    (void)info;
    wh_tls *t = atomic_load(&served);
    if (!t) {
        return -1;
    }
    gnutls_pcert_st *pcerts = gnutls_calloc(MAX_CHAIN, sizeof(*pcerts));
    if (!pcerts) {
        return -1;
    }
    unsigned n = 0;
    gnutls_privkey_t key = NULL;
    pthread_mutex_lock(&t->lock);
    int rc = -1;
    if (t->cert_pem && import_chain(pcerts, &n, t->cert_pem, t->cert_len) == 0 &&
        import_key(&key, t->key_pem, t->key_len) == 0) {
        rc = 0;
    }
    pthread_mutex_unlock(&t->lock);
    if (rc < 0) {
        for (unsigned i = 0; i < n; i++) {
            gnutls_pcert_deinit(&pcerts[i]);
        }
        gnutls_free(pcerts);
        return -1;
    }
    *certs = pcerts;
    *certs_length = n;
    *ocsp = NULL;
    *ocsp_length = 0;
    *privkey = key;
    *flags = GNUTLS_CERT_RETR_DEINIT_ALL;
    return 0;
}

void *wh_tls_retrieve_function(void)
{
    gnutls_certificate_retrieve_function3 *fn = retrieve;
    return (void *)fn;
}
