/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The X.509 work behind certs.h, on OpenSSL 3: EVP key generation, certificates built field by
 * field (SANs as GENERAL_NAMEs, never through OpenSSL's config-string parser, so no name can
 * smuggle in another extension), PEM through memory BIOs, and verification with an X509_STORE
 * at an explicit time. OpenSSL's error queue is drained into the message of every failure.
 */
#include "certs/certs.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "co/error.h"

/* Most certificates read from one PEM text (a bundle holds a handful). */
#define MAX_PEM_CERTS 64

/* Fails with OpenSSL's most recent reason appended; empties the error queue. */
static int ossl_fail(int code, const char *what)
{
    char reason[256] = "";
    unsigned long e;
    unsigned long last = 0;
    while ((e = ERR_get_error()) != 0) {
        last = e;
    }
    if (last) {
        ERR_error_string_n(last, reason, sizeof(reason));
    }
    return co_error_set(code, "%s%s%s", what, reason[0] ? ": " : "", reason);
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

static char *bio_text(BIO *b)
{
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    char *s = co_xmalloc((size_t)n + 1);
    memcpy(s, data, (size_t)n);
    s[n] = '\0';
    return s;
}

static int cert_to_pem(char **out, X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    if (!b || !PEM_write_bio_X509(b, x)) {
        BIO_free(b);
        return ossl_fail(CO_ERROR, "cannot encode the certificate");
    }
    *out = bio_text(b);
    BIO_free(b);
    return 0;
}

static int key_to_pem(char **out, EVP_PKEY *k)
{
    BIO *b = BIO_new(BIO_s_secmem());
    if (!b || !PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL)) {
        BIO_free(b);
        return ossl_fail(CO_ERROR, "cannot encode the private key");
    }
    *out = bio_text(b);
    BIO_free(b);
    return 0;
}

/* Reads up to @p max certificates; returns how many, or a negative error. */
static int read_certs(X509 **certs, int max, const char *pem, size_t len)
{
    if (!pem || len > (size_t)INT32_MAX) {
        return co_error_set(CO_EINVALID, "no PEM certificate found");
    }
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    if (!b) {
        return ossl_fail(CO_ERROR, "cannot read PEM");
    }
    int n = 0;
    while (n < max) {
        X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
        if (!x) {
            unsigned long e = ERR_peek_last_error();
            if (ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
                ERR_clear_error(); /* the end of the text */
                break;
            }
            for (int i = 0; i < n; i++) {
                X509_free(certs[i]);
            }
            BIO_free(b);
            return ossl_fail(CO_EINVALID, "malformed PEM certificate");
        }
        certs[n++] = x;
    }
    BIO_free(b);
    if (n == 0) {
        return co_error_set(CO_EINVALID, "no PEM certificate found");
    }
    return n;
}

static int read_cert(X509 **out, const char *pem, size_t len)
{
    X509 *one[1];
    int n = read_certs(one, 1, pem, len);
    if (n < 0) {
        return n;
    }
    *out = one[0];
    return 0;
}

/* Encrypted keys are refused: without a callback OpenSSL would ask for a passphrase on the
 * terminal and wait for an answer. */
static int no_passphrase(char *buf, int size, int rwflag, void *ctx)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)ctx;
    return -1;
}

static int read_key(EVP_PKEY **out, const char *pem)
{
    if (!pem || !*pem) {
        return co_error_set(CO_EINVALID, "no PEM private key found");
    }
    BIO *b = BIO_new_mem_buf(pem, -1);
    if (!b) {
        return ossl_fail(CO_ERROR, "cannot read PEM");
    }
    EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL);
    BIO_free(b);
    if (!k) {
        return ossl_fail(CO_EINVALID, "malformed PEM private key");
    }
    *out = k;
    return 0;
}

int co_certs_count(const char *pem, size_t len)
{
    X509 *certs[MAX_PEM_CERTS];
    int n = read_certs(certs, MAX_PEM_CERTS, pem, len);
    for (int i = 0; i < n; i++) {
        X509_free(certs[i]);
    }
    return n;
}

/* --- building ----------------------------------------------------------------------------- */

