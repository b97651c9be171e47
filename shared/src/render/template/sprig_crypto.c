/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sprig's cryptographic functions: private keys and certificates (genPrivateKey, genCA,
 * genSelfSignedCert, genSignedCert and their WithKey forms, buildCustomCert), the Master
 * Password algorithm (derivePassword), AES-CBC (encryptAES/decryptAES), bcrypt and htpasswd.
 *
 * Everything follows sprig 3.2 on Go 1.19 (crypto.go and crypto/x509):
 * - keys are written as Go writes them: PKCS#1 "RSA PRIVATE KEY", SEC 1 "EC PRIVATE KEY",
 *   "DSA PRIVATE KEY" (version, p, q, g, y, x) and PKCS#8 "PRIVATE KEY" for Ed25519; new
 *   keys are RSA 4096 (genPrivateKey) or RSA 2048 (certificates without a key);
 * - a certificate is v3 with a random 128-bit serial, subject and issuer with only a common
 *   name (PrintableString when Go would choose it), validity from now for daysValid days, the
 *   extensions in Go's order: key usage (critical), extended key usage (server and client
 *   auth), basic constraints (critical), subject key id (CAs: SHA-1 of the public key),
 *   authority key id (when the issuer differs and has a key id), subject alternative names
 *   (DNS names, then IPs; critical when the subject is empty); signed with SHA-256 (RSA,
 *   P-224/P-256), SHA-384 (P-384), SHA-512 (P-521) or pure Ed25519;
 * - sprig's encryptAES uses the password bytes, zero-padded or cut to 32, as the AES-256
 *   key, PKCS#7 padding and a random IV before the ciphertext; decryptAES does not check the
 *   padding and fails like Go's runtime on short input;
 * - bcrypt is "$2a$" with cost 10 (libxcrypt); a password is cut at its first NUL byte (Go
 *   hashes the bytes after it too).
 * Known differences: messages of malformed DER inside valid PEM are Go-like but generic
 * ("x509: malformed certificate", "x509: failed to parse private key").
 *
 * Secrets (keys, passwords, plaintexts) never reach a log or an error message.
 */
#include <arpa/inet.h>
#include <crypt.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/decoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "sprig.h"

#define OUT_INIT CO_BUF_INIT(tpl_out_cap())

/* ---- the certificate value ---------------------------------------------------------------- */

static const tv_field cert_fields[] = {
    {.name = "Cert", .type = &T_STRING},
    {.name = "Key", .type = &T_STRING},
};

/* sprig's unexported struct certificate {Cert, Key string} */
static const tv_type T_CERTIFICATE = {.kind = TK_STRUCT,
                                      .name = "sprig.certificate",
                                      .fields = cert_fields,
                                      .nfields = CO_ARRAY_SIZE(cert_fields)};

static tv cert_value(tpl_x *x, tv cert, tv key)
{
    tv_obj *o = tpl_alloc(x, sizeof(*o) + 2 * sizeof(tv));
    o->native = NULL;
    o->fields[0] = cert;
    o->fields[1] = key;
    tv r = {&T_CERTIFICATE, {.o = o}};
    return r;
}

/* The zero certificate a failing function returns alongside its error. */
static int cert_fail(tpl_x *x, tv *ret)
{
    *ret = cert_value(x, tv_string(x, "", 0), tv_string(x, "", 0));
    return -1;
}

static const char *cert_field(const tv *c, size_t i, size_t *len)
{
    const tv *f = &c->u.o->fields[i];
    if (f->t != &T_STRING || !f->u.s) {
        *len = 0;
        return "";
    }
    *len = f->u.s->len;
    return sp_cstr(f->u.s);
}

/* ---- PEM and keys ------------------------------------------------------------------------- */

/* Forgets OpenSSL's error queue (its texts never reach the user; Go's do). */
static void ossl_clear(void)
{
    ERR_clear_error();
}

/* A memory BIO's content as a string value; frees the BIO. */
static tv bio_string(tpl_x *x, BIO *bio)
{
    char *p = NULL;
    long n = BIO_get_mem_data(bio, &p);
    tv r = tv_string(x, p ? p : "", n > 0 ? (size_t)n : 0);
    BIO_free(bio);
    return r;
}

/* One PEM block as Go's pem.Decode finds it (the first one). */
typedef struct pem_block {
    char *name;
    char *header;
    unsigned char *data;
    long len;
} pem_block;

static bool pem_decode(const char *s, size_t len, pem_block *b)
{
    memset(b, 0, sizeof(*b));
    if (len > (size_t)INT32_MAX) {
        return false;
    }
    BIO *bio = BIO_new_mem_buf(s, (int)len);
    if (!bio) {
        return false;
    }
    int ok = PEM_read_bio(bio, &b->name, &b->header, &b->data, &b->len);
    BIO_free(bio);
    ossl_clear();
    return ok == 1;
}

static void pem_block_dispose(pem_block *b)
{
    OPENSSL_free(b->name);
    OPENSSL_free(b->header);
    OPENSSL_clear_free(b->data, b->len > 0 ? (size_t)b->len : 0);
    memset(b, 0, sizeof(*b));
}

/* Decodes DER in one structure ("type-specific", "PrivateKeyInfo") of one key type. */
static EVP_PKEY *
der_key(const unsigned char *der, long len, const char *structure, const char *type)
{
    EVP_PKEY *pkey = NULL;
    OSSL_DECODER_CTX *dc = OSSL_DECODER_CTX_new_for_pkey(&pkey, "DER", structure, type,
                                                         OSSL_KEYMGMT_SELECT_KEYPAIR, NULL, NULL);
    if (!dc) {
        ossl_clear();
        return NULL;
    }
    const unsigned char *p = der;
    size_t left = (size_t)len;
    if (OSSL_DECODER_from_data(dc, &p, &left) != 1 || left != 0) {
        EVP_PKEY_free(pkey);
        pkey = NULL;
    }
    OSSL_DECODER_CTX_free(dc);
    ossl_clear();
    return pkey;
}

