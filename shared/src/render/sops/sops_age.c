/* SPDX-License-Identifier: Apache-2.0 */
/*
 * age v1 decryption (age-encryption.org/v1) for X25519 identities, the recipient type sops
 * writes for `age1...` keys: ASCII armor, the header with its recipient stanzas and HMAC, the
 * X25519 key wrap (HKDF-SHA256, ChaCha20-Poly1305) and the STREAM payload in 64 KiB chunks.
 * Parsing is as strict as the reference implementation (canonical base64, exact line
 * lengths), so the header MAC can be checked over the bytes as read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "co/util/digest.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "sops_int.h"

#define AGE_INTRO      "age-encryption.org/v1\n"
#define ARMOR_BEGIN    "-----BEGIN AGE ENCRYPTED FILE-----"
#define ARMOR_END      "-----END AGE ENCRYPTED FILE-----"
#define AGE_COLUMNS    64
#define AGE_LINE_BYTES 48
#define AGE_CHUNK      65536
#define AGE_TAG        16
#define X25519_LABEL   "age-encryption.org/v1/X25519"
#define ED25519_LABEL  "age-encryption.org/v1/ssh-ed25519"
#define RSA_LABEL      "age-encryption.org/v1/ssh-rsa"
#define OPENSSH_BEGIN  "-----BEGIN OPENSSH PRIVATE KEY-----"
#define OPENSSH_END    "-----END OPENSSH PRIVATE KEY-----"

/* ---- identities -------------------------------------------------------------------------- */

static int parse_identity_line(co_sops__age_id *id, const char *line, size_t len, size_t lineno)
{
    static const char pq[] = "AGE-SECRET-KEY-PQ-1";
    static const char plugin[] = "AGE-PLUGIN-";
    static const char native[] = "AGE-SECRET-KEY-1";
    char *hrp = NULL;
    unsigned char *data = NULL;
    size_t data_len = 0;
    int error;

    if (len >= sizeof(pq) - 1 && memcmp(line, pq, sizeof(pq) - 1) == 0) {
        return co_error_set(CO_EUNSUPPORTED,
                            "line %zu: post-quantum age identities are not supported", lineno);
    }
    if (len >= sizeof(plugin) - 1 && memcmp(line, plugin, sizeof(plugin) - 1) == 0) {
        return co_error_set(CO_EUNSUPPORTED, "line %zu: age plugin identities are not supported",
                            lineno);
    }
    if (len < sizeof(native) - 1 || memcmp(line, native, sizeof(native) - 1) != 0) {
        return co_error_set(CO_EINVALID, "line %zu: unknown identity type", lineno);
    }
    if ((error = co_sops__bech32_decode(&hrp, &data, &data_len, line, len)) < 0) {
        co_error_wrap("line %zu: malformed secret key", lineno);
        goto done;
    }
    if (strcmp(hrp, "AGE-SECRET-KEY-") != 0 || data_len != 32) {
        error = co_error_set(CO_EINVALID, "line %zu: malformed secret key", lineno);
        goto done;
    }
    memset(id, 0, sizeof(*id));
    id->kind = CO_SOPS__AGE_X25519;
    memcpy(id->secret, data, 32);
    if ((error = co_sops__x25519_base(id->public_key, id->secret)) < 0) {
        goto done;
    }
done:
    free(hrp);
    if (data) {
        co_free_secret(data, data_len);
    }
    return error;
}

/* ---- SSH keys ------------------------------------------------------------------------ */

/* Reads one SSH wire string (uint32 length, bytes). */
static bool wire_string(const unsigned char **p, size_t *len, const unsigned char **s, size_t *n)
{
    if (*len < 4) {
        return false;
    }
    uint32_t l = (uint32_t)(*p)[0] << 24 | (uint32_t)(*p)[1] << 16 | (uint32_t)(*p)[2] << 8 |
                 (uint32_t)(*p)[3];
    if (l > *len - 4) {
        return false;
    }
    *s = *p + 4;
    *n = l;
    *p += 4 + l;
    *len -= 4 + l;
    return true;
}

static bool wire_is(const unsigned char *s, size_t n, const char *want)
{
    return n == strlen(want) && memcmp(s, want, n) == 0;
}

/* The tag age puts in SSH stanzas: the first four bytes of SHA-256 of the wire public key. */
static void ssh_tag(unsigned char tag[4], const unsigned char *wire, size_t len)
{
    unsigned char h[32];
    unsigned int hl = 32;
    EVP_Digest(wire, len, h, &hl, EVP_sha256(), NULL);
    memcpy(tag, h, 4);
}