static int new_key(EVP_PKEY **out, co_certs_key_type type)
{
    EVP_PKEY *k = NULL;
    switch (type) {
    case CO_CERTS_ECDSA_P384:
        k = EVP_EC_gen("P-384");
        break;
    case CO_CERTS_RSA_2048:
        k = EVP_RSA_gen(2048);
        break;
    case CO_CERTS_ECDSA_P256:
    default:
        k = EVP_EC_gen("P-256");
        break;
    }
    if (!k) {
        return ossl_fail(CO_ERROR, "cannot generate a key");
    }
    *out = k;
    return 0;
}

static int set_serial(X509 *x)
{
    unsigned char raw[16];
    if (RAND_bytes(raw, sizeof(raw)) != 1) {
        return ossl_fail(CO_ERROR, "no random serial number");
    }
    raw[0] &= 0x7f; /* positive */
    raw[0] |= 0x40; /* and a full 16 bytes long */
    BIGNUM *bn = BN_bin2bn(raw, sizeof(raw), NULL);
    ASN1_INTEGER *serial = bn ? BN_to_ASN1_INTEGER(bn, NULL) : NULL;
    int ok = serial && X509_set_serialNumber(x, serial);
    ASN1_INTEGER_free(serial);
    BN_free(bn);
    return ok ? 0 : ossl_fail(CO_ERROR, "cannot set the serial number");
}

static int set_times(X509 *x, time_t not_before, time_t not_after)
{
    ASN1_TIME *nb = ASN1_TIME_set(NULL, not_before);
    ASN1_TIME *na = ASN1_TIME_set(NULL, not_after);
    int ok = nb && na && X509_set1_notBefore(x, nb) && X509_set1_notAfter(x, na);
    ASN1_TIME_free(nb);
    ASN1_TIME_free(na);
    return ok ? 0 : ossl_fail(CO_ERROR, "cannot set the validity");
}

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    int ok = ext && X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 0 : ossl_fail(CO_ERROR, "cannot add an extension");
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

static int add_sans(X509 *x, const co_certs_request *req)
{
    GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
    int rc = 0;
    for (size_t i = 0; i < req->ndns && rc == 0; i++) {
        if (!dns_name_ok(req->dns_names[i])) {
            rc = co_error_set(CO_EINVALID, "invalid DNS name \"%s\" for a certificate",
                              req->dns_names[i]);
            break;
        }
        GENERAL_NAME *g = GENERAL_NAME_new();
        ASN1_IA5STRING *s = ASN1_IA5STRING_new();
        ASN1_STRING_set(s, req->dns_names[i], -1);
        GENERAL_NAME_set0_value(g, GEN_DNS, s);
        sk_GENERAL_NAME_push(gens, g);
    }
    for (size_t i = 0; i < req->nips && rc == 0; i++) {
        unsigned char addr[16];
        int alen = 0;
        if (inet_pton(AF_INET, req->ip_addrs[i], addr) == 1) {
            alen = 4;
        } else if (inet_pton(AF_INET6, req->ip_addrs[i], addr) == 1) {
            alen = 16;
        } else {
            rc = co_error_set(CO_EINVALID, "invalid IP address \"%s\" for a certificate",
                              req->ip_addrs[i]);
            break;
        }
        GENERAL_NAME *g = GENERAL_NAME_new();
        ASN1_OCTET_STRING *o = ASN1_OCTET_STRING_new();
        ASN1_OCTET_STRING_set(o, addr, alen);
        GENERAL_NAME_set0_value(g, GEN_IPADD, o);
        sk_GENERAL_NAME_push(gens, g);
    }
    if (rc == 0 && sk_GENERAL_NAME_num(gens) == 0) {
        rc = co_error_set(CO_EINVALID, "a serving certificate needs at least one DNS name or IP");
    }
    if (rc == 0 && !X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT)) {
        rc = ossl_fail(CO_ERROR, "cannot add the subject alternative names");
    }
    sk_GENERAL_NAME_pop_free(gens, GENERAL_NAME_free);
    return rc;
}

static int set_subject_cn(X509 *x, const char *cn)
{
    X509_NAME *name = X509_get_subject_name(x);
    if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                    0)) {
        return ossl_fail(CO_EINVALID, "cannot set the subject");
    }
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