static bool is_pkcs8(const unsigned char *der, long len)
{
    const unsigned char *p = der;
    PKCS8_PRIV_KEY_INFO *p8 = d2i_PKCS8_PRIV_KEY_INFO(NULL, &p, len);
    PKCS8_PRIV_KEY_INFO_free(p8);
    ossl_clear();
    return p8 != NULL;
}

/* Go's hint when a DER key is in another of the formats it knows, tried in Go's order for the
 * parser that failed (@self). */
static const char *other_format_hint(const unsigned char *der, long len, const char *self)
{
    static const char *const order[][3] = {
        {"ParsePKCS1PrivateKey", "ParseECPrivateKey", "ParsePKCS8PrivateKey"},
        {"ParseECPrivateKey", "ParsePKCS8PrivateKey", "ParsePKCS1PrivateKey"},
        {"ParsePKCS8PrivateKey", "ParseECPrivateKey", "ParsePKCS1PrivateKey"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(order); i++) {
        if (strcmp(order[i][0], self) != 0) {
            continue;
        }
        for (size_t j = 1; j < 3; j++) {
            const char *other = order[i][j];
            if (strcmp(other, "ParsePKCS8PrivateKey") == 0) {
                if (is_pkcs8(der, len)) {
                    return other;
                }
                continue;
            }
            EVP_PKEY *k = der_key(der, len, "type-specific",
                                  strcmp(other, "ParseECPrivateKey") == 0 ? "EC" : "RSA");
            if (k) {
                EVP_PKEY_free(k);
                return other;
            }
        }
    }
    return NULL;
}

static void parse_fail(char *err,
                       size_t errlen,
                       const char *prefix,
                       const unsigned char *der,
                       long len,
                       const char *self)
{
    const char *hint = other_format_hint(der, len, self);
    if (hint) {
        snprintf(err, errlen,
                 "%sx509: failed to parse private key (use %s instead for this key "
                 "format)",
                 prefix, hint);
    } else {
        snprintf(err, errlen, "%sx509: failed to parse private key", prefix);
    }
}

/* The EC curves Go's crypto/elliptic knows. */
static bool go_curve(const EVP_PKEY *k)
{
    char name[64];
    size_t n = 0;
    if (EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, name, sizeof(name), &n) !=
        1) {
        ossl_clear();
        return false;
    }
    static const char *const curves[] = {"P-224",     "P-256",      "P-384",     "P-521",
                                         "secp224r1", "prime256v1", "secp384r1", "secp521r1"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(curves); i++) {
        if (strcmp(name, curves[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* sprig's parsePrivateKeyPEM: NULL with the message in @err. */
static EVP_PKEY *parse_key_pem(const char *s, size_t len, char *err, size_t errlen)
{
    pem_block b;
    if (!pem_decode(s, len, &b)) {
        snprintf(err, errlen, "no PEM data in input");
        return NULL;
    }
    EVP_PKEY *k = NULL;
    size_t nl = strlen(b.name);
    static const char suffix[] = " PRIVATE KEY";
    const size_t sl = sizeof(suffix) - 1;
    if (strcmp(b.name, "PRIVATE KEY") == 0) {
        const unsigned char *p = b.data;
        PKCS8_PRIV_KEY_INFO *p8 = d2i_PKCS8_PRIV_KEY_INFO(NULL, &p, b.len);
        if (!p8) {
            parse_fail(err, errlen, "decoding PEM as PKCS#8: ", b.data, b.len,
                       "ParsePKCS8PrivateKey");
        } else {
            const ASN1_OBJECT *oid = NULL;
            PKCS8_pkey_get0(&oid, NULL, NULL, NULL, p8);
            int nid = oid ? OBJ_obj2nid(oid) : NID_undef;
            if (nid == NID_rsaEncryption || nid == NID_X9_62_id_ecPublicKey || nid == NID_ED25519) {
                k = EVP_PKCS82PKEY(p8);
                if (!k) {
                    snprintf(err, errlen,
                             "decoding PEM as PKCS#8: x509: failed to parse private "
                             "key");
                } else if (nid == NID_X9_62_id_ecPublicKey && !go_curve(k)) {
                    snprintf(err, errlen,
                             "decoding PEM as PKCS#8: x509: failed to parse EC "
                             "private key embedded in PKCS#8: x509: unknown "
                             "elliptic curve");
                    EVP_PKEY_free(k);
                    k = NULL;
                }
            } else {
                char txt[128] = "";
                if (oid) {
                    OBJ_obj2txt(txt, sizeof(txt), oid, 1);
                }
                snprintf(err, errlen,
                         "decoding PEM as PKCS#8: x509: PKCS#8 wrapping contained "
                         "private key with unknown algorithm: %s",
                         txt);
            }
            PKCS8_PRIV_KEY_INFO_free(p8);
        }
    } else if (nl < sl || strcmp(b.name + nl - sl, suffix) != 0) {
        snprintf(err, errlen, "no private key data in PEM block of type %s", b.name);
    } else {
        b.name[nl - sl] = '\0';
        if (strcmp(b.name, "RSA") == 0) {
            k = der_key(b.data, b.len, "type-specific", "RSA");
            if (!k) {
                parse_fail(err, errlen, "parsing RSA private key from PEM: ", b.data, b.len,
                           "ParsePKCS1PrivateKey");
            }
        } else if (strcmp(b.name, "EC") == 0) {
            k = der_key(b.data, b.len, "type-specific", "EC");
            if (!k) {
                parse_fail(err, errlen, "parsing EC private key from PEM: ", b.data, b.len,
                           "ParseECPrivateKey");
            } else if (!go_curve(k)) {
                snprintf(err, errlen,
                         "parsing EC private key from PEM: x509: unknown elliptic "
                         "curve");
                EVP_PKEY_free(k);
                k = NULL;
            }
        } else if (strcmp(b.name, "DSA") == 0) {
            k = der_key(b.data, b.len, "type-specific", "DSA");
            if (!k) {
                snprintf(err, errlen, "parsing DSA private key from PEM: asn1: structure error");
            }
        } else {
            b.name[nl - sl] = ' ';
            snprintf(err, errlen, "invalid private key type %s", b.name);
        }
    }
    pem_block_dispose(&b);
    ossl_clear();
    return k;
}

/* sprig's pemBlockForKey: the key as Go encodes it. */
static int key_pem(tpl_x *x, EVP_PKEY *k, tv *out)
{
    BIO *bio = BIO_new(BIO_s_mem());
    if (!bio) {
        return tpl_fail(x, "out of memory");
    }
    int ok;
    if (EVP_PKEY_is_a(k, "ED25519")) {
        ok = PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL);
    } else {
        ok = PEM_write_bio_PrivateKey_traditional(bio, k, NULL, NULL, 0, NULL, NULL);
    }
    ossl_clear();
    if (ok != 1) {
        BIO_free(bio);
        return tpl_fail(x, "error pem-encoding key");
    }
    *out = bio_string(x, bio);
    return 0;
}

static EVP_PKEY *gen_rsa(unsigned bits)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits);
    ossl_clear();
    return k;
}

static EVP_PKEY *gen_dsa(void)
{
    EVP_PKEY *params = NULL;
    EVP_PKEY *k = NULL;
    EVP_PKEY_CTX *pc = EVP_PKEY_CTX_new_from_name(NULL, "DSA", NULL);
    if (pc && EVP_PKEY_paramgen_init(pc) == 1 &&
        EVP_PKEY_CTX_set_dsa_paramgen_bits(pc, 2048) == 1 &&
        EVP_PKEY_CTX_set_dsa_paramgen_q_bits(pc, 256) == 1 && EVP_PKEY_paramgen(pc, &params) == 1) {
        EVP_PKEY_CTX *kc = EVP_PKEY_CTX_new_from_pkey(NULL, params, NULL);
        if (kc && EVP_PKEY_keygen_init(kc) == 1 && EVP_PKEY_keygen(kc, &k) != 1) {
            k = NULL;
        }
        EVP_PKEY_CTX_free(kc);
    }
    EVP_PKEY_free(params);
    EVP_PKEY_CTX_free(pc);
    ossl_clear();
    return k;
}

/* genPrivateKey: failures are the result text, as in sprig */
static int fn_gen_private_key(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const char *typ = sp_cstr(a[0].u.s);
    EVP_PKEY *k = NULL;
    if (strcmp(typ, "") == 0 || strcmp(typ, "rsa") == 0) {
        k = gen_rsa(4096);
    } else if (strcmp(typ, "dsa") == 0) {
        k = gen_dsa();
        if (!k) {
            *ret = tv_cstring(x, "failed to generate dsa params: key generation failed");
            return 0;
        }
    } else if (strcmp(typ, "ecdsa") == 0) {
        k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    } else if (strcmp(typ, "ed25519") == 0) {
        k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    } else {
        co_buf b = OUT_INIT;
        int rc = co_buf_puts(&b, "Unknown type ");
        rc = rc < 0 ? rc : co_buf_put(&b, a[0].u.s->s, a[0].u.s->len);
        return sp_ret_buf(x, ret, &b, rc);
    }
    ossl_clear();
    if (!k) {
        *ret = tv_cstring(x, "failed to generate private key: key generation failed");
        return 0;
    }
    int rc = key_pem(x, k, ret);
    EVP_PKEY_free(k);
    return rc;
}

/* ---- certificates ------------------------------------------------------------------------- */

/* Go's asn1 PrintableString alphabet (with '*', as Go marshals strings). */
static bool go_printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  strchr(" '()+,-./:=?*", c) != NULL;
        if (!ok || c == '\0') {
            return false;
        }
    }
    return true;
}