static int ed25519_identity(co_sops__age_id *id,
                            const unsigned char *wire,
                            size_t wire_len,
                            const unsigned char seed[32])
{
    unsigned char h[64];
    unsigned int hl = 64;
    memset(id, 0, sizeof(*id));
    id->kind = CO_SOPS__AGE_SSH_ED25519;
    if (EVP_Digest(seed, 32, h, &hl, EVP_sha512(), NULL) != 1) {
        return co_error_set(CO_ERROR, "SHA-512 failed");
    }
    memcpy(id->secret, h, 32);
    co_memzero(h, sizeof(h));
    ssh_tag(id->ssh_tag, wire, wire_len);
    int error = co_sops__x25519_base(id->public_key, id->secret);
    if (error == 0) {
        error = co_sops__hkdf_sha256(id->tweak, 32, NULL, 0, wire, wire_len, ED25519_LABEL);
    }
    return error;
}

/* An RSA key from its numbers (OpenSSH stores n, e, d, iqmp, p, q). */
static EVP_PKEY *rsa_from_numbers(const unsigned char *n,
                                  size_t nl,
                                  const unsigned char *e,
                                  size_t el,
                                  const unsigned char *d,
                                  size_t dl)
{
    BIGNUM *bn = BN_bin2bn(n, (int)nl, NULL), *be = BN_bin2bn(e, (int)el, NULL);
    BIGNUM *bd = BN_bin2bn(d, (int)dl, NULL);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    EVP_PKEY *pkey = NULL;
    if (bn && be && bd && bld && ctx && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_D, bd) &&
        (params = OSSL_PARAM_BLD_to_param(bld)) != NULL && EVP_PKEY_fromdata_init(ctx) == 1 &&
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_KEYPAIR, params) != 1) {
        pkey = NULL;
    }
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    EVP_PKEY_CTX_free(ctx);
    BN_clear_free(bd);
    BN_free(be);
    BN_free(bn);
    return pkey;
}

/* Appends an SSH mpint (big-endian, a leading zero when the top bit is set) to @p out. */
static void put_mpint(co_buf *out, const BIGNUM *bn)
{
    unsigned char buf[1024 + 1];
    int n = BN_num_bytes(bn);
    if (n < 0 || n > 1024) {
        return;
    }
    buf[0] = 0;
    BN_bn2bin(bn, buf + 1);
    const unsigned char *p = (n > 0 && (buf[1] & 0x80)) ? buf : buf + 1;
    uint32_t len = (uint32_t)(n + (p == buf));
    unsigned char be[4] = {(unsigned char)(len >> 24), (unsigned char)(len >> 16),
                           (unsigned char)(len >> 8), (unsigned char)len};
    if (co_buf_put(out, be, 4) < 0 || co_buf_put(out, p, len) < 0) {
        return;
    }
}

/* A PEM RSA key (PKCS#1 or PKCS#8, unencrypted), as older ssh-keygen writes them. */
static int parse_pem_rsa(co_sops__age_id *id, const char *text, size_t len)
{
    BIO *bio = BIO_new_mem_buf(text, (int)len);
    EVP_PKEY *pkey = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)"") : NULL;
    BIO_free(bio);
    BIGNUM *n = NULL, *e = NULL;
    co_buf wire = CO_BUF_INIT(8192);
    int error = CO_EINVALID;
    if (!pkey || !EVP_PKEY_is_a(pkey, "RSA")) {
        error = co_error_set(CO_EINVALID, "not an unencrypted RSA private key");
        goto done;
    }
    if (EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_N, &n) != 1 ||
        EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_E, &e) != 1) {
        error = co_error_set(CO_EINVALID, "cannot read the RSA public key");
        goto done;
    }
    static const unsigned char type[] = {0, 0, 0, 7, 's', 's', 'h', '-', 'r', 's', 'a'};
    if (co_buf_put(&wire, type, sizeof(type)) < 0) {
        goto done;
    }
    put_mpint(&wire, e);
    put_mpint(&wire, n);
    memset(id, 0, sizeof(*id));
    id->kind = CO_SOPS__AGE_SSH_RSA;
    ssh_tag(id->ssh_tag, (const unsigned char *)wire.ptr, wire.len);
    id->rsa = pkey;
    pkey = NULL;
    error = 0;
done:
    co_buf_dispose(&wire);
    BN_free(n);
    BN_free(e);
    EVP_PKEY_free(pkey);
    return error;
}

