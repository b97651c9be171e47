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

char *co_base64_encode(const void *data, size_t len, unsigned flags)
{
    const char *alphabet = (flags & CO_BASE64_URL) ? b64_url : b64_std;
    int pad = !(flags & CO_BASE64_RAW);
    const unsigned char *in = data;
    CO_ASSERT(len < SIZE_MAX / 2);
    char *out = co_xmalloc((len + 2) / 3 * 4 + 1);
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
    return out;
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

/* Emits the bytes of one quantum of @p n (2..4) sextets. */
static int b64_flush(co_buf *out, const int *q, int n)
{
    unsigned char b[3];
    uint32_t v = (uint32_t)q[0] << 18 | (uint32_t)q[1] << 12 | (uint32_t)(n > 2 ? q[2] : 0) << 6 |
                 (uint32_t)(n > 3 ? q[3] : 0);
    b[0] = (unsigned char)(v >> 16);
    b[1] = (unsigned char)(v >> 8);
    b[2] = (unsigned char)v;
    return co_buf_put(out, b, (size_t)n - 1);
}

int co_base64_decode(co_buf *out, const char *text, size_t len, unsigned flags)
{
    int url = (flags & CO_BASE64_URL) != 0;
    int pad = !(flags & CO_BASE64_RAW);
    size_t start = out->len;
    int q[4];
    int n = 0;
    size_t i = 0;
    size_t qstart = 0; /* where the current quantum began: Go reports a short one there */
    int rc = 0;

    for (; i < len; i++) {
        char c = text[i];
        if (c == '\r' || c == '\n') {
            continue;
        }
        if (c == '=' && pad) {
            /* Padding may only complete a quantum of two or three sextets. */
            if (n < 2) {
                rc = b64_illegal(i);
                goto fail;
            }
            if (n == 2) {
                size_t j = i + 1;
                while (j < len && (text[j] == '\r' || text[j] == '\n')) {
                    j++;
                }
                if (j >= len || text[j] != '=') {
                    rc = b64_illegal(j >= len ? len : j);
                    goto fail;
                }
                i = j;
            }
            for (size_t j = i + 1; j < len; j++) {
                if (text[j] != '\r' && text[j] != '\n') {
                    rc = b64_illegal(j);
                    goto fail;
                }
            }
            if ((rc = b64_flush(out, q, n)) < 0) {
                return rc;
            }
            return 0;
        }
        int v = b64_value(c, url);
        if (v < 0) {
            rc = b64_illegal(i);
            goto fail;
        }
        if (n == 0) {
            qstart = i;
        }
        q[n++] = v;
        if (n == 4) {
            if ((rc = b64_flush(out, q, 4)) < 0) {
                return rc;
            }
            n = 0;
        }
    }
    if (n == 0) {
        return 0;
    }
    if (pad || n == 1) {
        rc = b64_illegal(qstart);
        goto fail;
    }
    if ((rc = b64_flush(out, q, n)) < 0) {
        return rc;
    }
    return 0;

fail:
    co_buf_truncate(out, start);
    return rc;
}