/* The certificate request of getBaseCertTemplate. */
typedef struct cert_req {
    const tv_str *cn;
    unsigned char (*ips)[16];
    size_t *iplen;
    size_t nips;
    const tv_str **dns;
    size_t ndns;
    int64_t days;
    bool ca;
} cert_req;

/* net.ParseIP, with To4 applied as x509 marshals IPs. */
static bool parse_ip(const char *s, unsigned char out[16], size_t *len)
{
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton(AF_INET, s, &v4) == 1) {
        memcpy(out, &v4, 4);
        *len = 4;
        return true;
    }
    if (strchr(s, '%') == NULL && inet_pton(AF_INET6, s, &v6) == 1) {
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(v6.s6_addr, mapped, 12) == 0) {
            memcpy(out, v6.s6_addr + 12, 4);
            *len = 4;
        } else {
            memcpy(out, v6.s6_addr, 16);
            *len = 16;
        }
        return true;
    }
    return false;
}

/* getNetIPs and getAlternateDNSStrs over []interface{} arguments. */
static int cert_req_lists(tpl_x *x, cert_req *r, const tv *ips, const tv *dns)
{
    size_t nips = ips->u.l ? ips->u.l->n : 0;
    r->ips = tpl_alloc(x, (nips + 1) * sizeof(*r->ips));
    r->iplen = tpl_alloc(x, (nips + 1) * sizeof(*r->iplen));
    for (size_t i = 0; i < nips; i++) {
        const tv *v = &ips->u.l->items[i];
        if (v->t != &T_STRING) {
            co_buf b = OUT_INIT;
            tpl_ignore(tpl_print_value(x, &b, v));
            tpl_fail(x, "error parsing ip: %s is not a string", co_buf_cstr(&b));
            co_buf_dispose(&b);
            return -1;
        }
        const char *s = sp_cstr(v->u.s);
        if (strlen(s) != v->u.s->len || !parse_ip(s, r->ips[i], &r->iplen[i])) {
            return tpl_fail(x, "error parsing ip: %s", s);
        }
    }
    r->nips = nips;
    size_t ndns = dns->u.l ? dns->u.l->n : 0;
    r->dns = tpl_alloc(x, (ndns + 1) * sizeof(const tv_str *));
    for (size_t i = 0; i < ndns; i++) {
        const tv *v = &dns->u.l->items[i];
        if (v->t != &T_STRING) {
            co_buf b = OUT_INIT;
            tpl_ignore(tpl_print_value(x, &b, v));
            tpl_fail(x, "error processing alternate dns name: %s is not a string", co_buf_cstr(&b));
            co_buf_dispose(&b);
            return -1;
        }
        r->dns[i] = v->u.s;
    }
    r->ndns = ndns;
    return 0;
}

