/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The X.509 work behind certs.h, on GnuTLS: key generation, certificates built field by field
 * (SANs added one GeneralName at a time from checked text, so no name can smuggle in another
 * extension), PEM blocks cut out and decoded here before GnuTLS parses their DER, and chain
 * verification with GnuTLS's clock switched off: the validity periods are compared with the
 * caller's @now here. Every GnuTLS failure carries gnutls_strerror()'s reason in its message.
 */
#include "certs/certs.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509-ext.h>
#include <gnutls/x509.h>

#include "co/util/error.h"

/* Most certificates read from one PEM text (a bundle holds a handful). */
#define MAX_PEM_CERTS 64

#define PEM_CERT_LABEL "CERTIFICATE"
#define PEM_CERT_BEGIN "-----BEGIN " PEM_CERT_LABEL "-----"
#define PEM_CERT_END   "-----END " PEM_CERT_LABEL "-----"

/* Longest key or subject key identifier (SHA-512 sized, to be safe with foreign CAs). */
#define MAX_KEY_ID 64

/* Fails with GnuTLS's reason for @p grc appended. */
static int gtls_fail(int code, const char *what, int grc)
{
    return co_error_set(code, "%s: %s", what, gnutls_strerror(grc));
}

int co_certs_key_type_parse(co_certs_key_type *out, const char *s)
{
    if (!strcmp(s, "ecdsa-p256")) {
        *out = CO_CERTS_ECDSA_P256;
    } else if (!strcmp(s, "ecdsa-p384")) {
        *out = CO_CERTS_ECDSA_P384;
    } else if (!strcmp(s, "rsa-2048")) {
        *out = CO_CERTS_RSA_2048;
    } else {
        return co_error_set(
            CO_EINVALID, "unsupported key type \"%s\": use ecdsa-p256, ecdsa-p384 or rsa-2048", s);
    }
    return 0;
}

void co_certs_pair_dispose(co_certs_pair *p)
{
    if (!p) {
        return;
    }
    free(p->cert_pem);
    if (p->key_pem) {
        co_free_secret(p->key_pem, strlen(p->key_pem));
    }
    p->cert_pem = NULL;
    p->key_pem = NULL;
}

/* --- PEM ---------------------------------------------------------------------------------- */

/* A parsed certificate and the DER it was parsed from (hashed and re-encoded as it came). */
typedef struct cert {
    gnutls_x509_crt_t crt;
    gnutls_datum_t der;
} cert;

static void cert_free(cert *c)
{
    gnutls_x509_crt_deinit(c->crt);
    gnutls_free(c->der.data);
    c->crt = NULL;
    c->der.data = NULL;
    c->der.size = 0;
}

/* Moves the text GnuTLS allocated in @p d into a NUL-terminated string of ours; a secret is
 * wiped from GnuTLS's buffer before that is freed. */
static char *take_text(gnutls_datum_t *d, int secret)
{
    char *s = co_xmalloc((size_t)d->size + 1);
    memcpy(s, d->data, d->size);
    s[d->size] = '\0';
    if (secret) {
        gnutls_memset(d->data, 0, d->size);
    }
    gnutls_free(d->data);
    d->data = NULL;
    d->size = 0;
    return s;
}

static int der_to_pem(char **out, const gnutls_datum_t *der)
{
    gnutls_datum_t pem = {NULL, 0};
    int grc = gnutls_pem_base64_encode2(PEM_CERT_LABEL, der, &pem);
    if (grc < 0) {
        return gtls_fail(CO_ERROR, "cannot encode the certificate", grc);
    }
    *out = take_text(&pem, 0);
    return 0;
}

static int key_to_pem(char **out, gnutls_x509_privkey_t k)
{
    gnutls_datum_t pem = {NULL, 0};
    int grc =
        gnutls_x509_privkey_export2_pkcs8(k, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &pem);
    if (grc < 0) {
        return gtls_fail(CO_ERROR, "cannot encode the private key", grc);
    }
    *out = take_text(&pem, 1);
    return 0;
}

/* Parses the certificate block that starts at @p begin and whose END line starts at @p end. */
static int parse_block(cert *out, const char *begin, const char *end)
{
    gnutls_datum_t block = {(unsigned char *)begin,
                            (unsigned)(end - begin) + (unsigned)strlen(PEM_CERT_END)};
    cert c = {NULL, {NULL, 0}};
    int grc = gnutls_pem_base64_decode2(PEM_CERT_LABEL, &block, &c.der);
    if (grc >= 0) {
        grc = gnutls_x509_crt_init(&c.crt);
    }
    if (grc >= 0) {
        grc = gnutls_x509_crt_import(c.crt, &c.der, GNUTLS_X509_FMT_DER);
    }
    if (grc < 0) {
        cert_free(&c);
        return gtls_fail(CO_EINVALID, "malformed PEM certificate", grc);
    }
    *out = c;
    return 0;
}

