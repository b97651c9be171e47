/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SHA-256 with nettle (the hash library under GnuTLS, so the webhook needs no OpenSSL), and the
 * hex, base32 and base64 encodings written to match Go's encoders byte for byte (the owner-id label
 * and the digests the Go operator stores must come out identical). The base64 decoder follows Go's
 * lenient-but-exact rules: CR and LF are skipped, everything else must belong to the alphabet.
 */
#include "co/util/digest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

#include "co/util/error.h"

struct co_sha256_ctx {
    struct sha256_ctx sha;
};

static const char hex_digits[] = "0123456789abcdef";

static void hex_into(char *out, const unsigned char *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = hex_digits[data[i] >> 4];
        out[2 * i + 1] = hex_digits[data[i] & 0xf];
    }
    out[2 * len] = '\0';
}

void co_sha256(unsigned char out[CO_SHA256_LEN], const void *data, size_t len)
{
    struct sha256_ctx sha;
    sha256_init(&sha);
    sha256_update(&sha, len, len ? data : "");
    sha256_digest(&sha, CO_SHA256_LEN, out);
}

void co_sha256_hex(char out[CO_SHA256_HEX_LEN + 1], const void *data, size_t len)
{
    unsigned char md[CO_SHA256_LEN];
    co_sha256(md, data, len);
    hex_into(out, md, sizeof(md));
}

void co_sha256_hex_buf(char out[CO_SHA256_HEX_LEN + 1], const co_buf *buf)
{
    co_sha256_hex(out, co_buf_cstr(buf), buf->len);
}

co_sha256_ctx *co_sha256_new(void)
{
    co_sha256_ctx *ctx = co_xcalloc(1, sizeof(*ctx));
    sha256_init(&ctx->sha);
    return ctx;
}

void co_sha256_update(co_sha256_ctx *ctx, const void *data, size_t len)
{
    if (len) {
        sha256_update(&ctx->sha, len, data);
    }
}

void co_sha256_final_hex(co_sha256_ctx *ctx, char out[CO_SHA256_HEX_LEN + 1])
{
    unsigned char md[CO_SHA256_LEN];
    /* sha256_digest() also starts the context afresh, as the header promises */
    sha256_digest(&ctx->sha, CO_SHA256_LEN, md);
    hex_into(out, md, CO_SHA256_LEN);
}

void co_sha256_free(co_sha256_ctx *ctx)
{
    free(ctx);
}

char *co_hex_encode(const void *data, size_t len)
{
    CO_ASSERT(len < SIZE_MAX / 2);
    char *out = co_xmalloc(2 * len + 1);
    hex_into(out, data, len);
    return out;
}

char *co_base32_lower(const void *data, size_t len)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
    const unsigned char *in = data;
    CO_ASSERT(len < SIZE_MAX / 2);
    char *out = co_xmalloc((len * 8 + 4) / 5 + 1);
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        acc = (acc << 8) | in[i];
        bits += 8;
        while (bits >= 5) {
            out[o++] = alphabet[(acc >> (bits - 5)) & 31];
            bits -= 5;
        }
    }
    if (bits > 0) {
        out[o++] = alphabet[(acc << (5 - bits)) & 31];
    }
    out[o] = '\0';
    return out;
}

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Writes the encoding of @p len bytes to @p out, which holds (len + 2) / 3 * 4 + 1 bytes. */
static size_t b64_encode_into(char *out, const unsigned char *in, size_t len, unsigned flags)
{
    const char *alphabet = (flags & CO_BASE64_URL) ? b64_url : b64_std;
    int pad = !(flags & CO_BASE64_RAW);
    size_t o = 0, i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = alphabet[(v >> 6) & 63];
        out[o++] = alphabet[v & 63];
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        if (pad) {
            out[o++] = '=';
            out[o++] = '=';
        }
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = alphabet[(v >> 6) & 63];
        if (pad) {
            out[o++] = '=';
        }
    }
    out[o] = '\0';
    return o;
}

char *co_base64_encode(const void *data, size_t len, unsigned flags)
{
    CO_ASSERT(len < SIZE_MAX / 2);
    char *out = co_xmalloc((len + 2) / 3 * 4 + 1);
    b64_encode_into(out, data, len, flags);
    return out;
}

int co_base64_encode_buf(co_buf *out, const void *data, size_t len, unsigned flags)
{
    if (len >= SIZE_MAX / 2) {
        return co_buf_reserve(out, SIZE_MAX);
    }
    size_t need =
        (flags & CO_BASE64_RAW) ? len / 3 * 4 + (len % 3 ? len % 3 + 1 : 0) : (len + 2) / 3 * 4;
    int rc = co_buf_reserve(out, need);
    if (rc < 0) {
        return rc;
    }
    out->len += b64_encode_into(out->ptr + out->len, data, len, flags);
    return 0;
}