/* time.Now().Add(24h * days) in whole seconds, with Go's int64 Duration wrap-around. */
static time_t not_after(const struct timespec *now, int64_t days)
{
    int64_t d = (int64_t)((uint64_t)days * 86400000000000ULL);
    int64_t sec = d / 1000000000LL;
    int64_t nsec = (int64_t)now->tv_nsec + d % 1000000000LL;
    if (nsec < 0) {
        sec--;
    } else if (nsec >= 1000000000LL) {
        sec++;
    }
    return (time_t)((int64_t)now->tv_sec + sec);
}

static int add_ext_conf(X509 *c, int nid, const char *value)
{
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, NULL, nid, value);
    int ok = e && X509_add_ext(c, e, -1) == 1;
    X509_EXTENSION_free(e);
    return ok ? 0 : -1;
}

static int add_key_id(X509 *c, int nid, const unsigned char *id, int len)
{
    int ok = 0;
    if (nid == NID_subject_key_identifier) {
        ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();
        ok = os && ASN1_OCTET_STRING_set(os, id, len) == 1 &&
             X509_add1_ext_i2d(c, nid, os, 0, 0) == 1;
        ASN1_OCTET_STRING_free(os);
    } else {
        AUTHORITY_KEYID *ak = AUTHORITY_KEYID_new();
        if (ak) {
            ak->keyid = ASN1_OCTET_STRING_new();
            ok = ak->keyid && ASN1_OCTET_STRING_set(ak->keyid, id, len) == 1 &&
                 X509_add1_ext_i2d(c, nid, ak, 0, 0) == 1;
        }
        AUTHORITY_KEYID_free(ak);
    }
    return ok ? 0 : -1;
}

static int add_sans(X509 *c, const cert_req *r, bool critical)
{
    GENERAL_NAMES *gens = GENERAL_NAMES_new();
    bool ok = gens != NULL;
    for (size_t i = 0; ok && i < r->ndns; i++) {
        GENERAL_NAME *g = GENERAL_NAME_new();
        ASN1_IA5STRING *s = ASN1_IA5STRING_new();
        ok = g && s && ASN1_STRING_set(s, r->dns[i]->s, (int)r->dns[i]->len) == 1;
        if (ok) {
            GENERAL_NAME_set0_value(g, GEN_DNS, s);
            s = NULL;
            ok = sk_GENERAL_NAME_push(gens, g) > 0;
            g = ok ? NULL : g;
        }
        ASN1_IA5STRING_free(s);
        GENERAL_NAME_free(g);
    }
    for (size_t i = 0; ok && i < r->nips; i++) {
        GENERAL_NAME *g = GENERAL_NAME_new();
        ASN1_OCTET_STRING *s = ASN1_OCTET_STRING_new();
        ok = g && s && ASN1_OCTET_STRING_set(s, r->ips[i], (int)r->iplen[i]) == 1;
        if (ok) {
            GENERAL_NAME_set0_value(g, GEN_IPADD, s);
            s = NULL;
            ok = sk_GENERAL_NAME_push(gens, g) > 0;
            g = ok ? NULL : g;
        }
        ASN1_OCTET_STRING_free(s);
        GENERAL_NAME_free(g);
    }
    ok = ok && X509_add1_ext_i2d(c, NID_subject_alt_name, gens, critical ? 1 : 0, 0) == 1;
    GENERAL_NAMES_free(gens);
    return ok ? 0 : -1;
}

/* The digest Go's signingParamsForPublicKey picks (NULL for Ed25519). */
static const EVP_MD *sign_md(EVP_PKEY *k)
{
    if (EVP_PKEY_is_a(k, "EC")) {
        int bits = EVP_PKEY_get_bits(k);
        return bits > 384 ? EVP_sha512() : bits > 256 ? EVP_sha384() : EVP_sha256();
    }
    if (EVP_PKEY_is_a(k, "ED25519")) {
        return NULL;
    }
    return EVP_sha256();
}

static bool names_equal(const X509_NAME *a, const X509_NAME *b)
{
    const unsigned char *da = NULL;
    const unsigned char *db = NULL;
    size_t la = 0;
    size_t lb = 0;
    return X509_NAME_get0_der(a, &da, &la) == 1 && X509_NAME_get0_der(b, &db, &lb) == 1 &&
           la == lb && memcmp(da, db, la) == 0;
}