/* The next certificate block of the text from *@p pos to @p end, which *@p pos then passes.
 * Text outside the blocks and blocks of other kinds are skipped. @return 1 with the
 * certificate in @p out, 0 when no block is left, or CO_EINVALID for a broken one. */
static int next_cert(cert *out, const char **pos, const char *end)
{
    memset(out, 0, sizeof(*out));
    const char *begin = memmem(*pos, (size_t)(end - *pos), PEM_CERT_BEGIN, strlen(PEM_CERT_BEGIN));
    if (!begin) {
        *pos = end;
        return 0;
    }
    const char *body = begin + strlen(PEM_CERT_BEGIN);
    const char *stop = memmem(body, (size_t)(end - body), PEM_CERT_END, strlen(PEM_CERT_END));
    if (!stop) {
        return co_error_set(CO_EINVALID, "malformed PEM certificate: no END line");
    }
    *pos = stop + strlen(PEM_CERT_END);
    int rc = parse_block(out, begin, stop);
    return rc < 0 ? rc : 1;
}

/* Reads up to @p max certificates; returns how many, or a negative error. */
static int read_certs(cert *certs, int max, const char *pem, size_t len)
{
    if (!pem || len > (size_t)INT32_MAX) {
        return co_error_set(CO_EINVALID, "no PEM certificate found");
    }
    const char *pos = pem;
    int n = 0;
    while (n < max) {
        int rc = next_cert(&certs[n], &pos, pem + len);
        if (rc < 0) {
            for (int i = 0; i < n; i++) {
                cert_free(&certs[i]);
            }
            return rc;
        }
        if (rc == 0) {
            break;
        }
        n++;
    }
    if (n == 0) {
        return co_error_set(CO_EINVALID, "no PEM certificate found");
    }
    return n;
}

static int read_cert(cert *out, const char *pem, size_t len)
{
    int n = read_certs(out, 1, pem, len);
    return n < 0 ? n : 0;
}

/* Reads an unencrypted private key (PKCS#8, or the PKCS#1 and SEC 1 forms). Encrypted keys are
 * refused: there is no passphrase to give. */
static int read_key(gnutls_x509_privkey_t *out, const char *pem)
{
    if (!pem || !*pem) {
        return co_error_set(CO_EINVALID, "no PEM private key found");
    }
    size_t len = strlen(pem);
    if (len > (size_t)INT32_MAX) {
        return co_error_set(CO_EINVALID, "malformed PEM private key: too large");
    }
    if (strstr(pem, "-----BEGIN ENCRYPTED PRIVATE KEY-----") ||
        strstr(pem, "Proc-Type: 4,ENCRYPTED")) {
        return co_error_set(CO_EINVALID,
                            "malformed PEM private key: encrypted keys are not supported");
    }
    gnutls_x509_privkey_t k = NULL;
    int grc = gnutls_x509_privkey_init(&k);
    if (grc < 0) {
        return gtls_fail(CO_ERROR, "cannot read the private key", grc);
    }
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
    grc = gnutls_x509_privkey_import2(k, &d, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN);
    if (grc < 0) {
        gnutls_x509_privkey_deinit(k);
        return gtls_fail(CO_EINVALID, "malformed PEM private key", grc);
    }
    *out = k;
    return 0;
}

int co_certs_count(const char *pem, size_t len)
{
    cert certs[MAX_PEM_CERTS] = {0};
    int n = read_certs(certs, MAX_PEM_CERTS, pem, len);
    for (int i = 0; i < n; i++) {
        cert_free(&certs[i]);
    }
    return n;
}

/* --- building ----------------------------------------------------------------------------- */

static int new_key(gnutls_x509_privkey_t *out, co_certs_key_type type)
{
    gnutls_pk_algorithm_t algo = GNUTLS_PK_ECDSA;
    unsigned bits = GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1);
    if (type == CO_CERTS_ECDSA_P384) {
        bits = GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP384R1);
    } else if (type == CO_CERTS_RSA_2048) {
        algo = GNUTLS_PK_RSA;
        bits = 2048;
    }
    gnutls_x509_privkey_t k = NULL;
    int grc = gnutls_x509_privkey_init(&k);
    if (grc >= 0) {
        grc = gnutls_x509_privkey_generate2(k, algo, bits, 0, NULL, 0);
    }
    if (grc < 0) {
        gnutls_x509_privkey_deinit(k);
        return gtls_fail(CO_ERROR, "cannot generate a key", grc);
    }
    *out = k;
    return 0;
}

static int set_serial(gnutls_x509_crt_t x)
{
    unsigned char raw[16];
    int grc = gnutls_rnd(GNUTLS_RND_RANDOM, raw, sizeof(raw));
    if (grc < 0) {
        return gtls_fail(CO_ERROR, "no random serial number", grc);
    }
    raw[0] &= 0x7f; /* positive */
    raw[0] |= 0x40; /* and a full 16 bytes long */
    grc = gnutls_x509_crt_set_serial(x, raw, sizeof(raw));
    return grc < 0 ? gtls_fail(CO_ERROR, "cannot set the serial number", grc) : 0;
}