/* An OpenSSH private key file (openssh-key-v1, not passphrase-protected). */
static int parse_openssh(co_sops__age_id *id, const char *text, size_t len)
{
    const char *b = memmem(text, len, OPENSSH_BEGIN, sizeof(OPENSSH_BEGIN) - 1);
    const char *e =
        b ? memmem(b, len - (size_t)(b - text), OPENSSH_END, sizeof(OPENSSH_END) - 1) : NULL;
    unsigned char *blob = NULL;
    size_t blob_len = 0;
    int error = CO_EINVALID;
    if (!e) {
        return co_error_set(CO_EINVALID, "malformed OpenSSH private key armor");
    }
    b += sizeof(OPENSSH_BEGIN) - 1;
    if (co_base64_decode_alloc(&blob, &blob_len, b, (size_t)(e - b), CO_BASE64_STD) < 0) {
        return co_error_set(CO_EINVALID, "malformed OpenSSH private key encoding");
    }
    static const char magic[] = "openssh-key-v1";
    const unsigned char *p = blob, *cipher, *kdf, *kdfopt, *pub, *priv, *type, *x;
    size_t l = blob_len, cl, kl, kol, pl, prl, tl, xl;
    if (l < sizeof(magic) || memcmp(p, magic, sizeof(magic)) != 0) {
        error = co_error_set(CO_EINVALID, "not an OpenSSH private key");
        goto done;
    }
    p += sizeof(magic);
    l -= sizeof(magic);
    if (!wire_string(&p, &l, &cipher, &cl) || !wire_string(&p, &l, &kdf, &kl) ||
        !wire_string(&p, &l, &kdfopt, &kol) || l < 4) {
        error = co_error_set(CO_EINVALID, "malformed OpenSSH private key");
        goto done;
    }
    if (!wire_is(cipher, cl, "none") || !wire_is(kdf, kl, "none")) {
        error = co_error_set(CO_EUNSUPPORTED, "passphrase-protected SSH keys are not supported");
        goto done;
    }
    p += 4, l -= 4; /* number of keys: the first one is used */
    if (!wire_string(&p, &l, &pub, &pl) || !wire_string(&p, &l, &priv, &prl) || prl < 8 ||
        memcmp(priv, priv + 4, 4) != 0) {
        error = co_error_set(CO_EINVALID, "malformed OpenSSH private key section");
        goto done;
    }
    p = priv + 8;
    l = prl - 8;
    if (!wire_string(&p, &l, &type, &tl)) {
        error = co_error_set(CO_EINVALID, "malformed OpenSSH private key section");
        goto done;
    }
    if (wire_is(type, tl, "ssh-ed25519")) {
        const unsigned char *pk, *sk;
        size_t pkl, skl;
        if (!wire_string(&p, &l, &pk, &pkl) || !wire_string(&p, &l, &sk, &skl) || pkl != 32 ||
            skl != 64) {
            error = co_error_set(CO_EINVALID, "malformed ssh-ed25519 private key");
            goto done;
        }
        error = ed25519_identity(id, pub, pl, sk);
    } else if (wire_is(type, tl, "ssh-rsa")) {
        const unsigned char *n, *ee, *d;
        size_t nl, el, dl;
        if (!wire_string(&p, &l, &n, &nl) || !wire_string(&p, &l, &ee, &el) ||
            !wire_string(&p, &l, &d, &dl) || nl > 2048 || el > 2048 || dl > 2048) {
            error = co_error_set(CO_EINVALID, "malformed ssh-rsa private key");
            goto done;
        }
        memset(id, 0, sizeof(*id));
        id->kind = CO_SOPS__AGE_SSH_RSA;
        ssh_tag(id->ssh_tag, pub, pl);
        id->rsa = rsa_from_numbers(n, nl, ee, el, d, dl);
        error = id->rsa ? 0 : co_error_set(CO_EINVALID, "invalid ssh-rsa private key");
    } else {
        (void)x, (void)xl;
        error = co_error_set(CO_EUNSUPPORTED, "SSH key type %.*s is not supported",
                             (int)(tl > 40 ? 40 : tl), (const char *)type);
    }
done:
    co_free_secret(blob, blob_len);
    return error;
}

void co_sops__age_ids_free(co_sops__age_id *ids, size_t n)
{
    if (!ids) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        EVP_PKEY_free(ids[i].rsa);
    }
    co_free_secret(ids, n * sizeof(*ids));
}

static void add_id(co_sops__age_id **ids, size_t *n, co_sops__age_id *id)
{
    *ids = co_xreallocarray(*ids, *n + 1, sizeof(**ids));
    (*ids)[(*n)++] = *id;
    co_memzero(id, sizeof(*id));
}