/* getCertAndKey: builds, signs and encodes; @parent NULL for a self-signed certificate. */
static int
make_cert(tpl_x *x, tv *ret, const cert_req *r, EVP_PKEY *key, X509 *parent, EVP_PKEY *signer)
{
    if (EVP_PKEY_is_a(signer, "DSA")) {
        tpl_fail(x, "error creating certificate: x509: certificate private key does not "
                    "implement crypto.Signer");
        return cert_fail(x, ret);
    }
    if (EVP_PKEY_is_a(key, "DSA")) {
        tpl_fail(x, "error creating certificate: x509: unsupported public key type: "
                    "*dsa.PublicKey");
        return cert_fail(x, ret);
    }
    if (parent && EVP_PKEY_eq(X509_get0_pubkey(parent), signer) != 1) {
        ossl_clear();
        tpl_fail(x, "error creating certificate: x509: provided PrivateKey doesn't match "
                    "parent's PublicKey");
        return cert_fail(x, ret);
    }
    for (size_t i = 0; i < r->ndns; i++) {
        for (size_t j = 0; j < r->dns[i]->len; j++) {
            if ((unsigned char)r->dns[i]->s[j] > 0x7f) {
                co_buf b = OUT_INIT;
                tpl_ignore(tpl_quote(&b, r->dns[i]->s, r->dns[i]->len, false));
                tpl_fail(x,
                         "error creating certificate: x509: %s cannot be encoded as an "
                         "IA5String",
                         co_buf_cstr(&b));
                co_buf_dispose(&b);
                return cert_fail(x, ret);
            }
        }
    }

    X509 *c = X509_new();
    X509_NAME *subj = X509_NAME_new();
    BIGNUM *serial = BN_new();
    ASN1_INTEGER *aserial = NULL;
    ASN1_TIME *nb = NULL;
    ASN1_TIME *na = NULL;
    BIO *cbio = NULL;
    bool ok = c && subj && serial;
    if (ok && r->cn->len > 0) {
        int type = go_printable(r->cn->s, r->cn->len) ? V_ASN1_PRINTABLESTRING : V_ASN1_UTF8STRING;
        ok = X509_NAME_add_entry_by_NID(subj, NID_commonName, type, (const unsigned char *)r->cn->s,
                                        (int)r->cn->len, -1, 0) == 1;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    ok = ok && BN_rand(serial, 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1;
    ok = ok && (aserial = BN_to_ASN1_INTEGER(serial, NULL)) != NULL;
    ok = ok && X509_set_version(c, X509_VERSION_3) == 1 && X509_set_serialNumber(c, aserial) == 1;
    ok = ok && X509_set_subject_name(c, subj) == 1;
    ok = ok && X509_set_issuer_name(c, parent ? X509_get_subject_name(parent) : subj) == 1;
    ok = ok && (nb = ASN1_TIME_set(NULL, now.tv_sec)) != NULL;
    ok = ok && (na = ASN1_TIME_set(NULL, not_after(&now, r->days))) != NULL;
    ok = ok && X509_set1_notBefore(c, nb) == 1 && X509_set1_notAfter(c, na) == 1;
    ok = ok && X509_set_pubkey(c, key) == 1;
    ok = ok && add_ext_conf(c, NID_key_usage,
                            r->ca ? "critical,digitalSignature,keyEncipherment,keyCertSign"
                                  : "critical,digitalSignature,keyEncipherment") == 0;
    ok = ok && add_ext_conf(c, NID_ext_key_usage, "serverAuth,clientAuth") == 0;
    ok = ok && add_ext_conf(c, NID_basic_constraints,
                            r->ca ? "critical,CA:TRUE" : "critical,CA:FALSE") == 0;
    if (ok && r->ca) {
        const ASN1_BIT_STRING *pk = X509_get0_pubkey_bitstr(c);
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        ok = pk && EVP_Digest(pk->data, (size_t)pk->length, md, &mdlen, EVP_sha1(), NULL) == 1 &&
             add_key_id(c, NID_subject_key_identifier, md, (int)mdlen) == 0;
    }
    if (ok && parent && !names_equal(X509_get_subject_name(parent), subj)) {
        const ASN1_OCTET_STRING *pid = X509_get0_subject_key_id(parent);
        if (pid && pid->length > 0) {
            ok = add_key_id(c, NID_authority_key_identifier, pid->data, pid->length) == 0;
        }
    }
    if (ok && (r->ndns > 0 || r->nips > 0)) {
        ok = add_sans(c, r, r->cn->len == 0) == 0;
    }
    ok = ok && X509_sign(c, signer, sign_md(signer)) > 0;
    ok = ok && (cbio = BIO_new(BIO_s_mem())) != NULL && PEM_write_bio_X509(cbio, c) == 1;
    tv cert_pem = tv_invalid();
    if (ok) {
        cert_pem = bio_string(x, cbio);
        cbio = NULL;
    }
    BIO_free(cbio);
    ASN1_TIME_free(nb);
    ASN1_TIME_free(na);
    ASN1_INTEGER_free(aserial);
    BN_free(serial);
    X509_NAME_free(subj);
    X509_free(c);
    ossl_clear();
    if (!ok) {
        tpl_fail(x, "error creating certificate: the certificate could not be built");
        return cert_fail(x, ret);
    }
    tv key_out;
    if (key_pem(x, key, &key_out) < 0) {
        co_buf_reset(x->err);
        tpl_fail(x, "error pem-encoding key");
        return cert_fail(x, ret);
    }
    *ret = cert_value(x, cert_pem, key_out);
    return 0;
}

/* The signee key: parsed from PEM (the WithKey forms) or a new RSA 2048 key. */
static EVP_PKEY *signee_key(tpl_x *x, const tv *pem)
{
    if (!pem) {
        EVP_PKEY *k = gen_rsa(2048);
        if (!k) {
            tpl_fail(x, "error generating rsa key: key generation failed");
        }
        return k;
    }
    char err[512];
    EVP_PKEY *k = parse_key_pem(pem->u.s->s, pem->u.s->len, err, sizeof(err));
    if (!k) {
        tpl_fail(x, "parsing private key: %s", err);
    }
    return k;
}

static int gen_ca(tpl_x *x, tv *ret, tv *a, const tv *pem)
{
    EVP_PKEY *k = signee_key(x, pem);
    if (!k) {
        return cert_fail(x, ret);
    }
    cert_req r = {.cn = a[0].u.s, .days = a[1].u.i, .ca = true};
    int rc = make_cert(x, ret, &r, k, NULL, k);
    EVP_PKEY_free(k);
    return rc;
}

static int fn_gen_ca(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return gen_ca(x, ret, a, NULL);
}

static int fn_gen_ca_with_key(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return gen_ca(x, ret, a, &a[2]);
}

static int gen_self_signed(tpl_x *x, tv *ret, tv *a, const tv *pem)
{
    EVP_PKEY *k = signee_key(x, pem);
    if (!k) {
        return cert_fail(x, ret);
    }
    cert_req r = {.cn = a[0].u.s, .days = a[3].u.i};
    int rc = cert_req_lists(x, &r, &a[1], &a[2]);
    rc = rc < 0 ? cert_fail(x, ret) : make_cert(x, ret, &r, k, NULL, k);
    EVP_PKEY_free(k);
    return rc;
}

static int fn_gen_self_signed_cert(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return gen_self_signed(x, ret, a, NULL);
}

static int fn_gen_self_signed_cert_with_key(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return gen_self_signed(x, ret, a, &a[4]);
}

/* Parses the first PEM block of @s as a certificate (Go does not look at the block type). */
static X509 *parse_cert_pem(const char *s, size_t len, bool *no_pem)
{
    pem_block b;
    *no_pem = !pem_decode(s, len, &b);
    if (*no_pem) {
        return NULL;
    }
    const unsigned char *p = b.data;
    X509 *c = d2i_X509(NULL, &p, b.len);
    if (c && p != b.data + b.len) {
        X509_free(c);
        c = NULL;
    }
    pem_block_dispose(&b);
    ossl_clear();
    return c;
}

static int gen_signed(tpl_x *x, tv *ret, tv *a, const tv *pem)
{
    EVP_PKEY *k = signee_key(x, pem);
    if (!k) {
        return cert_fail(x, ret);
    }
    size_t clen;
    size_t klen;
    const char *cs = cert_field(&a[4], 0, &clen);
    const char *ks = cert_field(&a[4], 1, &klen);
    bool no_pem;
    X509 *ca = parse_cert_pem(cs, clen, &no_pem);
    EVP_PKEY *cakey = NULL;
    int rc = -1;
    if (!ca) {
        if (no_pem) {
            tpl_fail(x, "unable to decode certificate");
        } else {
            tpl_fail(x, "error parsing certificate: decodedSignerCert.Bytes: x509: malformed "
                        "certificate");
        }
    } else {
        char err[512];
        cakey = parse_key_pem(ks, klen, err, sizeof(err));
        if (!cakey) {
            tpl_fail(x, "error parsing private key: %s", err);
        } else {
            cert_req r = {.cn = a[0].u.s, .days = a[3].u.i};
            rc = cert_req_lists(x, &r, &a[1], &a[2]);
            rc = rc < 0 ? rc : make_cert(x, ret, &r, k, ca, cakey);
        }
    }
    EVP_PKEY_free(cakey);
    X509_free(ca);
    EVP_PKEY_free(k);
    return rc < 0 ? cert_fail(x, ret) : 0;
}

static int fn_gen_signed_cert(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return gen_signed(x, ret, a, NULL);
}

static int fn_gen_signed_cert_with_key(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return gen_signed(x, ret, a, &a[5]);
}

static int fn_build_custom_cert(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf cert = OUT_INIT;
    co_buf key = OUT_INIT;
    int rc = -1;
    if (co_base64_decode(&cert, a[0].u.s->s, a[0].u.s->len, CO_BASE64_STD) < 0) {
        tpl_fail(x, "unable to decode base64 certificate");
    } else if (co_base64_decode(&key, a[1].u.s->s, a[1].u.s->len, CO_BASE64_STD) < 0) {
        tpl_fail(x, "unable to decode base64 private key");
    } else {
        bool no_pem;
        X509 *c = parse_cert_pem(co_buf_cstr(&cert), cert.len, &no_pem);
        char err[512];
        EVP_PKEY *k = NULL;
        if (!c) {
            if (no_pem) {
                tpl_fail(x, "unable to decode certificate");
            } else {
                tpl_fail(x, "error parsing certificate: decodedCert.Bytes: x509: malformed "
                            "certificate");
            }
        } else if (!(k = parse_key_pem(co_buf_cstr(&key), key.len, err, sizeof(err)))) {
            tpl_fail(x, "error parsing private key: %s", err);
        } else {
            *ret = cert_value(x, tv_string(x, co_buf_cstr(&cert), cert.len),
                              tv_string(x, co_buf_cstr(&key), key.len));
            rc = 0;
        }
        EVP_PKEY_free(k);
        X509_free(c);
    }
    co_buf_dispose(&cert);
    co_buf_dispose(&key);
    return rc < 0 ? cert_fail(x, ret) : 0;
}

/* ---- derivePassword (Master Password) ----------------------------------------------------- */

static const char mp_seed[] = "com.lyndir.masterpassword";

static const struct {
    const char *type;
    const char *const *templates;
    size_t n;
} mp_types[] = {
#define MP(t, ...)                                                                                 \
    {                                                                                              \
        t, (const char *const[]){__VA_ARGS__},                                                     \
            sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)                      \
    }
    MP("maximum", "anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"),
    MP("long",
       "CvcvnoCvcvCvcv",
       "CvcvCvcvnoCvcv",
       "CvcvCvcvCvcvno",
       "CvccnoCvcvCvcv",
       "CvccCvcvnoCvcv",
       "CvccCvcvCvcvno",
       "CvcvnoCvccCvcv",
       "CvcvCvccnoCvcv",
       "CvcvCvccCvcvno",
       "CvcvnoCvcvCvcc",
       "CvcvCvcvnoCvcc",
       "CvcvCvcvCvccno",
       "CvccnoCvccCvcv",
       "CvccCvccnoCvcv",
       "CvccCvccCvcvno",
       "CvcvnoCvccCvcc",
       "CvcvCvccnoCvcc",
       "CvcvCvccCvccno",
       "CvccnoCvcvCvcc",
       "CvccCvcvnoCvcc",
       "CvccCvcvCvccno"),
    MP("medium", "CvcnoCvc", "CvcCvcno"),
    MP("short", "Cvcn"),
    MP("basic", "aaanaaan", "aannaaan", "aaannaaa"),
    MP("pin", "nnnn"),
#undef MP
};

static const char *mp_chars(char c)
{
    switch (c) {
    case 'V':
        return "AEIOU";
    case 'C':
        return "BCDFGHJKLMNPQRSTVWXYZ";
    case 'v':
        return "aeiou";
    case 'c':
        return "bcdfghjklmnpqrstvwxyz";
    case 'A':
        return "AEIOUBCDFGHJKLMNPQRSTVWXYZ";
    case 'a':
        return "AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz";
    case 'n':
        return "0123456789";
    case 'o':
        return "@&%?,=[]_:-+*$#!'^~;()/.";
    default:
        return "AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()";
    }
}

/* The seed, a big-endian length and the string (and a big-endian counter): the scrypt salt
 * and the HMAC message. */
static int mp_message(co_buf *b, const tv_str *s, const uint32_t *counter)
{
    unsigned char be[4] = {(unsigned char)(s->len >> 24), (unsigned char)(s->len >> 16),
                           (unsigned char)(s->len >> 8), (unsigned char)s->len};
    int rc = co_buf_put(b, mp_seed, sizeof(mp_seed) - 1);
    rc = rc < 0 ? rc : co_buf_put(b, be, 4);
    rc = rc < 0 ? rc : co_buf_put(b, s->s, s->len);
    if (counter) {
        unsigned char c[4] = {(unsigned char)(*counter >> 24), (unsigned char)(*counter >> 16),
                              (unsigned char)(*counter >> 8), (unsigned char)*counter};
        rc = rc < 0 ? rc : co_buf_put(b, c, 4);
    }
    return rc;
}

static int fn_derive_password(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    uint32_t counter = (uint32_t)a[0].u.u;
    const char *type = sp_cstr(a[1].u.s);
    size_t ti = 0;
    while (ti < CO_ARRAY_SIZE(mp_types) && strcmp(mp_types[ti].type, type) != 0) {
        ti++;
    }
    if (ti == CO_ARRAY_SIZE(mp_types) || strlen(type) != a[1].u.s->len) {
        co_buf b = OUT_INIT;
        int rc = co_buf_puts(&b, "cannot find password template ");
        rc = rc < 0 ? rc : co_buf_put(&b, a[1].u.s->s, a[1].u.s->len);
        return sp_ret_buf(x, ret, &b, rc);
    }
    const tv_str *password = a[2].u.s;
    co_buf salt = OUT_INIT;
    co_buf msg = OUT_INIT;
    int rc = mp_message(&salt, a[3].u.s, NULL);
    rc = rc < 0 ? rc : mp_message(&msg, a[4].u.s, &counter);
    unsigned char key[64];
    unsigned char seed[EVP_MAX_MD_SIZE];
    unsigned int seedlen = 0;
    bool ok = rc == 0 &&
              EVP_PBE_scrypt(password->s, password->len, (const unsigned char *)co_buf_cstr(&salt),
                             salt.len, 32768, 8, 2, 64ULL << 20, key, sizeof(key)) == 1;
    ok = ok && HMAC(EVP_sha256(), key, sizeof(key), (const unsigned char *)co_buf_cstr(&msg),
                    msg.len, seed, &seedlen) != NULL;
    OPENSSL_cleanse(key, sizeof(key));
    co_buf_dispose(&salt);
    co_buf_dispose(&msg);
    ossl_clear();
    if (!ok) {
        *ret = tv_cstring(x, "failed to derive password: scrypt failed");
        return 0;
    }
    const char *tmpl = mp_types[ti].templates[seed[0] % mp_types[ti].n];
    size_t len = strlen(tmpl);
    char *out = tpl_alloc(x, len + 1);
    for (size_t i = 0; i < len; i++) {
        const char *chars = mp_chars(tmpl[i]);
        out[i] = chars[seed[i + 1] % strlen(chars)];
    }
    OPENSSL_cleanse(seed, sizeof(seed));
    *ret = tv_string(x, out, len);
    return 0;
}

/* ---- AES ---------------------------------------------------------------------------------- */

static void aes_key(const tv_str *password, unsigned char key[32])
{
    memset(key, 0, 32);
    memcpy(key, password->s, password->len < 32 ? password->len : 32);
}

static bool aes_cbc(bool enc,
                    const unsigned char key[32],
                    const unsigned char iv[16],
                    const unsigned char *in,
                    size_t len,
                    unsigned char *out)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int l1 = 0;
    int l2 = 0;
    bool ok = c && len <= INT32_MAX &&
              EVP_CipherInit_ex(c, EVP_aes_256_cbc(), NULL, key, iv, enc ? 1 : 0) == 1 &&
              EVP_CIPHER_CTX_set_padding(c, 0) == 1 &&
              EVP_CipherUpdate(c, out, &l1, in, (int)len) == 1 &&
              EVP_CipherFinal_ex(c, out + l1, &l2) == 1 && (size_t)(l1 + l2) == len;
    EVP_CIPHER_CTX_free(c);
    ossl_clear();
    return ok;
}