static int set_times(gnutls_x509_crt_t x, time_t not_before, time_t not_after)
{
    int grc = gnutls_x509_crt_set_activation_time(x, not_before);
    if (grc >= 0) {
        grc = gnutls_x509_crt_set_expiration_time(x, not_after);
    }
    return grc < 0 ? gtls_fail(CO_ERROR, "cannot set the validity", grc) : 0;
}

static int set_subject_cn(gnutls_x509_crt_t x, const char *cn)
{
    int grc =
        gnutls_x509_crt_set_dn_by_oid(x, GNUTLS_OID_X520_COMMON_NAME, 0, cn, (unsigned)strlen(cn));
    return grc < 0 ? gtls_fail(CO_EINVALID, "cannot set the subject", grc) : 0;
}

/* Version 3, the subject, the validity, a fresh serial and the public half of @p key: what
 * every certificate made here starts with. */
static int set_basics(gnutls_x509_crt_t x,
                      gnutls_x509_privkey_t key,
                      const co_certs_request *req,
                      time_t not_after)
{
    int rc;
    if ((rc = set_serial(x)) < 0 ||
        (rc = set_times(x, req->now - (time_t)req->backdate_s, not_after)) < 0 ||
        (rc = set_subject_cn(x, req->common_name)) < 0) {
        return rc;
    }
    int grc = gnutls_x509_crt_set_version(x, 3);
    if (grc >= 0) {
        grc = gnutls_x509_crt_set_key(x, key);
    }
    return grc < 0 ? gtls_fail(CO_ERROR, "cannot build the certificate", grc) : 0;
}

/* The DER header at @p p (no further than @p end): its tag in @p tag, its contents in
 * [*@p body, *@p body + *@p n). @return 0, or -1 when it does not fit. */
static int der_header(const unsigned char *p,
                      const unsigned char *end,
                      unsigned *tag,
                      const unsigned char **body,
                      size_t *n)
{
    if (end - p < 2) {
        return -1;
    }
    *tag = p[0];
    size_t len = p[1];
    p += 2;
    if (len & 0x80) { /* long form: the next (len & 0x7f) bytes hold the length */
        size_t nlen = len & 0x7f;
        if (nlen == 0 || nlen > 4 || (size_t)(end - p) < nlen) {
            return -1;
        }
        len = 0;
        for (size_t i = 0; i < nlen; i++) {
            len = (len << 8) | *p++;
        }
    }
    if ((size_t)(end - p) < len) {
        return -1;
    }
    *body = p;
    *n = len;
    return 0;
}

/* The key identifier of RFC 5280, 4.2.1.2, method 1 (as OpenSSL's "hash"): SHA-1 of the bits of
 * the subjectPublicKey BIT STRING in @p x's SubjectPublicKeyInfo. GnuTLS's own key IDs hash the
 * whole SubjectPublicKeyInfo instead. @p id holds 20 bytes. */
static int key_id(unsigned char id[20], gnutls_x509_crt_t x)
{
    gnutls_pubkey_t pub = NULL;
    gnutls_datum_t spki = {NULL, 0};
    int grc = gnutls_pubkey_init(&pub);
    if (grc >= 0) {
        grc = gnutls_pubkey_import_x509(pub, x, 0);
    }
    if (grc >= 0) {
        grc = gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, &spki);
    }
    if (grc >= 0) {
        /* SEQUENCE { AlgorithmIdentifier SEQUENCE, BIT STRING (unused-bits octet, bits) } */
        const unsigned char *end = spki.data + spki.size;
        const unsigned char *seq, *algo, *bits;
        size_t nseq, nalgo, nbits;
        unsigned tag0, tag1, tag2;
        grc = GNUTLS_E_ASN1_DER_ERROR;
        if (der_header(spki.data, end, &tag0, &seq, &nseq) == 0 && tag0 == 0x30 &&
            der_header(seq, seq + nseq, &tag1, &algo, &nalgo) == 0 && tag1 == 0x30 &&
            der_header(algo + nalgo, seq + nseq, &tag2, &bits, &nbits) == 0 && tag2 == 0x03 &&
            nbits >= 1) {
            grc = gnutls_hash_fast(GNUTLS_DIG_SHA1, bits + 1, nbits - 1, id);
        }
    }
    gnutls_free(spki.data);
    gnutls_pubkey_deinit(pub);
    return grc < 0 ? gtls_fail(CO_ERROR, "cannot compute the key identifier", grc) : 0;
}

static int set_subject_key_id(gnutls_x509_crt_t x)
{
    unsigned char id[20];
    int rc = key_id(id, x);
    if (rc < 0) {
        return rc;
    }
    int grc = gnutls_x509_crt_set_subject_key_id(x, id, sizeof(id));
    return grc < 0 ? gtls_fail(CO_ERROR, "cannot add the subject key identifier", grc) : 0;
}