int co_sops__age_parse_identities(co_sops__age_id **ids, size_t *n, const char *text, size_t len)
{
    size_t lineno = 0, pos = 0;
    if (len > CO_MAX_AGE_PAYLOAD) {
        return co_error_set(CO_ETOOBIG, "age identity file exceeds %zu bytes", CO_MAX_AGE_PAYLOAD);
    }
    if (memmem(text, len, OPENSSH_BEGIN, sizeof(OPENSSH_BEGIN) - 1) ||
        memmem(text, len, "-----BEGIN RSA PRIVATE KEY-----", 31) ||
        memmem(text, len, "-----BEGIN PRIVATE KEY-----", 27)) {
        co_sops__age_id id;
        int error = memmem(text, len, OPENSSH_BEGIN, sizeof(OPENSSH_BEGIN) - 1)
                        ? parse_openssh(&id, text, len)
                        : parse_pem_rsa(&id, text, len);
        if (error < 0) {
            return error;
        }
        add_id(ids, n, &id);
        return 0;
    }
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        const char *line = text + pos;
        size_t line_len = end - pos;
        if (line_len > 0 && line[line_len - 1] == '\r') {
            line_len--;
        }
        lineno++;
        pos = nl ? end + 1 : len;
        if (line_len == 0 || line[0] == '#') {
            continue;
        }
        co_sops__age_id id;
        int error = parse_identity_line(&id, line, line_len, lineno);
        if (error < 0) {
            co_memzero(&id, sizeof(id));
            return error;
        }
        add_id(ids, n, &id);
    }
    return 0;
}

/* ---- armor ------------------------------------------------------------------------------- */

typedef struct lines {
    const char *p;
    size_t len, pos;
} lines;

/* Next line without its "\n" (and a trailing "\r"); false at the end of input. */
static bool next_line(lines *l, const char **line, size_t *len)
{
    if (l->pos >= l->len) {
        return false;
    }
    const char *start = l->p + l->pos;
    const char *nl = memchr(start, '\n', l->len - l->pos);
    size_t n = nl ? (size_t)(nl - start) : l->len - l->pos;
    l->pos += n + (nl ? 1 : 0);
    if (n > 0 && start[n - 1] == '\r') {
        n--;
    }
    *line = start;
    *len = n;
    return true;
}

static bool is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n' && s[i] != '\v' &&
            s[i] != '\f') {
            return false;
        }
    }
    return true;
}

static bool has_armor(const char *in, size_t len)
{
    size_t i = 0;
    while (i < len && is_blank(in + i, 1)) {
        i++;
    }
    return len - i >= sizeof(ARMOR_BEGIN) - 1 &&
           memcmp(in + i, ARMOR_BEGIN, sizeof(ARMOR_BEGIN) - 1) == 0;
}

static int dearmor(co_buf *out, const char *in, size_t len)
{
    lines l = {in, len, 0};
    const char *line;
    size_t n, skipped = 0;
    int error;
    for (;;) {
        if (!next_line(&l, &line, &n)) {
            return co_error_set(CO_EINVALID, "invalid armor: unexpected end of input");
        }
        if (is_blank(line, n)) {
            skipped += n + 1;
            if (skipped > 1024) {
                return co_error_set(CO_EINVALID, "invalid armor: too much leading whitespace");
            }
            continue;
        }
        if (n != sizeof(ARMOR_BEGIN) - 1 || memcmp(line, ARMOR_BEGIN, n) != 0) {
            return co_error_set(CO_EINVALID, "invalid armor: invalid first line");
        }
        break;
    }
    for (;;) {
        if (!next_line(&l, &line, &n)) {
            return co_error_set(CO_EINVALID, "invalid armor: unexpected end of input");
        }
        if (n == sizeof(ARMOR_END) - 1 && memcmp(line, ARMOR_END, n) == 0) {
            break;
        }
        if (n == 0) {
            return co_error_set(CO_EINVALID, "invalid armor: empty line in armored data");
        }
        if (n > AGE_COLUMNS) {
            return co_error_set(CO_EINVALID, "invalid armor: column limit exceeded");
        }
        unsigned char *bytes = NULL;
        size_t blen = 0;
        if (co_base64_decode_alloc(&bytes, &blen, line, n,
                                   CO_BASE64_STRICT | CO_BASE64_NO_NEWLINES) < 0) {
            return co_error_set(CO_EINVALID, "invalid armor: malformed base64 line");
        }
        error = co_buf_put(out, bytes, blen);
        free(bytes);
        if (error < 0) {
            return co_error_set(error, "armored age file exceeds the size limit");
        }
        if (blen < AGE_LINE_BYTES) {
            if (!next_line(&l, &line, &n) || n != sizeof(ARMOR_END) - 1 ||
                memcmp(line, ARMOR_END, n) != 0) {
                return co_error_set(CO_EINVALID, "invalid armor: invalid closing line");
            }
            break;
        }
    }
    size_t rest = len - l.pos;
    if (!is_blank(in + l.pos, rest)) {
        return co_error_set(CO_EINVALID, "invalid armor: trailing data after armored file");
    }
    if (rest >= 1024) {
        return co_error_set(CO_EINVALID, "invalid armor: too much trailing whitespace");
    }
    return 0;
}

