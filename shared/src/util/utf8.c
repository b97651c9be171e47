/* SPDX-License-Identifier: Apache-2.0 */
/*
 * UTF-8 decoding and encoding by Go's rules. The lead byte fixes the length and the smallest
 * value the sequence may encode; anything below it is overlong. ASCII takes the short path
 * everywhere, since almost all text the operator reads is ASCII.
 */
#include "co/util/utf8.h"

size_t co_utf8_decode(const void *s, size_t len, uint32_t *cp)
{
    const unsigned char *p = s;
    if (len == 0) {
        return 0;
    }
    unsigned char c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t n;
    uint32_t v, min;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        v = c & 0x1fu;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        v = c & 0x0fu;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        v = c & 0x07u;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len < n) {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }
        v = (v << 6) | (p[i] & 0x3fu);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
        return 0;
    }
    *cp = v;
    return n;
}

int32_t co_utf8_decode_rune(const void *s, size_t len, size_t *width)
{
    uint32_t cp = 0;
    size_t n = co_utf8_decode(s, len, &cp);
    if (n == 0) {
        *width = len > 0;
        return CO_UTF8_RUNE_ERROR;
    }
    *width = n;
    return (int32_t)cp;
}

size_t co_utf8_encode(char out[CO_UTF8_MAX], int32_t r)
{
    uint32_t c = (uint32_t)r;
    if (r < 0 || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
        c = CO_UTF8_RUNE_ERROR;
    }
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (c >> 18));
    out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

bool co_utf8_valid(const void *s, size_t len)
{
    const unsigned char *p = s;
    size_t i = 0;
    while (i < len) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t n = co_utf8_decode(p + i, len - i, &cp);
        if (n == 0) {
            return false;
        }
        i += n;
    }
    return true;
}

size_t co_utf8_count(const void *s, size_t len)
{
    const unsigned char *p = s;
    size_t count = 0;
    size_t i = 0;
    while (i < len) {
        uint32_t cp;
        size_t n = p[i] < 0x80 ? 1 : co_utf8_decode(p + i, len - i, &cp);
        i += n ? n : 1;
        count++;
    }
    return count;
}