static int b64_value(char c, int url)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == (url ? '-' : '+')) {
        return 62;
    }
    if (c == (url ? '_' : '/')) {
        return 63;
    }
    return -1;
}

static int b64_illegal(size_t at)
{
    return co_error_set(CO_EINVALID, "illegal base64 data at input byte %zu", at);
}

static size_t skip_newlines(const char *text, size_t len, size_t i, unsigned flags)
{
    while (!(flags & CO_BASE64_NO_NEWLINES) && i < len && (text[i] == '\r' || text[i] == '\n')) {
        i++;
    }
    return i;
}

/*
 * One quantum of Go's decoder (encoding/base64 decodeQuantum), from text[*si]: up to four
 * sextets, or fewer closed by padding or the end. The offsets it reports are Go's, including
 * where they do not point at the offending byte (a missing second '=' is reported one byte
 * early), because sprig's b64dec returns the message as its result.
 */
static int b64_quantum(co_buf *out, const char *text, size_t len, size_t *si, unsigned flags)
{
    const int url = (flags & CO_BASE64_URL) != 0;
    const int pad = !(flags & CO_BASE64_RAW);
    unsigned q[4] = {0, 0, 0, 0};
    size_t i = *si;
    size_t garbage = SIZE_MAX; /* trailing bytes after the padding: reported after strictness */
    int n = 0;
    while (n < 4) {
        if (i == len) {
            if (n == 0) {
                break;
            }
            if (n == 1 || pad) {
                return b64_illegal(i - (size_t)n);
            }
            break;
        }
        char c = text[i++];
        int v = b64_value(c, url);
        if (v >= 0) {
            q[n++] = (unsigned)v;
            continue;
        }
        if ((c == '\r' || c == '\n') && !(flags & CO_BASE64_NO_NEWLINES)) {
            continue;
        }
        if (!pad || c != '=') {
            return b64_illegal(i - 1);
        }
        if (n < 2) {
            return b64_illegal(i - 1);
        }
        if (n == 2) {
            i = skip_newlines(text, len, i, flags);
            if (i == len) {
                return b64_illegal(len);
            }
            if (text[i] != '=') {
                return b64_illegal(i - 1);
            }
            i++;
        }
        i = skip_newlines(text, len, i, flags);
        if (i < len) {
            garbage = i;
        }
        break;
    }
    uint32_t v = (uint32_t)q[0] << 18 | (uint32_t)q[1] << 12 | (uint32_t)q[2] << 6 | q[3];
    unsigned char b[3] = {(unsigned char)(v >> 16), (unsigned char)(v >> 8), (unsigned char)v};
    if ((flags & CO_BASE64_STRICT) && n == 3 && b[2] != 0) {
        return b64_illegal(i - 1);
    }
    if ((flags & CO_BASE64_STRICT) && n == 2 && (b[1] != 0 || b[2] != 0)) {
        return b64_illegal(i - 2);
    }
    if (garbage != SIZE_MAX) {
        return b64_illegal(garbage);
    }
    *si = garbage != SIZE_MAX || n < 4 ? len : i;
    return n > 1 ? co_buf_put(out, b, (size_t)n - 1) : 0;
}

int co_base64_decode(co_buf *out, const char *text, size_t len, unsigned flags)
{
    size_t start = out->len;
    size_t si = 0;
    while (si < len) {
        size_t before = si;
        int rc = b64_quantum(out, text, len, &si, flags);
        if (rc == CO_ETOOBIG) {
            return rc;
        }
        if (rc < 0) {
            co_buf_truncate(out, start);
            return rc;
        }
        if (si == before) {
            break;
        }
    }
    return 0;
}

int co_base64_decode_alloc(unsigned char **out,
                           size_t *out_len,
                           const char *text,
                           size_t len,
                           unsigned flags)
{
    CO_ASSERT(len < SIZE_MAX / 2);
    size_t cap = len / 4 * 3 + 3;
    co_buf b = CO_BUF_INIT(cap);
    CO_ASSERT(co_buf_reserve(&b, cap) == 0);
    int rc = co_base64_decode(&b, text, len, flags);
    if (rc < 0) {
        co_free_secret(b.ptr, b.cap);
        return rc;
    }
    b.ptr[b.len] = '\0'; /* reserved but never written when the text decodes to nothing */
    size_t n = 0;
    *out = (unsigned char *)co_buf_take(&b, &n);
    *out_len = n;
    return 0;
}