static int fn_encrypt_aes(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *pt = a[1].u.s;
    if (pt->len == 0) {
        *ret = tv_string(x, "", 0);
        return 0;
    }
    if (pt->len > CO_MAX_TEMPLATE_OUTPUT / 2) {
        return tpl_fail_code(x, CO_ETOOBIG, "output too large (more than %zu bytes)",
                             (size_t)CO_MAX_TEMPLATE_OUTPUT);
    }
    size_t pad = 16 - pt->len % 16;
    size_t len = pt->len + pad;
    unsigned char *in = tpl_alloc(x, len);
    unsigned char *out = tpl_alloc(x, 16 + len);
    memcpy(in, pt->s, pt->len);
    memset(in + pt->len, (int)pad, pad);
    unsigned char key[32];
    aes_key(a[0].u.s, key);
    bool ok = RAND_bytes(out, 16) == 1 && aes_cbc(true, key, out, in, len, out + 16);
    OPENSSL_cleanse(key, sizeof(key));
    OPENSSL_cleanse(in, len);
    if (!ok) {
        return tpl_fail(x, "no random data available");
    }
    char *e = co_base64_encode(out, 16 + len, CO_BASE64_STD);
    *ret = tv_cstring(x, e);
    free(e);
    return 0;
}

static int fn_decrypt_aes(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *ct = a[1].u.s;
    if (ct->len == 0) {
        *ret = tv_string(x, "", 0);
        return 0;
    }
    co_buf raw = OUT_INIT;
    if (co_base64_decode(&raw, ct->s, ct->len, CO_BASE64_STD) < 0) {
        co_buf_dispose(&raw);
        return tpl_fail(x, "%s", co_error_last());
    }
    size_t len = raw.len;
    const unsigned char *p = (const unsigned char *)co_buf_cstr(&raw);
    int rc = 0;
    if (len < 16) {
        rc = sp_panic_slice(x, 0, 16, (int64_t)len, false, false);
    } else if ((len - 16) % 16 != 0) {
        rc = tpl_fail(x, "crypto/cipher: input not full blocks");
    } else if (len == 16) {
        rc = tpl_fail(x, "runtime error: index out of range [-1]");
    } else {
        unsigned char key[32];
        aes_key(a[0].u.s, key);
        unsigned char *out = tpl_alloc(x, len - 16);
        bool ok = aes_cbc(false, key, p, p + 16, len - 16, out);
        OPENSSL_cleanse(key, sizeof(key));
        if (!ok) {
            rc = tpl_fail(x, "AES decryption failed");
        } else {
            int64_t keep = (int64_t)(len - 16) - (int64_t)out[len - 17];
            if (keep < 0) {
                rc = sp_panic_slice(x, 0, keep, (int64_t)(len - 16), false, false);
            } else {
                *ret = tv_string(x, (const char *)out, (size_t)keep);
            }
            OPENSSL_cleanse(out, len - 16);
        }
    }
    co_buf_dispose(&raw);
    return rc;
}