/* ---- header ------------------------------------------------------------------------------ */

#define MAX_ARGS 8

typedef struct stanza {
    char type[64];
    const char *args[MAX_ARGS];
    size_t arg_lens[MAX_ARGS];
    size_t nargs;
    unsigned char *body;
    size_t body_len;
} stanza;

typedef struct header {
    stanza *stanzas;
    size_t n;
    size_t mac_input_len; /* bytes from the start through "---" */
    unsigned char mac[32];
    size_t payload_off;
} header;

static void header_dispose(header *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free(h->stanzas[i].body);
    }
    free(h->stanzas);
    h->stanzas = NULL;
    h->n = 0;
}

static bool valid_arg(const char *s, size_t len)
{
    if (len == 0) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)s[i] < 33 || (unsigned char)s[i] > 126) {
            return false;
        }
    }
    return true;
}

/* Splits "prefix arg arg..." on single spaces; every argument must be non-empty. */
static int split_line(stanza *st, const char *line, size_t len, size_t skip)
{
    size_t pos = skip;
    st->nargs = 0;
    while (pos <= len) {
        const char *sp = memchr(line + pos, ' ', len - pos);
        size_t end = sp ? (size_t)(sp - line) : len;
        if (st->nargs == MAX_ARGS || !valid_arg(line + pos, end - pos)) {
            return CO_EINVALID;
        }
        st->args[st->nargs] = line + pos;
        st->arg_lens[st->nargs++] = end - pos;
        pos = end + 1;
        if (!sp) {
            break;
        }
    }
    return st->nargs > 0 ? 0 : CO_EINVALID;
}

static int parse_header(header *h, const unsigned char *in, size_t len)
{
    const char *p = (const char *)in;
    size_t pos = sizeof(AGE_INTRO) - 1;
    if (len < pos || memcmp(p, AGE_INTRO, pos) != 0) {
        return co_error_set(CO_EINVALID, "not an age file: unexpected intro line");
    }
    for (;;) {
        const char *nl = memchr(p + pos, '\n', len - pos);
        if (!nl) {
            return co_error_set(CO_EINVALID, "age header: unexpected end of header");
        }
        const char *line = p + pos;
        size_t n = (size_t)(nl - line);
        if (n >= 3 && memcmp(line, "---", 3) == 0) {
            unsigned char *mac = NULL;
            size_t mac_len = 0;
            if (n < 4 || line[3] != ' ' ||
                co_base64_decode_alloc(&mac, &mac_len, line + 4, n - 4,
                                       CO_BASE64_RAW | CO_BASE64_STRICT | CO_BASE64_NO_NEWLINES) <
                    0 ||
                mac_len != 32) {
                free(mac);
                return co_error_set(CO_EINVALID, "age header: malformed closing line");
            }
            memcpy(h->mac, mac, 32);
            free(mac);
            h->mac_input_len = pos + 3;
            h->payload_off = pos + n + 1;
            return 0;
        }
        if (n < 2 || memcmp(line, "->", 2) != 0 || (n > 2 && line[2] != ' ')) {
            return co_error_set(CO_EINVALID, "age header: malformed stanza opening line");
        }
        h->stanzas = co_xreallocarray(h->stanzas, h->n + 1, sizeof(*h->stanzas));
        stanza *st = &h->stanzas[h->n++];
        memset(st, 0, sizeof(*st));
        if (n < 4 || split_line(st, line, n, 3) < 0 || st->arg_lens[0] >= sizeof(st->type)) {
            return co_error_set(CO_EINVALID, "age header: malformed stanza");
        }
        memcpy(st->type, st->args[0], st->arg_lens[0]);
        st->type[st->arg_lens[0]] = '\0';
        pos += n + 1;
        /* Body: full 64-column lines, ended by a shorter (possibly empty) line. */
        for (;;) {
            const char *bnl = memchr(p + pos, '\n', len - pos);
            if (!bnl) {
                return co_error_set(CO_EINVALID, "age header: unexpected end of stanza body");
            }
            size_t bn = (size_t)(bnl - (p + pos));
            unsigned char *bytes = NULL;
            size_t blen = 0;
            if (bn > AGE_COLUMNS || co_base64_decode_alloc(&bytes, &blen, p + pos, bn,
                                                           CO_BASE64_RAW | CO_BASE64_STRICT |
                                                               CO_BASE64_NO_NEWLINES) < 0) {
                free(bytes);
                return co_error_set(CO_EINVALID, "age header: malformed stanza body line");
            }
            st->body = co_xrealloc(st->body, st->body_len + blen + 1);
            memcpy(st->body + st->body_len, bytes, blen);
            st->body_len += blen;
            free(bytes);
            pos += bn + 1;
            if (blen < AGE_LINE_BYTES) {
                break;
            }
        }
    }
}