/* The authority key identifier of a certificate @p ca signs: the CA's subject key identifier,
 * or, for a CA without one, the identifier computed the same way from its key. */
static int set_authority_key_id(gnutls_x509_crt_t x, gnutls_x509_crt_t ca)
{
    unsigned char id[MAX_KEY_ID];
    size_t n = sizeof(id);
    unsigned critical = 0;
    if (gnutls_x509_crt_get_subject_key_id(ca, id, &n, &critical) < 0) {
        int rc = key_id(id, ca);
        if (rc < 0) {
            return rc;
        }
        n = 20;
    }
    int grc = gnutls_x509_crt_set_authority_key_id(x, id, n);
    return grc < 0 ? gtls_fail(CO_ERROR, "cannot add the authority key identifier", grc) : 0;
}

/* A DNS name we put into a certificate: letters, digits, '-', '.', an optional leading "*."
 * and at most 253 characters. */
static int dns_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253) {
        return 0;
    }
    if (!strncmp(s, "*.", 2)) {
        s += 2;
    }
    for (; *s; s++) {
        char c = *s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.')) {
            return 0;
        }
    }
    return 1;
}

static int
add_san(gnutls_x509_crt_t x, gnutls_x509_subject_alt_name_t type, const void *data, size_t len)
{
    int grc =
        gnutls_x509_crt_set_subject_alt_name(x, type, data, (unsigned)len, GNUTLS_FSAN_APPEND);
    return grc < 0 ? gtls_fail(CO_ERROR, "cannot add the subject alternative names", grc) : 0;
}

/* The DNS names, then the IP addresses (4 or 16 bytes from their text), each checked before it
 * is added. */
static int add_sans(gnutls_x509_crt_t x, const co_certs_request *req)
{
    if (req->ndns + req->nips == 0) {
        return co_error_set(CO_EINVALID, "a serving certificate needs at least one DNS name or IP");
    }
    int rc = 0;
    for (size_t i = 0; i < req->ndns && rc == 0; i++) {
        const char *name = req->dns_names[i];
        if (!dns_name_ok(name)) {
            return co_error_set(CO_EINVALID, "invalid DNS name \"%s\" for a certificate", name);
        }
        rc = add_san(x, GNUTLS_SAN_DNSNAME, name, strlen(name));
    }
    for (size_t i = 0; i < req->nips && rc == 0; i++) {
        unsigned char addr[16];
        size_t alen = 0;
        if (inet_pton(AF_INET, req->ip_addrs[i], addr) == 1) {
            alen = 4;
        } else if (inet_pton(AF_INET6, req->ip_addrs[i], addr) == 1) {
            alen = 16;
        } else {
            return co_error_set(CO_EINVALID, "invalid IP address \"%s\" for a certificate",
                                req->ip_addrs[i]);
        }
        rc = add_san(x, GNUTLS_SAN_IPADDRESS, addr, alen);
    }
    return rc;
}

/* Signs @p x as @p issuer with SHA-256 and writes it and @p key out as PEM into @p out. */
static int sign_and_export(co_certs_pair *out,
                           gnutls_x509_crt_t x,
                           gnutls_x509_crt_t issuer,
                           gnutls_x509_privkey_t issuer_key,
                           gnutls_x509_privkey_t key)
{
    int grc = gnutls_x509_crt_sign2(x, issuer, issuer_key, GNUTLS_DIG_SHA256, 0);
    if (grc < 0) {
        return gtls_fail(CO_ERROR, "cannot sign the certificate", grc);
    }
    gnutls_datum_t der = {NULL, 0};
    grc = gnutls_x509_crt_export2(x, GNUTLS_X509_FMT_DER, &der);
    if (grc < 0) {
        return gtls_fail(CO_ERROR, "cannot encode the certificate", grc);
    }
    co_certs_pair p = {0};
    int rc = der_to_pem(&p.cert_pem, &der);
    gnutls_free(der.data);
    if (rc == 0) {
        rc = key_to_pem(&p.key_pem, key);
    }
    if (rc < 0) {
        co_certs_pair_dispose(&p);
        return rc;
    }
    *out = p;
    return 0;
}

static int check_request(const co_certs_request *req)
{
    if (!req->common_name || !*req->common_name || strlen(req->common_name) > 64) {
        return co_error_set(CO_EINVALID, "a certificate needs a common name of 1 to 64 bytes");
    }
    if (req->validity_s <= 0) {
        return co_error_set(CO_EINVALID, "certificate validity must be positive");
    }
    if (req->backdate_s < 0) {
        return co_error_set(CO_EINVALID, "certificate backdating must not be negative");
    }
    return 0;
}

/* basicConstraints CA:TRUE and, when keyUsage is present, keyCertSign among its bits (what
 * OpenSSL's X509_check_ca() asks of a version 3 certificate). */