int co_certs_create_ca(co_certs_pair *out, const co_certs_request *req)
{
    int rc = check_request(req);
    if (rc < 0) {
        return rc;
    }
    EVP_PKEY *key = NULL;
    X509 *x = X509_new();
    co_certs_pair p = {0};
    if (!x) {
        return ossl_fail(CO_ERROR, "cannot allocate a certificate");
    }
    if ((rc = new_key(&key, req->key_type)) < 0 || (rc = set_serial(x)) < 0 ||
        (rc = set_times(x, req->now - (time_t)req->backdate_s,
                        req->now + (time_t)req->validity_s)) < 0 ||
        (rc = set_subject_cn(x, req->common_name)) < 0) {
        goto done;
    }
    if (!X509_set_version(x, X509_VERSION_3) ||
        !X509_set_issuer_name(x, X509_get_subject_name(x)) || !X509_set_pubkey(x, key)) {
        rc = ossl_fail(CO_ERROR, "cannot build the CA certificate");
        goto done;
    }
    if ((rc = add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0")) < 0 ||
        (rc = add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign")) < 0 ||
        (rc = add_ext(x, x, NID_subject_key_identifier, "hash")) < 0) {
        goto done;
    }
    if (!X509_sign(x, key, EVP_sha256())) {
        rc = ossl_fail(CO_ERROR, "cannot sign the CA certificate");
        goto done;
    }
    if ((rc = cert_to_pem(&p.cert_pem, x)) < 0 || (rc = key_to_pem(&p.key_pem, key)) < 0) {
        goto done;
    }
    *out = p;
    p.cert_pem = p.key_pem = NULL;
done:
    co_certs_pair_dispose(&p);
    EVP_PKEY_free(key);
    X509_free(x);
    return rc;
}

int co_certs_create_serving(co_certs_pair *out,
                            const co_certs_pair *ca,
                            const co_certs_request *req)
{
    int rc = check_request(req);
    if (rc < 0) {
        return rc;
    }
    X509 *ca_cert = NULL;
    EVP_PKEY *ca_key = NULL;
    EVP_PKEY *key = NULL;
    X509 *x = NULL;
    co_certs_pair p = {0};
    if (!ca || !ca->cert_pem || !ca->key_pem) {
        return co_error_set(CO_EINVALID, "no CA to sign with");
    }
    if (co_certs_check_pair(ca->cert_pem, ca->key_pem) < 0) {
        return co_error_wrap("the CA");
    }
    if ((rc = read_cert(&ca_cert, ca->cert_pem, strlen(ca->cert_pem))) < 0 ||
        (rc = read_key(&ca_key, ca->key_pem)) < 0) {
        goto done;
    }
    if (X509_check_ca(ca_cert) == 0) {
        rc = co_error_set(CO_EINVALID, "the CA certificate is not a CA");
        goto done;
    }
    time_t not_after = req->now + (time_t)req->validity_s;
    time_t ca_not_after = 0;
    if (ASN1_TIME_to_tm(X509_get0_notAfter(ca_cert), NULL) == 1) {
        struct tm tm;
        ASN1_TIME_to_tm(X509_get0_notAfter(ca_cert), &tm);
        ca_not_after = timegm(&tm);
    }
    if (ca_not_after && not_after > ca_not_after) {
        not_after = ca_not_after;
    }
    if (not_after <= req->now) {
        rc = co_error_set(CO_EINVALID, "the CA has expired");
        goto done;
    }
    x = X509_new();
    if (!x) {
        rc = ossl_fail(CO_ERROR, "cannot allocate a certificate");
        goto done;
    }
    if ((rc = new_key(&key, req->key_type)) < 0 || (rc = set_serial(x)) < 0 ||
        (rc = set_times(x, req->now - (time_t)req->backdate_s, not_after)) < 0 ||
        (rc = set_subject_cn(x, req->common_name)) < 0) {
        goto done;
    }
    if (!X509_set_version(x, X509_VERSION_3) ||
        !X509_set_issuer_name(x, X509_get_subject_name(ca_cert)) || !X509_set_pubkey(x, key)) {
        rc = ossl_fail(CO_ERROR, "cannot build the serving certificate");
        goto done;
    }
    const char *usage = req->key_type == CO_CERTS_RSA_2048
                            ? "critical,digitalSignature,keyEncipherment"
                            : "critical,digitalSignature";
    if ((rc = add_ext(x, ca_cert, NID_basic_constraints, "critical,CA:FALSE")) < 0 ||
        (rc = add_ext(x, ca_cert, NID_key_usage, usage)) < 0 ||
        (rc = add_ext(x, ca_cert, NID_ext_key_usage, "serverAuth")) < 0 ||
        (rc = add_ext(x, ca_cert, NID_subject_key_identifier, "hash")) < 0 ||
        (rc = add_ext(x, ca_cert, NID_authority_key_identifier, "keyid:always")) < 0 ||
        (rc = add_sans(x, req)) < 0) {
        goto done;
    }
    if (!X509_sign(x, ca_key, EVP_sha256())) {
        rc = ossl_fail(CO_ERROR, "cannot sign the serving certificate");
        goto done;
    }
    if ((rc = cert_to_pem(&p.cert_pem, x)) < 0 || (rc = key_to_pem(&p.key_pem, key)) < 0) {
        goto done;
    }
    *out = p;
    p.cert_pem = p.key_pem = NULL;
done:
    co_certs_pair_dispose(&p);
    EVP_PKEY_free(key);
    EVP_PKEY_free(ca_key);
    X509_free(ca_cert);
    X509_free(x);
    return rc;
}

/* --- reading ------------------------------------------------------------------------------ */

static time_t asn1_time(const ASN1_TIME *t)
{
    struct tm tm;
    if (ASN1_TIME_to_tm(t, &tm) != 1) {
        return 0;
    }
    return timegm(&tm);
}

static void name_line(char *out, size_t size, const X509_NAME *name)
{
    out[0] = '\0';
    BIO *b = BIO_new(BIO_s_mem());
    if (!b) {
        return;
    }
    X509_NAME_print_ex(b, name, 0, XN_FLAG_RFC2253);
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    snprintf(out, size, "%.*s", (int)n, data);
    BIO_free(b);
}

static void sans_line(char *out, size_t size, X509 *x)
{
    out[0] = '\0';
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    size_t len = 0;
    for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        char one[64 + 256] = "";
        if (g->type == GEN_DNS) {
            snprintf(one, sizeof(one), "DNS:%.*s", ASN1_STRING_length(g->d.dNSName),
                     (const char *)ASN1_STRING_get0_data(g->d.dNSName));
        } else if (g->type == GEN_IPADD) {
            char text[INET6_ADDRSTRLEN] = "";
            int alen = ASN1_STRING_length(g->d.iPAddress);
            const unsigned char *a = ASN1_STRING_get0_data(g->d.iPAddress);
            if (alen == 4 || alen == 16) {
                inet_ntop(alen == 4 ? AF_INET : AF_INET6, a, text, sizeof(text));
            }
            snprintf(one, sizeof(one), "IP Address:%s", text);
        } else {
            continue;
        }
        int w = snprintf(out + len, size - len, "%s%s", len ? ", " : "", one);
        if (w < 0 || (size_t)w >= size - len) {
            break;
        }
        len += (size_t)w;
    }
    GENERAL_NAMES_free(gens);
}

int co_certs_inspect(co_certs_info *out, const char *pem, size_t len)
{
    X509 *x = NULL;
    int rc = read_cert(&x, pem, len);
    if (rc < 0) {
        return rc;
    }
    co_certs_info info;
    memset(&info, 0, sizeof(info));
    info.not_before = asn1_time(X509_get0_notBefore(x));
    info.not_after = asn1_time(X509_get0_notAfter(x));
    info.is_ca = X509_check_ca(x) != 0 && (X509_get_extension_flags(x) & EXFLAG_CA);
    info.server_auth = (X509_get_extension_flags(x) & EXFLAG_XKUSAGE)
                           ? (X509_get_extended_key_usage(x) & XKU_SSL_SERVER) != 0
                           : 0;
    name_line(info.subject, sizeof(info.subject), X509_get_subject_name(x));
    name_line(info.issuer, sizeof(info.issuer), X509_get_issuer_name(x));
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    snprintf(info.serial, sizeof(info.serial), "%s", hex ? hex : "");
    OPENSSL_free(hex);
    BN_free(bn);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (X509_digest(x, EVP_sha256(), md, &mdlen)) {
        for (size_t i = 0; i < mdlen && i < 32; i++) {
            snprintf(info.sha256 + 2 * i, 3, "%02x", md[i]);
        }
    }
    sans_line(info.sans, sizeof(info.sans), x);
    X509_free(x);
    *out = info;
    return 0;
}

int co_certs_check_pair(const char *cert_pem, const char *key_pem)
{
    X509 *x = NULL;
    EVP_PKEY *k = NULL;
    int rc = read_cert(&x, cert_pem, cert_pem ? strlen(cert_pem) : 0);
    if (rc == 0) {
        rc = read_key(&k, key_pem);
    }
    if (rc == 0 && X509_check_private_key(x, k) != 1) {
        ERR_clear_error();
        rc = co_error_set(CO_EINVALID, "the private key does not belong to the certificate");
    }
    EVP_PKEY_free(k);
    X509_free(x);
    return rc;
}

int co_certs_verify(const char *cert_pem, const char *bundle_pem, const char *name, time_t now)
{
    X509 *leaf = NULL;
    X509 *cas[MAX_PEM_CERTS];
    int ncas = 0;
    X509_STORE *store = NULL;
    X509_STORE_CTX *ctx = NULL;
    int rc = read_cert(&leaf, cert_pem, cert_pem ? strlen(cert_pem) : 0);
    if (rc < 0) {
        return co_error_wrap("the certificate");
    }
    ncas = read_certs(cas, MAX_PEM_CERTS, bundle_pem, bundle_pem ? strlen(bundle_pem) : 0);
    if (ncas < 0) {
        rc = co_error_wrap("the CA bundle");
        ncas = 0;
        goto done;
    }
    store = X509_STORE_new();
    ctx = X509_STORE_CTX_new();
    if (!store || !ctx) {
        rc = ossl_fail(CO_ERROR, "cannot allocate a verification context");
        goto done;
    }
    for (int i = 0; i < ncas; i++) {
        X509_STORE_add_cert(store, cas[i]);
    }
    if (!X509_STORE_CTX_init(ctx, store, leaf, NULL)) {
        rc = ossl_fail(CO_ERROR, "cannot start verification");
        goto done;
    }
    X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_time(param, now);
    X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
    if (name) {
        unsigned char addr[16];
        if (inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1) {
            X509_VERIFY_PARAM_set1_ip_asc(param, name);
        } else {
            X509_VERIFY_PARAM_set1_host(param, name, 0);
        }
    }
    if (X509_verify_cert(ctx) != 1) {
        int err = X509_STORE_CTX_get_error(ctx);
        ERR_clear_error();
        rc = co_error_set(CO_EINVALID, "certificate does not verify: %s",
                          X509_verify_cert_error_string(err));
    }
done:
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    for (int i = 0; i < ncas; i++) {
        X509_free(cas[i]);
    }
    X509_free(leaf);
    return rc;
}

int co_certs_bundle(co_buf *out, const char *const *pems, size_t n, time_t now)
{
    char seen[MAX_PEM_CERTS][EVP_MAX_MD_SIZE];
    int nseen = 0;
    for (size_t i = 0; i < n; i++) {
        X509 *certs[MAX_PEM_CERTS] = {0};
        int m = pems[i] ? read_certs(certs, MAX_PEM_CERTS, pems[i], strlen(pems[i])) : 0;
        if (m < 0) {
            co_error_clear();
            continue;
        }
        for (int j = 0; j < m; j++) {
            X509 *x = certs[j];
            unsigned char md[EVP_MAX_MD_SIZE];
            unsigned int mdlen = 0;
            int dup = !X509_digest(x, EVP_sha256(), md, &mdlen);
            for (int k = 0; k < nseen && !dup; k++) {
                dup = !memcmp(seen[k], md, mdlen);
            }
            int valid = asn1_time(X509_get0_notAfter(x)) > now;
            if (!dup && valid && nseen < MAX_PEM_CERTS) {
                char *text = NULL;
                memcpy(seen[nseen++], md, mdlen);
                if (cert_to_pem(&text, x) == 0) {
                    int rc = co_buf_puts(out, text);
                    free(text);
                    if (rc < 0) {
                        for (int k = j; k < m; k++) {
                            X509_free(certs[k]);
                        }
                        return rc;
                    }
                }
            }
            X509_free(x);
        }
    }
    return nseen;
}
