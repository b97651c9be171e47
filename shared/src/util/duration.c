/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go durations. A transcription of the algorithm of Go's time.ParseDuration (including its
 * float64 step for fractions, which decides the last nanosecond of values like "1.0000000005h")
 * and of Duration.String(), so that both directions agree with the Go operator bit for bit;
 * tests/fixtures/duration/ holds a table produced by Go itself.
 */
#include "co/util/duration.h"

#include <string.h>

#include "co/util/buf.h"
#include "co/util/error.h"

#define UINT63 ((uint64_t)1 << 63)

/* Go's time.quote(): the string in double quotes, non-ASCII and control bytes as \xNN. */
static void go_quote(co_buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    int rc = co_buf_putc(b, '"');
    for (size_t i = 0; rc == 0 && i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80 || c < ' ') {
            char esc[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
            rc = co_buf_put(b, esc, 4);
        } else {
            if (c == '"' || c == '\\') {
                rc = co_buf_putc(b, '\\');
            }
            if (rc == 0) {
                rc = co_buf_putc(b, (char)c);
            }
        }
    }
    if (rc == 0) {
        rc = co_buf_putc(b, '"');
    }
    CO_ASSERT(rc == 0);
}

static int invalid(const char *orig, const char *what, const char *unit, size_t unit_len)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    CO_ASSERT(co_buf_puts(&b, "") == 0);
    if (unit) {
        go_quote(&b, unit, unit_len);
    }
    co_buf q = CO_BUF_INIT(SIZE_MAX);
    go_quote(&q, orig, strlen(orig));
    int rc;
    if (unit) {
        rc = co_error_set(CO_EINVALID, "time: unknown unit %s in duration %s", co_buf_cstr(&b),
                          co_buf_cstr(&q));
    } else {
        rc = co_error_set(CO_EINVALID, "time: %s %s", what, co_buf_cstr(&q));
    }
    co_buf_dispose(&b);
    co_buf_dispose(&q);
    return rc;
}

static uint64_t unit_value(const char *u, size_t n)
{
    static const struct {
        const char *name;
        uint64_t ns;
    } units[] = {
        {"ns", 1},           {"us", 1000},      {"\xc2\xb5s", 1000}, /* U+00B5 micro sign */
        {"\xce\xbcs", 1000},                                         /* U+03BC Greek mu */
        {"ms", 1000000},     {"s", 1000000000}, {"m", 60000000000ULL}, {"h", 3600000000000ULL},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(units); i++) {
        if (strlen(units[i].name) == n && memcmp(units[i].name, u, n) == 0) {
            return units[i].ns;
        }
    }
    return 0;
}