static int is_ca(gnutls_x509_crt_t x)
{
    unsigned critical = 0;
    unsigned ca = 0;
    int pathlen = -1;
    if (gnutls_x509_crt_get_basic_constraints(x, &critical, &ca, &pathlen) < 0 || !ca) {
        return 0;
    }
    unsigned usage = 0;
    int grc = gnutls_x509_crt_get_key_usage(x, &usage, &critical);
    return grc == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE ||
           (grc >= 0 && (usage & GNUTLS_KEY_KEY_CERT_SIGN));
}

/* A validity time, 0 when it cannot be read. */
static time_t cert_time(time_t t)
{
    return t == (time_t)-1 ? 0 : t;
}

int co_certs_create_ca(co_certs_pair *out, const co_certs_request *req)
{
    int rc = check_request(req);
    if (rc < 0) {
        return rc;
    }
    gnutls_x509_privkey_t key = NULL;
    gnutls_x509_crt_t x = NULL;
    int grc = gnutls_x509_crt_init(&x);
    if (grc < 0) {
        return gtls_fail(CO_ERROR, "cannot allocate a certificate", grc);
    }
    if ((rc = new_key(&key, req->key_type)) < 0 ||
        (rc = set_basics(x, key, req, req->now + (time_t)req->validity_s)) < 0) {
        goto done;
    }
    if ((grc = gnutls_x509_crt_set_basic_constraints(x, 1, 0)) < 0 ||
        (grc = gnutls_x509_crt_set_key_usage(x, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN)) <
            0) {
        rc = gtls_fail(CO_ERROR, "cannot build the CA certificate", grc);
        goto done;
    }
    if ((rc = set_subject_key_id(x)) < 0) {
        goto done;
    }
    rc = sign_and_export(out, x, x, key, key);
done:
    gnutls_x509_privkey_deinit(key);
    gnutls_x509_crt_deinit(x);
    return rc;
}

/* The end of a serving certificate's validity: what was asked, but not beyond the CA's. */
static int serving_not_after(time_t *out, gnutls_x509_crt_t ca, const co_certs_request *req)
{
    time_t not_after = req->now + (time_t)req->validity_s;
    time_t ca_not_after = cert_time(gnutls_x509_crt_get_expiration_time(ca));
    if (ca_not_after && not_after > ca_not_after) {
        not_after = ca_not_after;
    }
    if (not_after <= req->now) {
        return co_error_set(CO_EINVALID, "the CA has expired");
    }
    *out = not_after;
    return 0;
}

