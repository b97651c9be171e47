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

#include <openssl/crypto.h>

#include "co/caps.h"
#include "co/error.h"
#include "sops_int.h"

#define AGE_INTRO      "age-encryption.org/v1\n"
#define ARMOR_BEGIN    "-----BEGIN AGE ENCRYPTED FILE-----"
#define ARMOR_END      "-----END AGE ENCRYPTED FILE-----"
#define AGE_COLUMNS    64
#define AGE_LINE_BYTES 48
#define AGE_CHUNK      65536
#define AGE_TAG        16
#define X25519_LABEL   "age-encryption.org/v1/X25519"

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

int co_sops__age_parse_identities(co_sops__age_id **ids, size_t *n, const char *text, size_t len)
{
    size_t lineno = 0, pos = 0;
    if (len > CO_MAX_AGE_PAYLOAD) {
        return co_error_set(CO_ETOOBIG, "age identity file exceeds %zu bytes", CO_MAX_AGE_PAYLOAD);
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
        *ids = co_xreallocarray(*ids, *n + 1, sizeof(**ids));
        (*ids)[(*n)++] = id;
        co_memzero(&id, sizeof(id));
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
        if (co_sops__b64_decode(&bytes, &blen, line, n, CO_SOPS__B64_PADDED | CO_SOPS__B64_STRICT) <
            0) {
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
                co_sops__b64_decode(&mac, &mac_len, line + 4, n - 4, CO_SOPS__B64_STRICT) < 0 ||
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
            if (bn > AGE_COLUMNS ||
                co_sops__b64_decode(&bytes, &blen, p + pos, bn, CO_SOPS__B64_STRICT) < 0) {
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
        co_sops__b64_decode(&share, &share_len, st->args[1], st->arg_lens[1], CO_SOPS__B64_STRICT) <
            0 ||
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
        for (size_t s = 0; s < h.n && !found; s++) {
            if (strcmp(h.stanzas[s].type, "X25519") != 0) {
                if (strcmp(h.stanzas[s].type, "mlkem768x25519") == 0 ||
                    strcmp(h.stanzas[s].type, "ssh-ed25519") == 0 ||
                    strcmp(h.stanzas[s].type, "ssh-rsa") == 0) {
                    unsupported = true;
                }
                continue;
            }
            error = unwrap_x25519(file_key, &ids[i], &h.stanzas[s]);
            if (error < 0) {
                goto done;
            }
            found = error == 0;
        }
    }
    if (!found) {
        error = co_error_set(unsupported ? CO_EUNSUPPORTED : CO_EAUTH,
                             unsupported ? "no X25519 identity matched; the file's other "
                                           "recipient types are not supported"
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
    error = decrypt_payload(out, file_key, bin + h.payload_off, bin_len - h.payload_off);
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