/* ---- bcrypt ------------------------------------------------------------------------------- */

/* bcrypt.GenerateFromPassword(input, 10) as text; the failure message is the result. */
static int bcrypt_hash(tpl_x *x, co_buf *b, const tv_str *pw)
{
    char salt[CRYPT_GENSALT_OUTPUT_SIZE];
    struct crypt_data *cd = calloc(1, sizeof(*cd));
    const char *h = NULL;
    if (cd && crypt_gensalt_rn("$2a$", 10, NULL, 0, salt, sizeof(salt))) {
        h = crypt_rn(sp_cstr(pw), salt, cd, (int)sizeof(*cd));
    }
    int rc;
    if (h && h[0] == '$') {
        rc = co_buf_puts(b, h);
    } else {
        rc = co_buf_puts(b, "failed to encrypt string with bcrypt: bcrypt is not available");
    }
    if (cd) {
        OPENSSL_cleanse(cd, sizeof(*cd));
        free(cd);
    }
    (void)x;
    return rc;
}

static int fn_bcrypt(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf b = OUT_INIT;
    return sp_ret_buf(x, ret, &b, bcrypt_hash(x, &b, a[0].u.s));
}

static int fn_htpasswd(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *user = a[0].u.s;
    co_buf b = OUT_INIT;
    int rc;
    if (memchr(user->s, ':', user->len)) {
        rc = co_buf_puts(&b, "invalid username: ");
        rc = rc < 0 ? rc : co_buf_put(&b, user->s, user->len);
    } else {
        rc = co_buf_put(&b, user->s, user->len);
        rc = rc < 0 ? rc : co_buf_putc(&b, ':');
        rc = rc < 0 ? rc : bcrypt_hash(x, &b, a[1].u.s);
    }
    return sp_ret_buf(x, ret, &b, rc);
}