/* The extensions of a serving certificate (besides its key identifiers). */
static int add_serving_extensions(gnutls_x509_crt_t x, const co_certs_request *req)
{
    unsigned usage = GNUTLS_KEY_DIGITAL_SIGNATURE;
    if (req->key_type == CO_CERTS_RSA_2048) {
        usage |= GNUTLS_KEY_KEY_ENCIPHERMENT;
    }
    int grc;
    if ((grc = gnutls_x509_crt_set_basic_constraints(x, 0, -1)) < 0 ||
        (grc = gnutls_x509_crt_set_key_usage(x, usage)) < 0 ||
        (grc = gnutls_x509_crt_set_key_purpose_oid(x, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0) {
        return gtls_fail(CO_ERROR, "cannot build the serving certificate", grc);
    }
    return add_sans(x, req);
}

int co_certs_create_serving(co_certs_pair *out,
                            const co_certs_pair *ca,
                            const co_certs_request *req)
{
    int rc = check_request(req);
    if (rc < 0) {
        return rc;
    }
    if (!ca || !ca->cert_pem || !ca->key_pem) {
        return co_error_set(CO_EINVALID, "no CA to sign with");
    }
    if (co_certs_check_pair(ca->cert_pem, ca->key_pem) < 0) {
        return co_error_wrap("the CA");
    }
    cert ca_cert = {NULL, {NULL, 0}};
    gnutls_x509_privkey_t ca_key = NULL;
    gnutls_x509_privkey_t key = NULL;
    gnutls_x509_crt_t x = NULL;
    time_t not_after = 0;
    if ((rc = read_cert(&ca_cert, ca->cert_pem, strlen(ca->cert_pem))) < 0 ||
        (rc = read_key(&ca_key, ca->key_pem)) < 0) {
        goto done;
    }
    if (!is_ca(ca_cert.crt)) {
        rc = co_error_set(CO_EINVALID, "the CA certificate is not a CA");
        goto done;
    }
    if ((rc = serving_not_after(&not_after, ca_cert.crt, req)) < 0) {
        goto done;
    }
    int grc = gnutls_x509_crt_init(&x);
    if (grc < 0) {
        rc = gtls_fail(CO_ERROR, "cannot allocate a certificate", grc);
        goto done;
    }
    if ((rc = new_key(&key, req->key_type)) < 0 || (rc = set_basics(x, key, req, not_after)) < 0 ||
        (rc = add_serving_extensions(x, req)) < 0 || (rc = set_subject_key_id(x)) < 0 ||
        (rc = set_authority_key_id(x, ca_cert.crt)) < 0) {
        goto done;
    }
    rc = sign_and_export(out, x, ca_cert.crt, ca_key, key);
done:
    gnutls_x509_crt_deinit(x);
    gnutls_x509_privkey_deinit(key);
    gnutls_x509_privkey_deinit(ca_key);
    cert_free(&ca_cert);
    return rc;
}

/* --- reading ------------------------------------------------------------------------------ */

/* The subject (or issuer) as one RFC 4514 line, e.g. "CN=component-webhook-ca". */
static void name_line(char *out, size_t size, gnutls_x509_crt_t x, int issuer)
{
    out[0] = '\0';
    gnutls_datum_t dn = {NULL, 0};
    int grc =
        issuer ? gnutls_x509_crt_get_issuer_dn3(x, &dn, 0) : gnutls_x509_crt_get_dn3(x, &dn, 0);
    if (grc >= 0) {
        snprintf(out, size, "%.*s", (int)dn.size, (const char *)dn.data);
    }
    gnutls_free(dn.data);
}

/* The serial as OpenSSL's BN_bn2hex() writes it: upper-case hex without leading zero bytes, a
 * '-' before the magnitude of a negative number, "0" for zero. Truncated to @p size. */
static void serial_line(char *out, size_t size, gnutls_x509_crt_t x)
{
    out[0] = '\0';
    size_t n = 0;
    if (gnutls_x509_crt_get_serial(x, NULL, &n) != GNUTLS_E_SHORT_MEMORY_BUFFER || n == 0) {
        return;
    }
    unsigned char *raw = co_xmalloc(n);
    if (gnutls_x509_crt_get_serial(x, raw, &n) < 0 || n == 0) {
        free(raw);
        return;
    }
    int negative = (raw[0] & 0x80) != 0;
    if (negative) { /* two's complement: the magnitude is the complement plus one */
        unsigned carry = 1;
        for (size_t i = n; i-- > 0;) {
            unsigned v = (unsigned)(unsigned char)~raw[i] + carry;
            raw[i] = (unsigned char)v;
            carry = v >> 8;
        }
    }
    size_t i = 0;
    while (i < n && raw[i] == 0) {
        i++;
    }
    size_t len = (size_t)snprintf(out, size, "%s", i == n ? "0" : negative ? "-" : "");
    for (; i < n && len + 2 < size; i++) {
        len += (size_t)snprintf(out + len, size - len, "%02X", raw[i]);
    }
    free(raw);
}

/* SHA-256 of @p der in lower-case hex. */
static void sha256_hex(char out[65], const gnutls_datum_t *der)
{
    unsigned char md[32];
    out[0] = '\0';
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, der->data, der->size, md) < 0) {
        return;
    }
    for (size_t i = 0; i < sizeof(md); i++) {
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    }
}

/* One SAN as text ("DNS:name", "IP Address:addr"), "" for the kinds not shown. */
static void san_text(char *out, size_t size, unsigned type, const gnutls_datum_t *d)
{
    out[0] = '\0';
    if (type == GNUTLS_SAN_DNSNAME) {
        snprintf(out, size, "DNS:%.*s", (int)d->size, (const char *)d->data);
    } else if (type == GNUTLS_SAN_IPADDRESS) {
        char text[INET6_ADDRSTRLEN] = "";
        if (d->size == 4 || d->size == 16) {
            inet_ntop(d->size == 4 ? AF_INET : AF_INET6, d->data, text, sizeof(text));
        }
        snprintf(out, size, "IP Address:%s", text);
    }
}

/* The DNS and IP SANs, ", "-separated; the last one that does not fit whole is left out. */
static void sans_line(char *out, size_t size, gnutls_x509_crt_t x)
{
    out[0] = '\0';
    gnutls_datum_t ext = {NULL, 0};
    gnutls_subject_alt_names_t sans = NULL;
    if (gnutls_x509_crt_get_extension_by_oid2(x, GNUTLS_X509EXT_OID_SAN, 0, &ext, NULL) < 0 ||
        gnutls_subject_alt_names_init(&sans) < 0 ||
        gnutls_x509_ext_import_subject_alt_names(&ext, sans, 0) < 0) {
        goto done;
    }
    size_t len = 0;
    unsigned type = 0;
    gnutls_datum_t d = {NULL, 0};
    for (unsigned i = 0; gnutls_subject_alt_names_get(sans, i, &type, &d, NULL) >= 0; i++) {
        char one[64 + 256];
        san_text(one, sizeof(one), type, &d);
        if (!one[0]) {
            continue;
        }
        int w = snprintf(out + len, size - len, "%s%s", len ? ", " : "", one);
        if (w < 0 || (size_t)w >= size - len) {
            out[len] = '\0';
            break;
        }
        len += (size_t)w;
    }
done:
    if (sans) {
        gnutls_subject_alt_names_deinit(sans);
    }
    gnutls_free(ext.data);
}