/* Tries one X25519 identity on one stanza: 1 = not for this identity, 0 = unwrapped. */
static int unwrap_x25519(unsigned char file_key[16], const co_sops__age_id *id, const stanza *st)
{
    unsigned char *share = NULL, shared[32], salt[64], wrap[32];
    size_t share_len = 0;
    int error;
    if (st->nargs != 2 ||
        co_base64_decode_alloc(&share, &share_len, st->args[1], st->arg_lens[1],
                               CO_BASE64_RAW | CO_BASE64_STRICT | CO_BASE64_NO_NEWLINES) < 0 ||
        share_len != 32) {
        free(share);
        return co_error_set(CO_EINVALID, "invalid X25519 recipient stanza");
    }
    if (st->body_len != 32) {
        free(share);
        return co_error_set(CO_EINVALID,
                            "invalid X25519 recipient stanza: incorrect file key size");
    }
    if (co_sops__x25519(shared, id->secret, share) < 0) {
        free(share);
        return co_error_set(CO_EINVALID, "invalid X25519 recipient share");
    }
    memcpy(salt, share, 32);
    memcpy(salt + 32, id->public_key, 32);
    free(share);
    static const unsigned char zero_nonce[12] = {0};
    if ((error = co_sops__hkdf_sha256(wrap, 32, shared, 32, salt, 64, X25519_LABEL)) < 0) {
        goto done;
    }
    error = co_sops__chacha_open(file_key, wrap, zero_nonce, st->body, st->body_len) < 0 ? 1 : 0;
done:
    co_memzero(shared, sizeof(shared));
    co_memzero(wrap, sizeof(wrap));
    return error;
}

/* Tries an ssh-ed25519 identity: 1 = not for it, 0 = unwrapped. */
static int
unwrap_ssh_ed25519(unsigned char file_key[16], const co_sops__age_id *id, const stanza *st)
{
    unsigned char *tag = NULL, *share = NULL, shared[32], tweaked[32], salt[64], wrap[32];
    size_t tag_len = 0, share_len = 0;
    int error = 1;
    if (st->nargs != 3 ||
        co_base64_decode_alloc(&tag, &tag_len, st->args[1], st->arg_lens[1],
                               CO_BASE64_RAW | CO_BASE64_STRICT | CO_BASE64_NO_NEWLINES) < 0 ||
        co_base64_decode_alloc(&share, &share_len, st->args[2], st->arg_lens[2],
                               CO_BASE64_RAW | CO_BASE64_STRICT | CO_BASE64_NO_NEWLINES) < 0 ||
        tag_len != 4 || share_len != 32) {
        error = co_error_set(CO_EINVALID, "invalid ssh-ed25519 recipient stanza");
        goto done;
    }
    if (memcmp(tag, id->ssh_tag, 4) != 0) {
        goto done;
    }
    if (st->body_len != 32) {
        error = co_error_set(CO_EINVALID, "invalid ssh-ed25519 recipient stanza: incorrect file "
                                          "key size");
        goto done;
    }
    static const unsigned char zero_nonce[12] = {0};
    if (co_sops__x25519(shared, id->secret, share) < 0 ||
        co_sops__x25519(tweaked, id->tweak, shared) < 0) {
        error = co_error_set(CO_EINVALID, "invalid ssh-ed25519 recipient share");
        goto done;
    }
    memcpy(salt, share, 32);
    memcpy(salt + 32, id->public_key, 32);
    if ((error = co_sops__hkdf_sha256(wrap, 32, tweaked, 32, salt, 64, ED25519_LABEL)) < 0) {
        goto done;
    }
    if (co_sops__chacha_open(file_key, wrap, zero_nonce, st->body, st->body_len) < 0) {
        error = co_error_set(CO_EAUTH, "failed to decrypt the file key with the ssh-ed25519 key");
        goto done;
    }
    error = 0;
done:
    free(tag);
    free(share);
    co_memzero(shared, sizeof(shared));
    co_memzero(tweaked, sizeof(tweaked));
    co_memzero(wrap, sizeof(wrap));
    return error;
}