/* ---- table -------------------------------------------------------------------------------- */

static const tv_type *const P_USSSS[] = {&T_UINT32, &T_STRING, &T_STRING, &T_STRING, &T_STRING};
static const tv_type *const P_CERT[] = {&T_STRING, &T_LIST_ANY,    &T_LIST_ANY,
                                        &T_INT,    &T_CERTIFICATE, &T_STRING};
static const tv_type *const P_SELF[] = {&T_STRING, &T_LIST_ANY, &T_LIST_ANY, &T_INT, &T_STRING};

static const tpl_func funcs[] = {
    TPL_FUNC("bcrypt", fn_bcrypt, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("buildCustomCert", fn_build_custom_cert, SP_S, 2, false, true, &T_CERTIFICATE),
    TPL_FUNC("decryptAES", fn_decrypt_aes, SP_S, 2, false, true, &T_STRING),
    TPL_FUNC("derivePassword", fn_derive_password, P_USSSS, 5, false, false, &T_STRING),
    TPL_FUNC("encryptAES", fn_encrypt_aes, SP_S, 2, false, true, &T_STRING),
    TPL_FUNC("genCA", fn_gen_ca, SP_SIS, 2, false, true, &T_CERTIFICATE),
    TPL_FUNC("genCAWithKey", fn_gen_ca_with_key, SP_SIS, 3, false, true, &T_CERTIFICATE),
    TPL_FUNC("genPrivateKey", fn_gen_private_key, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("genSelfSignedCert", fn_gen_self_signed_cert, P_SELF, 4, false, true, &T_CERTIFICATE),
    TPL_FUNC("genSelfSignedCertWithKey",
             fn_gen_self_signed_cert_with_key,
             P_SELF,
             5,
             false,
             true,
             &T_CERTIFICATE),
    TPL_FUNC("genSignedCert", fn_gen_signed_cert, P_CERT, 5, false, true, &T_CERTIFICATE),
    TPL_FUNC("genSignedCertWithKey",
             fn_gen_signed_cert_with_key,
             P_CERT,
             6,
             false,
             true,
             &T_CERTIFICATE),
    TPL_FUNC("htpasswd", fn_htpasswd, SP_S, 2, false, false, &T_STRING),
};

void tpl_register_sprig_crypto(co_template_funcs *f)
{
    tpl_register_all(f, funcs, CO_ARRAY_SIZE(funcs));
}