/* Whether EKU lists serverAuth; 0 without EKU. @p present tells whether there is one. */
static int has_server_auth(gnutls_x509_crt_t x, int *present)
{
    *present = 0;
    for (unsigned i = 0;; i++) {
        char oid[128];
        size_t n = sizeof(oid);
        int grc = gnutls_x509_crt_get_key_purpose_oid(x, i, oid, &n, NULL);
        if (grc == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) {
            return 0; /* the end of the list, or no EKU */
        }
        *present = 1; /* an unreadable EKU counts as one without serverAuth */
        if (grc == GNUTLS_E_SHORT_MEMORY_BUFFER) {
            continue; /* too long to be serverAuth */
        }
        if (grc < 0) {
            return 0;
        }
        if (!strcmp(oid, GNUTLS_KP_TLS_WWW_SERVER)) {
            return 1;
        }
    }
}

int co_certs_inspect(co_certs_info *out, const char *pem, size_t len)
{
    cert c = {NULL, {NULL, 0}};
    int rc = read_cert(&c, pem, len);
    if (rc < 0) {
        return rc;
    }
    co_certs_info info;
    memset(&info, 0, sizeof(info));
    info.not_before = cert_time(gnutls_x509_crt_get_activation_time(c.crt));
    info.not_after = cert_time(gnutls_x509_crt_get_expiration_time(c.crt));
    info.is_ca = is_ca(c.crt);
    int eku = 0;
    info.server_auth = has_server_auth(c.crt, &eku);
    name_line(info.subject, sizeof(info.subject), c.crt, 0);
    name_line(info.issuer, sizeof(info.issuer), c.crt, 1);
    serial_line(info.serial, sizeof(info.serial), c.crt);
    sha256_hex(info.sha256, &c.der);
    sans_line(info.sans, sizeof(info.sans), c.crt);
    cert_free(&c);
    *out = info;
    return 0;
}

int co_certs_check_pair(const char *cert_pem, const char *key_pem)
{
    cert c = {NULL, {NULL, 0}};
    gnutls_x509_privkey_t k = NULL;
    int rc = read_cert(&c, cert_pem, cert_pem ? strlen(cert_pem) : 0);
    if (rc == 0) {
        rc = read_key(&k, key_pem);
    }
    if (rc == 0) {
        /* the same public key: compared through SHA-256 key identifiers */
        unsigned char a[MAX_KEY_ID], b[MAX_KEY_ID];
        size_t na = sizeof(a), nb = sizeof(b);
        if (gnutls_x509_crt_get_key_id(c.crt, GNUTLS_KEYID_USE_SHA256, a, &na) < 0 ||
            gnutls_x509_privkey_get_key_id(k, GNUTLS_KEYID_USE_SHA256, b, &nb) < 0 || na != nb ||
            memcmp(a, b, na) != 0) {
            rc = co_error_set(CO_EINVALID, "the private key does not belong to the certificate");
        }
    }
    gnutls_x509_privkey_deinit(k);
    cert_free(&c);
    return rc;
}

/* --- verification ------------------------------------------------------------------------- */

/* Whether @p x is valid at @p now (notBefore <= now < notAfter); @p what names it. */
static int check_validity(gnutls_x509_crt_t x, time_t now, const char *what)
{
    time_t not_before = gnutls_x509_crt_get_activation_time(x);
    time_t not_after = gnutls_x509_crt_get_expiration_time(x);
    if (not_before == (time_t)-1 || not_after == (time_t)-1) {
        return co_error_set(CO_EINVALID,
                            "certificate does not verify: %s has an unreadable "
                            "validity period",
                            what);
    }
    if (now < not_before) {
        return co_error_set(CO_EINVALID, "certificate does not verify: %s is not yet valid", what);
    }
    if (now >= not_after) {
        return co_error_set(CO_EINVALID, "certificate does not verify: %s has expired", what);
    }
    return 0;
}

/* Whether @p ca signed @p leaf and is a CA allowed to (GnuTLS's checks, its clock off), and
 * both are valid at @p now. */
static int check_signed_by(gnutls_x509_crt_t leaf, gnutls_x509_crt_t ca, time_t now)
{
    unsigned status = 0;
    int grc = gnutls_x509_crt_verify(
        leaf, &ca, 1, GNUTLS_VERIFY_DISABLE_TIME_CHECKS | GNUTLS_VERIFY_DISABLE_TRUSTED_TIME_CHECKS,
        &status);
    if (grc < 0) {
        return gtls_fail(CO_ERROR, "cannot verify the certificate", grc);
    }
    if (status != 0) {
        gnutls_datum_t text = {NULL, 0};
        grc = gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0);
        int rc = co_error_set(CO_EINVALID, "certificate does not verify: %s",
                              grc < 0 ? "rejected" : (const char *)text.data);
        gnutls_free(text.data);
        return rc;
    }
    int rc = check_validity(leaf, now, "the certificate");
    return rc < 0 ? rc : check_validity(ca, now, "the CA certificate");
}