/* Tries an ssh-rsa identity (RSA-OAEP with SHA-256 and age's label). */
static int unwrap_ssh_rsa(unsigned char file_key[16], const co_sops__age_id *id, const stanza *st)
{
    unsigned char *tag = NULL, out[1024];
    size_t tag_len = 0, out_len = sizeof(out);
    EVP_PKEY_CTX *ctx = NULL;
    char *label = NULL;
    int error = 1;
    if (st->nargs != 2 ||
        co_base64_decode_alloc(&tag, &tag_len, st->args[1], st->arg_lens[1],
                               CO_BASE64_RAW | CO_BASE64_STRICT | CO_BASE64_NO_NEWLINES) < 0 ||
        tag_len != 4) {
        error = co_error_set(CO_EINVALID, "invalid ssh-rsa recipient stanza");
        goto done;
    }
    if (memcmp(tag, id->ssh_tag, 4) != 0) {
        goto done;
    }
    label = OPENSSL_strdup(RSA_LABEL);
    ctx = EVP_PKEY_CTX_new(id->rsa, NULL);
    if (!ctx || !label || EVP_PKEY_decrypt_init(ctx) != 1 ||
        EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) != 1 ||
        EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_sha256()) != 1 ||
        EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha256()) != 1 ||
        EVP_PKEY_CTX_set0_rsa_oaep_label(ctx, label, (int)strlen(RSA_LABEL)) != 1) {
        error = co_error_set(CO_ERROR, "cannot set up RSA-OAEP");
        goto done;
    }
    label = NULL; /* owned by the context now */
    if (EVP_PKEY_decrypt(ctx, out, &out_len, st->body, st->body_len) != 1 || out_len != 16) {
        error = co_error_set(CO_EAUTH, "failed to decrypt the file key with the ssh-rsa key");
        goto done;
    }
    memcpy(file_key, out, 16);
    error = 0;
done:
    co_memzero(out, sizeof(out));
    OPENSSL_free(label);
    EVP_PKEY_CTX_free(ctx);
    free(tag);
    return error;
}

/* ---- payload ----------------------------------------------------------------------------- */

static int
decrypt_payload(co_buf *out, const unsigned char file_key[16], const unsigned char *p, size_t len)
{
    unsigned char key[32], nonce[12] = {0};
    unsigned char *chunk = NULL;
    int error;
    if (len < 16) {
        return co_error_set(CO_EINVALID, "age payload: missing nonce");
    }
    if ((error = co_sops__hkdf_sha256(key, 32, file_key, 16, p, 16, "payload")) < 0) {
        return error;
    }
    p += 16;
    len -= 16;
    chunk = co_xmalloc(AGE_CHUNK);
    uint64_t counter = 0;
    for (;;) {
        if (len == 0) {
            error = co_error_set(CO_EINVALID, "age payload: unexpected end of file");
            goto done;
        }
        size_t n = len < AGE_CHUNK + AGE_TAG ? len : AGE_CHUNK + AGE_TAG;
        bool last = n < AGE_CHUNK + AGE_TAG;
        if (n < AGE_TAG || (last && n == AGE_TAG && counter > 0)) {
            error = co_error_set(CO_EAUTH, "age payload: truncated or empty last chunk");
            goto done;
        }
        for (int i = 0; i < 8; i++) {
            nonce[3 + i] = (unsigned char)(counter >> (8 * (7 - i)));
        }
        nonce[11] = last ? 1 : 0;
        if (co_sops__chacha_open(chunk, key, nonce, p, n) < 0) {
            if (last) {
                error = co_error_set(CO_EAUTH, "age payload: chunk authentication failed "
                                               "(corrupted or tampered file)");
                goto done;
            }
            /* A full chunk at the very end is the last one. */
            nonce[11] = 1;
            if (n != len || co_sops__chacha_open(chunk, key, nonce, p, n) < 0) {
                error = co_error_set(CO_EAUTH, "age payload: chunk authentication failed "
                                               "(corrupted or tampered file)");
                goto done;
            }
            last = true;
        }
        if ((error = co_buf_put(out, chunk, n - AGE_TAG)) < 0) {
            co_error_set(error, "age payload exceeds the size limit");
            goto done;
        }
        p += n;
        len -= n;
        counter++;
        if (last) {
            break;
        }
    }
    if (len != 0) {
        error = co_error_set(CO_EINVALID, "age payload: trailing data after end of file");
        goto done;
    }
    error = 0;
done:
    co_memzero(key, sizeof(key));
    co_free_secret(chunk, AGE_CHUNK);
    return error;
}

