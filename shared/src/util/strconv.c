/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go's strconv integer parsing, in Go's order of checks: the base and prefix, then the digits
 * left to right with overflow reported at once, then the placement of underscores, then (for
 * ParseInt) the sign's range.
 */
#include "co/util/strconv.h"

#include <stdbool.h>

#include "co/util/error.h"

static unsigned digit_value(char c)
{
    if (c >= '0' && c <= '9') {
        return (unsigned)(c - '0');
    }
    char l = (char)(c | 0x20);
    if (l >= 'a' && l <= 'z') {
        return (unsigned)(l - 'a' + 10);
    }
    return 99;
}

bool co_strconv_underscores_ok(const char *s, size_t n)
{
    char saw = '^'; /* '^' start, '0' digit or prefix, '_' underscore, '!' anything else */
    size_t i = 0;
    if (n >= 1 && (s[0] == '-' || s[0] == '+')) {
        s++;
        n--;
    }
    bool hex = false;
    if (n >= 2 && s[0] == '0') {
        char l = (char)(s[1] | 0x20);
        if (l == 'b' || l == 'o' || l == 'x') {
            i = 2;
            saw = '0';
            hex = l == 'x';
        }
    }
    for (; i < n; i++) {
        char l = (char)(s[i] | 0x20);
        if ((s[i] >= '0' && s[i] <= '9') || (hex && l >= 'a' && l <= 'f')) {
            saw = '0';
            continue;
        }
        if (s[i] == '_') {
            if (saw != '0') {
                return false;
            }
            saw = '_';
            continue;
        }
        if (saw == '_') {
            return false;
        }
        saw = '!';
    }
    return saw != '_';
}

int co_strconv_parse_uint(uint64_t *out, const char *s, size_t len, int base, unsigned flags)
{
    if (len == 0) {
        return CO_EINVALID;
    }
    const char *s0 = s;
    size_t len0 = len;
    bool base0 = base == 0;
    if (base0) {
        base = 10;
        if (s[0] == '0') {
            char l = len >= 3 ? (char)(s[1] | 0x20) : 0;
            if (l == 'b' || l == 'o' || l == 'x') {
                base = l == 'b' ? 2 : l == 'o' ? 8 : 16;
                s += 2;
                len -= 2;
            } else {
                base = 8;
                s++;
                len--;
            }
        }
    } else if (base < 2 || base > 36) {
        return CO_EINVALID;
    }
    uint64_t cutoff =
        UINT64_MAX / (uint64_t)base + 1; /* the first n for which n * base overflows */
    uint64_t n = 0;
    bool underscores = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '_' && base0 && !(flags & CO_STRCONV_NO_UNDERSCORES)) {
            underscores = true;
            continue;
        }
        unsigned d = digit_value(s[i]);
        if (d >= (unsigned)base) {
            return CO_EINVALID;
        }
        if (n >= cutoff) {
            return CO_ETOOBIG;
        }
        n *= (uint64_t)base;
        if (n + d < n) {
            return CO_ETOOBIG;
        }
        n += d;
    }
    if (underscores && !co_strconv_underscores_ok(s0, len0)) {
        return CO_EINVALID;
    }
    *out = n;
    return 0;
}

int co_strconv_parse_int(int64_t *out, const char *s, size_t len, int base, unsigned flags)
{
    if (len == 0) {
        return CO_EINVALID;
    }
    bool neg = s[0] == '-';
    if (s[0] == '+' || s[0] == '-') {
        s++;
        len--;
    }
    uint64_t u = 0;
    int rc = co_strconv_parse_uint(&u, s, len, base, flags);
    if (rc == CO_EINVALID) {
        return rc;
    }
    /* Go checks the sign's range even after ParseUint's own range error */
    if (rc == CO_ETOOBIG || (!neg && u > (uint64_t)INT64_MAX) ||
        (neg && u > (uint64_t)INT64_MAX + 1)) {
        return CO_ETOOBIG;
    }
    *out = neg ? (int64_t)(0 - u) : (int64_t)u;
    return 0;
}