/* The purpose TLS server, as OpenSSL checks it: EKU, when there is one, lists serverAuth, and
 * keyUsage, when there is one, allows a key exchange. */
static int check_server_purpose(gnutls_x509_crt_t leaf)
{
    int eku = 0;
    if (!has_server_auth(leaf, &eku) && eku) {
        return co_error_set(CO_EINVALID, "certificate does not verify: unsupported certificate "
                                         "purpose (no serverAuth extended key usage)");
    }
    unsigned usage = 0;
    unsigned critical = 0;
    unsigned wanted =
        GNUTLS_KEY_DIGITAL_SIGNATURE | GNUTLS_KEY_KEY_ENCIPHERMENT | GNUTLS_KEY_KEY_AGREEMENT;
    int grc = gnutls_x509_crt_get_key_usage(leaf, &usage, &critical);
    if (grc != GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE && (grc < 0 || !(usage & wanted))) {
        return co_error_set(CO_EINVALID, "certificate does not verify: unsupported certificate "
                                         "purpose (key usage)");
    }
    return 0;
}

/* Whether @p leaf is for @p name, a DNS name or an IP address. */
static int check_name(gnutls_x509_crt_t leaf, const char *name)
{
    if (gnutls_x509_crt_check_hostname2(leaf, name, 0)) {
        return 0;
    }
    unsigned char addr[16];
    int ip = inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1;
    return co_error_set(CO_EINVALID, "certificate does not verify: %s mismatch (%s)",
                        ip ? "IP address" : "hostname", name);
}

/* Finds a CA of @p cas that signed @p leaf and is valid with it at @p now. Without one, the
 * error of the first CA that names itself the issuer, or "unable to get local issuer
 * certificate" when none does. */
static int check_chain(gnutls_x509_crt_t leaf, const cert *cas, int ncas, time_t now)
{
    int first_rc = 0;
    char first[512] = "";
    for (int i = 0; i < ncas; i++) {
        if (!gnutls_x509_crt_check_issuer(leaf, cas[i].crt)) {
            continue;
        }
        int rc = check_signed_by(leaf, cas[i].crt, now);
        if (rc == 0) {
            co_error_clear();
            return 0;
        }
        if (first_rc == 0) {
            first_rc = rc;
            snprintf(first, sizeof(first), "%s", co_error_last());
        }
    }
    if (first_rc == 0) {
        return co_error_set(CO_EINVALID,
                            "certificate does not verify: unable to get local issuer certificate");
    }
    return co_error_set(first_rc, "%s", first);
}

int co_certs_verify(const char *cert_pem, const char *bundle_pem, const char *name, time_t now)
{
    cert leaf = {NULL, {NULL, 0}};
    cert cas[MAX_PEM_CERTS] = {0};
    int rc = read_cert(&leaf, cert_pem, cert_pem ? strlen(cert_pem) : 0);
    if (rc < 0) {
        return co_error_wrap("the certificate");
    }
    int ncas = read_certs(cas, MAX_PEM_CERTS, bundle_pem, bundle_pem ? strlen(bundle_pem) : 0);
    if (ncas < 0) {
        cert_free(&leaf);
        return co_error_wrap("the CA bundle");
    }
    rc = check_chain(leaf.crt, cas, ncas, now);
    if (rc == 0) {
        rc = check_server_purpose(leaf.crt);
    }
    if (rc == 0 && name) {
        rc = check_name(leaf.crt, name);
    }
    for (int i = 0; i < ncas; i++) {
        cert_free(&cas[i]);
    }
    cert_free(&leaf);
    return rc;
}

/* --- bundles ------------------------------------------------------------------------------ */

int co_certs_bundle(co_buf *out, const char *const *pems, size_t n, time_t now)
{
    char seen[MAX_PEM_CERTS][65];
    int nseen = 0;
    for (size_t i = 0; i < n; i++) {
        cert certs[MAX_PEM_CERTS] = {0};
        int m = pems[i] ? read_certs(certs, MAX_PEM_CERTS, pems[i], strlen(pems[i])) : 0;
        if (m < 0) {
            co_error_clear();
            continue;
        }
        int rc = 0;
        for (int j = 0; j < m; j++) {
            char hash[65];
            sha256_hex(hash, &certs[j].der);
            int dup = !hash[0];
            for (int k = 0; k < nseen && !dup; k++) {
                dup = !strcmp(seen[k], hash);
            }
            int valid = cert_time(gnutls_x509_crt_get_expiration_time(certs[j].crt)) > now;
            if (rc == 0 && !dup && valid && nseen < MAX_PEM_CERTS) {
                char *text = NULL;
                memcpy(seen[nseen++], hash, sizeof(hash));
                if (der_to_pem(&text, &certs[j].der) == 0) {
                    rc = co_buf_puts(out, text);
                    free(text);
                }
            }
            cert_free(&certs[j]);
        }
        if (rc < 0) {
            return rc;
        }
    }
    return nseen;
}