int co_sops__age_decrypt(co_buf *out,
                         const co_sops__age_id *ids,
                         size_t n,
                         const void *in,
                         size_t len)
{
    co_buf raw = CO_BUF_INIT(CO_MAX_AGE_PAYLOAD);
    const unsigned char *bin = in;
    size_t bin_len = len;
    header h = {0};
    unsigned char file_key[16], hmac_key[32], mac[32];
    bool found = false, unsupported = false;
    int error;

    if (len > CO_MAX_AGE_PAYLOAD * 2) {
        return co_error_set(CO_ETOOBIG, "age file exceeds %zu bytes", CO_MAX_AGE_PAYLOAD);
    }
    if (has_armor(in, len)) {
        if ((error = dearmor(&raw, in, len)) < 0) {
            goto done;
        }
        bin = (const unsigned char *)raw.ptr;
        bin_len = raw.len;
    }
    if ((error = parse_header(&h, bin, bin_len)) < 0) {
        goto done;
    }
    if (n == 0) {
        error = co_error_set(CO_EAUTH, "no age identities available");
        goto done;
    }
    for (size_t i = 0; i < n && !found; i++) {
        for (size_t k = 0; k < h.n && !found; k++) {
            const stanza *st = &h.stanzas[k];
            if (strcmp(st->type, "X25519") == 0 && ids[i].kind == CO_SOPS__AGE_X25519) {
                error = unwrap_x25519(file_key, &ids[i], st);
            } else if (strcmp(st->type, "ssh-ed25519") == 0 &&
                       ids[i].kind == CO_SOPS__AGE_SSH_ED25519) {
                error = unwrap_ssh_ed25519(file_key, &ids[i], st);
            } else if (strcmp(st->type, "ssh-rsa") == 0 && ids[i].kind == CO_SOPS__AGE_SSH_RSA) {
                error = unwrap_ssh_rsa(file_key, &ids[i], st);
            } else {
                unsupported |= strcmp(st->type, "mlkem768x25519") == 0 ||
                               strcmp(st->type, "scrypt") == 0 ||
                               strncmp(st->type, "age-plugin-", 11) == 0;
                continue;
            }
            if (error < 0) {
                goto done;
            }
            found = error == 0;
        }
    }
    if (!found) {
        error = co_error_set(unsupported ? CO_EUNSUPPORTED : CO_EAUTH,
                             unsupported ? "no identity matched; the file's other recipient "
                                           "types (post-quantum, scrypt, plugins) are not "
                                           "supported"
                                         : "no identity matched any of the file's recipients");
        goto done;
    }
    if ((error = co_sops__hkdf_sha256(hmac_key, 32, file_key, 16, NULL, 0, "header")) < 0 ||
        (error = co_sops__hmac_sha256(mac, hmac_key, bin, h.mac_input_len)) < 0) {
        goto done;
    }
    if (CRYPTO_memcmp(mac, h.mac, 32) != 0) {
        error = co_error_set(CO_EAUTH, "age header MAC mismatch (tampered file)");
        goto done;
    }
    /* Nothing reaches the caller unless every chunk authenticates. */
    co_buf plain = CO_BUF_INIT(out->max > out->len ? out->max - out->len : 0);
    error = decrypt_payload(&plain, file_key, bin + h.payload_off, bin_len - h.payload_off);
    if (error == 0 && (error = co_buf_put(out, plain.ptr ? plain.ptr : "", plain.len)) < 0) {
        co_error_set(error, "age payload exceeds the size limit");
    }
    if (plain.ptr) {
        co_memzero(plain.ptr, plain.len);
    }
    co_buf_dispose(&plain);
done:
    co_memzero(file_key, sizeof(file_key));
    co_memzero(hmac_key, sizeof(hmac_key));
    if (raw.ptr) {
        co_memzero(raw.ptr, raw.len);
    }
    co_buf_dispose(&raw);
    header_dispose(&h);
    return error;
}