int co_duration_parse(int64_t *out, const char *str)
{
    const char *s = str;
    uint64_t d = 0;
    int neg = 0;
    if (*s == '-' || *s == '+') {
        neg = *s == '-';
        s++;
    }
    if (strcmp(s, "0") == 0) {
        *out = 0;
        return 0;
    }
    if (*s == '\0') {
        return invalid(str, "invalid duration", NULL, 0);
    }
    while (*s) {
        uint64_t v = 0, f = 0;
        double scale = 1;
        if (!(*s == '.' || (*s >= '0' && *s <= '9'))) {
            return invalid(str, "invalid duration", NULL, 0);
        }
        /* leading integer */
        const char *start = s;
        for (; *s >= '0' && *s <= '9'; s++) {
            if (v > UINT63 / 10) {
                return invalid(str, "invalid duration", NULL, 0);
            }
            v = v * 10 + (uint64_t)(*s - '0');
            if (v > UINT63) {
                return invalid(str, "invalid duration", NULL, 0);
            }
        }
        int pre = s != start;
        /* fraction */
        int post = 0;
        if (*s == '.') {
            s++;
            const char *fstart = s;
            int overflow = 0;
            for (; *s >= '0' && *s <= '9'; s++) {
                if (overflow) {
                    continue;
                }
                if (f > (UINT63 - 1) / 10) {
                    overflow = 1;
                    continue;
                }
                uint64_t y = f * 10 + (uint64_t)(*s - '0');
                if (y > UINT63) {
                    overflow = 1;
                    continue;
                }
                f = y;
                scale *= 10;
            }
            post = s != fstart;
        }
        if (!pre && !post) {
            return invalid(str, "invalid duration", NULL, 0);
        }
        /* unit: everything up to the next digit or '.' */
        const char *u = s;
        while (*s && *s != '.' && !(*s >= '0' && *s <= '9')) {
            s++;
        }
        if (s == u) {
            return invalid(str, "missing unit in duration", NULL, 0);
        }
        uint64_t unit = unit_value(u, (size_t)(s - u));
        if (unit == 0) {
            return invalid(str, NULL, u, (size_t)(s - u));
        }
        if (v > UINT63 / unit) {
            return invalid(str, "invalid duration", NULL, 0);
        }
        v *= unit;
        if (f > 0) {
            /* Go computes this step in float64; so must we, to land on the same nanosecond */
            v += (uint64_t)((double)f * ((double)unit / scale));
            if (v > UINT63) {
                return invalid(str, "invalid duration", NULL, 0);
            }
        }
        d += v;
        if (d > UINT63) {
            return invalid(str, "invalid duration", NULL, 0);
        }
    }
    if (neg) {
        *out = d == UINT63 ? INT64_MIN : -(int64_t)d;
        return 0;
    }
    if (d > UINT63 - 1) {
        return invalid(str, "invalid duration", NULL, 0);
    }
    *out = (int64_t)d;
    return 0;
}

/* Writes the @p prec low digits of *v as a fraction (trailing zeros and a bare '.' omitted)
 * before position *w of @p buf, and divides *v by 10^prec. */
static void fmt_frac(char *buf, size_t *w, uint64_t *v, int prec)
{
    int print = 0;
    for (int i = 0; i < prec; i++) {
        unsigned digit = (unsigned)(*v % 10);
        print = print || digit != 0;
        if (print) {
            buf[--*w] = (char)('0' + digit);
        }
        *v /= 10;
    }
    if (print) {
        buf[--*w] = '.';
    }
}

static void fmt_int(char *buf, size_t *w, uint64_t v)
{
    if (v == 0) {
        buf[--*w] = '0';
        return;
    }
    while (v > 0) {
        buf[--*w] = (char)('0' + v % 10);
        v /= 10;
    }
}

size_t co_duration_format(char out[CO_DURATION_STR_MAX], int64_t ns)
{
    char buf[CO_DURATION_STR_MAX];
    size_t w = sizeof(buf);
    uint64_t u = (uint64_t)ns;
    int neg = ns < 0;
    if (neg) {
        u = -u;
    }
    if (u < (uint64_t)CO_SECOND) {
        int prec;
        if (u == 0) {
            memcpy(out, "0s", 3);
            return 2;
        }
        buf[--w] = 's';
        if (u < (uint64_t)CO_MICROSECOND) {
            prec = 0;
            buf[--w] = 'n';
        } else if (u < (uint64_t)CO_MILLISECOND) {
            prec = 3;
            buf[--w] = (char)0xb5; /* U+00B5 micro sign, as Go writes it */
            buf[--w] = (char)0xc2;
        } else {
            prec = 6;
            buf[--w] = 'm';
        }
        fmt_frac(buf, &w, &u, prec);
        fmt_int(buf, &w, u);
    } else {
        buf[--w] = 's';
        fmt_frac(buf, &w, &u, 9);
        fmt_int(buf, &w, u % 60);
        u /= 60;
        if (u > 0) {
            buf[--w] = 'm';
            fmt_int(buf, &w, u % 60);
            u /= 60;
            if (u > 0) {
                buf[--w] = 'h';
                fmt_int(buf, &w, u);
            }
        }
    }
    if (neg) {
        buf[--w] = '-';
    }
    size_t n = sizeof(buf) - w;
    memcpy(out, buf + w, n);
    out[n] = '\0';
    return n;
}
