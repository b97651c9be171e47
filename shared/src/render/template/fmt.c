/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go's fmt (Sprint, Sprintln, Sprintf) and the strconv formatting it relies on (Quote,
 * FormatFloat), over template values. The structure follows fmt's pp/fmt pair: a printer with
 * the flags of the current verb, printArg dispatching on the value's type, printValue walking
 * maps, slices and structs, handleMethods calling String()/Error() on types that have them,
 * and the %!verb(type=value) error forms.
 *
 * Floating point digits come from the C library (correctly rounded in glibc) and are laid out
 * by Go's rules: shortest representation for %v, the %e/%f/%g switch at exponent -4 and the
 * precision, two-digit exponents.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/utf8.h"
#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "tpl.h"

/* ------------------------------------------------------------------------------------------ */
/* Float formatting (strconv.FormatFloat)                                                     */
/* ------------------------------------------------------------------------------------------ */

typedef struct decimal {
    char d[800];
    int nd; /* number of digits (trailing zeros trimmed) */
    int dp; /* decimal point position */
} decimal;

/* Parses a %e rendering "d.ddde±x" into digits. */
static void digits_from_e(decimal *dg, const char *s)
{
    dg->nd = 0;
    const char *p = s;
    int exp = 0;
    for (; *p && *p != 'e'; p++) {
        if (*p >= '0' && *p <= '9' && dg->nd < (int)sizeof(dg->d)) {
            dg->d[dg->nd++] = *p;
        }
    }
    if (*p == 'e') {
        exp = (int)strtol(p + 1, NULL, 10);
    }
    dg->dp = exp + 1;
    while (dg->nd > 0 && dg->d[dg->nd - 1] == '0') {
        dg->nd--;
    }
    if (dg->nd == 0) {
        dg->dp = 0;
    }
}

/* Shortest digits that read back as f (f > 0 or 0). */
static void digits_shortest(decimal *dg, double f)
{
    if (f == 0) {
        dg->nd = 0;
        dg->dp = 0;
        return;
    }
    char buf[64];
    for (int p = 0; p < 17; p++) {
        snprintf(buf, sizeof(buf), "%.*e", p, f);
        if (strtod(buf, NULL) == f) {
            digits_from_e(dg, buf);
            return;
        }
    }
    snprintf(buf, sizeof(buf), "%.16e", f);
    digits_from_e(dg, buf);
}

static void digits_shortest32(decimal *dg, float f)
{
    if (f == 0) {
        dg->nd = 0;
        dg->dp = 0;
        return;
    }
    char buf[64];
    for (int p = 0; p < 9; p++) {
        snprintf(buf, sizeof(buf), "%.*e", p, (double)f);
        if (strtof(buf, NULL) == f) {
            digits_from_e(dg, buf);
            return;
        }
    }
    snprintf(buf, sizeof(buf), "%.8e", (double)f);
    digits_from_e(dg, buf);
}

/* n significant digits. */
static void digits_fixed(decimal *dg, double f, int n)
{
    if (f == 0) {
        dg->nd = 0;
        dg->dp = 0;
        return;
    }
    char buf[900];
    if (n > 760) {
        n = 760;
    }
    snprintf(buf, sizeof(buf), "%.*e", n - 1, f);
    digits_from_e(dg, buf);
}

/* Digits rounded at prec places after the decimal point. */
static void digits_f(decimal *dg, double f, int prec)
{
    dg->nd = 0;
    dg->dp = 0;
    if (prec > 700) {
        prec = 700;
    }
    size_t cap = 320 + (size_t)prec + 16;
    char *buf = co_xmalloc(cap);
    snprintf(buf, cap, "%.*f", prec, f);
    const char *p = buf;
    bool leading = true;
    int intdigits = 0;
    bool frac = false;
    for (; *p; p++) {
        if (*p == '.') {
            frac = true;
            continue;
        }
        if (*p < '0' || *p > '9') {
            continue;
        }
        if (!frac) {
            intdigits++;
        }
        if (leading && *p == '0') {
            if (frac) {
                dg->dp--;
            }
            continue;
        }
        leading = false;
        if (dg->nd < (int)sizeof(dg->d)) {
            dg->d[dg->nd++] = *p;
        }
    }
    /* dp: digits before the point, counted from the first significant digit */
    if (!leading) {
        int lead_int_zeros = 0;
        for (const char *q = buf; *q && *q != '.'; q++) {
            if (*q == '0') {
                lead_int_zeros++;
            } else if (*q >= '1' && *q <= '9') {
                break;
            }
        }
        if (intdigits - lead_int_zeros > 0) {
            dg->dp = intdigits - lead_int_zeros;
        }
    }
    free(buf);
    while (dg->nd > 0 && dg->d[dg->nd - 1] == '0') {
        dg->nd--;
    }
    if (dg->nd == 0) {
        dg->dp = 0;
    }
}

static int put(co_buf *b, const char *s, size_t n)
{
    return co_buf_put(b, s, n);
}

static int putc_(co_buf *b, char c)
{
    return co_buf_putc(b, c);
}

static int fmt_e(co_buf *b, bool neg, const decimal *d, int prec, char fmt)
{
    if (neg && putc_(b, '-') < 0) {
        return -1;
    }
    if (putc_(b, d->nd ? d->d[0] : '0') < 0) {
        return -1;
    }
    if (prec > 0) {
        if (putc_(b, '.') < 0) {
            return -1;
        }
        int i = 1;
        int m = d->nd < prec + 1 ? d->nd : prec + 1;
        if (i < m) {
            if (put(b, d->d + i, (size_t)(m - i)) < 0) {
                return -1;
            }
            i = m;
        }
        for (; i <= prec; i++) {
            if (putc_(b, '0') < 0) {
                return -1;
            }
        }
    }
    int exp = d->nd == 0 ? 0 : d->dp - 1;
    char sign = exp < 0 ? '-' : '+';
    if (exp < 0) {
        exp = -exp;
    }
    if (exp < 10) {
        return co_buf_printf(b, "%c%c0%d", fmt, sign, exp);
    }
    return co_buf_printf(b, "%c%c%d", fmt, sign, exp);
}

static int fmt_f(co_buf *b, bool neg, const decimal *d, int prec)
{
    if (neg && putc_(b, '-') < 0) {
        return -1;
    }
    if (d->dp > 0) {
        int m = d->nd < d->dp ? d->nd : d->dp;
        if (put(b, d->d, (size_t)m) < 0) {
            return -1;
        }
        for (; m < d->dp; m++) {
            if (putc_(b, '0') < 0) {
                return -1;
            }
        }
    } else if (putc_(b, '0') < 0) {
        return -1;
    }
    if (prec > 0) {
        if (putc_(b, '.') < 0) {
            return -1;
        }
        for (int i = 0; i < prec; i++) {
            int j = d->dp + i;
            char ch = j >= 0 && j < d->nd ? d->d[j] : '0';
            if (putc_(b, ch) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

static int fmt_hexfloat(co_buf *b, double f, int prec, char fmt, bool is32)
{
    uint64_t bits;
    int mantbits = is32 ? 23 : 52;
    int expbits = is32 ? 8 : 11;
    int bias = is32 ? -127 : -1023;
    if (is32) {
        float ff = (float)f;
        uint32_t b32;
        memcpy(&b32, &ff, sizeof(b32));
        bits = b32;
    } else {
        memcpy(&bits, &f, sizeof(bits));
    }
    bool neg = (bits >> (expbits + mantbits)) != 0;
    int exp = (int)(bits >> mantbits) & ((1 << expbits) - 1);
    uint64_t mant = bits & ((UINT64_C(1) << mantbits) - 1);
    if (exp == 0) {
        exp++;
    } else {
        mant |= UINT64_C(1) << mantbits;
    }
    exp += bias;
    if (mant == 0) {
        exp = 0;
    }
    mant <<= 60 - mantbits;
    while (mant != 0 && (mant & (UINT64_C(1) << 60)) == 0) {
        mant <<= 1;
        exp--;
    }
    if (prec >= 0 && prec < 15) {
        unsigned shift = (unsigned)prec * 4;
        uint64_t extra = (mant << shift) & ((UINT64_C(1) << 60) - 1);
        mant >>= 60 - shift;
        if ((extra | (mant & 1)) > (UINT64_C(1) << 59)) {
            mant++;
        }
        mant <<= 60 - shift;
        if (mant & (UINT64_C(1) << 61)) {
            mant >>= 1;
            exp++;
        }
    }
    const char *hex = fmt == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    if (neg && putc_(b, '-') < 0) {
        return -1;
    }
    if (co_buf_printf(b, "0%c%c", fmt, (char)('0' + (int)((mant >> 60) & 1))) < 0) {
        return -1;
    }
    mant <<= 4;
    if (prec < 0 && mant != 0) {
        if (putc_(b, '.') < 0) {
            return -1;
        }
        while (mant != 0) {
            if (putc_(b, hex[(mant >> 60) & 15]) < 0) {
                return -1;
            }
            mant <<= 4;
        }
    } else if (prec > 0) {
        if (putc_(b, '.') < 0) {
            return -1;
        }
        for (int i = 0; i < prec; i++) {
            if (putc_(b, hex[(mant >> 60) & 15]) < 0) {
                return -1;
            }
            mant <<= 4;
        }
    }
    char sign = exp < 0 ? '-' : '+';
    if (exp < 0) {
        exp = -exp;
    }
    return co_buf_printf(b, "%c%c%02d", fmt == 'X' ? 'P' : 'p', sign, exp);
}

static int format_float(co_buf *b, double f, char fmt, int prec, bool is32)
{
    if (isnan(f)) {
        return co_buf_puts(b, "NaN");
    }
    if (isinf(f)) {
        return co_buf_puts(b, f < 0 ? "-Inf" : "+Inf");
    }
    if (fmt == 'x' || fmt == 'X') {
        return fmt_hexfloat(b, f, prec, fmt, is32);
    }
    bool neg = signbit(f) != 0;
    double a = fabs(f);
    if (fmt == 'b') {
        uint64_t bits;
        memcpy(&bits, &f, sizeof(bits));
        int exp = (int)(bits >> 52) & 0x7FF;
        uint64_t mant = bits & ((UINT64_C(1) << 52) - 1);
        if (exp == 0) {
            exp++;
        } else {
            mant |= UINT64_C(1) << 52;
        }
        exp += -1023 - 52;
        return co_buf_printf(b, "%s%llup%s%d", neg ? "-" : "", (unsigned long long)mant,
                             exp >= 0 ? "+" : "", exp);
    }
    decimal dg;
    bool shortest = prec < 0;
    if (shortest) {
        if (is32) {
            digits_shortest32(&dg, (float)a);
        } else {
            digits_shortest(&dg, a);
        }
        switch (fmt) {
        case 'e':
        case 'E':
            prec = dg.nd - 1 > 0 ? dg.nd - 1 : 0;
            break;
        case 'f':
            prec = dg.nd - dg.dp > 0 ? dg.nd - dg.dp : 0;
            break;
        default:
            prec = dg.nd;
            break;
        }
    } else if (fmt == 'f') {
        digits_f(&dg, a, prec);
    } else {
        int n = prec;
        if (fmt == 'e' || fmt == 'E') {
            n++;
        } else {
            if (prec == 0) {
                prec = 1;
            }
            n = prec;
        }
        digits_fixed(&dg, a, n);
    }
    switch (fmt) {
    case 'e':
    case 'E':
        return fmt_e(b, neg, &dg, prec, fmt);
    case 'f':
        return fmt_f(b, neg, &dg, prec);
    case 'g':
    case 'G': {
        int eprec = prec;
        if (eprec > dg.nd && dg.nd >= dg.dp) {
            eprec = dg.nd;
        }
        if (shortest) {
            eprec = 6;
        }
        int exp = dg.dp - 1;
        if (exp < -4 || exp >= eprec) {
            if (prec > dg.nd) {
                prec = dg.nd;
            }
            return fmt_e(b, neg, &dg, prec - 1, fmt == 'g' ? 'e' : 'E');
        }
        if (prec > dg.dp) {
            prec = dg.nd;
        }
        return fmt_f(b, neg, &dg, prec - dg.dp > 0 ? prec - dg.dp : 0);
    }
    default:
        return co_buf_printf(b, "%%%c", fmt);
    }
}

int tpl_format_float(co_buf *b, double f, char fmt, int prec)
{
    return format_float(b, f, fmt, prec, false);
}

/* ------------------------------------------------------------------------------------------ */
/* Quoting (strconv.Quote)                                                                    */
/* ------------------------------------------------------------------------------------------ */

static const char lowerhex[] = "0123456789abcdef";

static int escaped_rune(co_buf *b, int32_t r, char quote, bool ascii)
{
    char tmp[16];
    if (r == quote || r == '\\') {
        tmp[0] = '\\';
        tmp[1] = (char)r;
        return put(b, tmp, 2);
    }
    if (ascii) {
        if (r < 0x80 && tpl_is_print(r)) {
            return putc_(b, (char)r);
        }
    } else if (tpl_is_print(r)) {
        size_t w = co_utf8_encode(tmp, r);
        return put(b, tmp, w);
    }
    switch (r) {
    case '\a':
        return put(b, "\\a", 2);
    case '\b':
        return put(b, "\\b", 2);
    case '\f':
        return put(b, "\\f", 2);
    case '\n':
        return put(b, "\\n", 2);
    case '\r':
        return put(b, "\\r", 2);
    case '\t':
        return put(b, "\\t", 2);
    case '\v':
        return put(b, "\\v", 2);
    default:
        break;
    }
    if (r < ' ' || r == 0x7F) {
        tmp[0] = '\\';
        tmp[1] = 'x';
        tmp[2] = lowerhex[(r >> 4) & 0xF];
        tmp[3] = lowerhex[r & 0xF];
        return put(b, tmp, 4);
    }
    if (r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF)) {
        r = 0xFFFD;
    }
    if (r < 0x10000) {
        return co_buf_printf(b, "\\u%04x", (unsigned)r);
    }
    return co_buf_printf(b, "\\U%08x", (unsigned)r);
}

static int quote_with(co_buf *b, const char *s, size_t len, char quote, bool ascii)
{
    if (putc_(b, quote) < 0) {
        return -1;
    }
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        int32_t r = c;
        size_t w = 1;
        if (c >= 0x80) {
            r = co_utf8_decode_rune(s + i, len - i, &w);
        }
        if (w == 1 && r == 0xFFFD) {
            char tmp[4] = {'\\', 'x', lowerhex[c >> 4], lowerhex[c & 0xF]};
            if (put(b, tmp, 4) < 0) {
                return -1;
            }
            i++;
            continue;
        }
        if (escaped_rune(b, r, quote, ascii) < 0) {
            return -1;
        }
        i += w;
    }
    return putc_(b, quote);
}

int tpl_quote(co_buf *b, const char *s, size_t len, bool ascii_only)
{
    return quote_with(b, s, len, '"', ascii_only);
}

static int quote_rune(co_buf *b, int32_t r, bool ascii)
{
    if (r < 0 || r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF)) {
        r = 0xFFFD;
    }
    if (putc_(b, '\'') < 0 || escaped_rune(b, r, '\'', ascii) < 0) {
        return -1;
    }
    return putc_(b, '\'');
}

static bool can_backquote(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t w;
        int32_t r = co_utf8_decode_rune(s + i, len - i, &w);
        i += w;
        if (w > 1) {
            if (r == 0xFEFF) {
                return false;
            }
            continue;
        }
        if (r == 0xFFFD) {
            return false;
        }
        if ((r < ' ' && r != '\t') || r == '`' || r == 0x7F) {
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------------------------------------ */
/* The printer                                                                                */
/* ------------------------------------------------------------------------------------------ */

typedef struct pp {
    tpl_x *x;
    co_buf *b;
    bool plus, minus, sharp, space, zero, plus_v, sharp_v;
    bool wid_present, prec_present;
    int wid, prec;
    bool erroring;
    const tv *arg;   /* current argument (p.arg) */
    const tv *value; /* current reflect value (p.value) */
    int rc;          /* first buffer failure */
    bool failed;     /* a value too deep to print, or the budget spent: message set */
    tv_path path;    /* containers being printed */
} pp;

static void clear_flags(pp *p)
{
    p->plus = p->minus = p->sharp = p->space = p->zero = p->plus_v = p->sharp_v = false;
    p->wid_present = p->prec_present = false;
    p->wid = p->prec = 0;
}

static void wr(pp *p, const char *s, size_t n)
{
    if (p->rc == 0 && co_buf_put(p->b, s, n) < 0) {
        p->rc = CO_ETOOBIG;
    }
}

static void wrs(pp *p, const char *s)
{
    wr(p, s, strlen(s));
}

static void wrc(pp *p, char c)
{
    wr(p, &c, 1);
}

static void wr_rune(pp *p, int32_t r)
{
    char tmp[4];
    size_t w = co_utf8_encode(tmp, r);
    wr(p, tmp, w);
}

static size_t rune_count(const char *s, size_t n)
{
    size_t c = 0;
    size_t i = 0;
    while (i < n) {
        size_t w = 1;
        if ((unsigned char)s[i] >= 0x80) {
            (void)co_utf8_decode_rune(s + i, n - i, &w);
        }
        i += w;
        c++;
    }
    return c;
}

static void write_padding(pp *p, int n)
{
    if (n <= 0) {
        return;
    }
    char pad = p->zero ? '0' : ' ';
    char chunk[64];
    memset(chunk, pad, sizeof(chunk));
    while (n > 0) {
        int k = n > (int)sizeof(chunk) ? (int)sizeof(chunk) : n;
        wr(p, chunk, (size_t)k);
        n -= k;
    }
}

static void pad(pp *p, const char *s, size_t n)
{
    if (!p->wid_present || p->wid == 0) {
        wr(p, s, n);
        return;
    }
    int width = p->wid - (int)rune_count(s, n);
    if (!p->minus) {
        write_padding(p, width);
        wr(p, s, n);
    } else {
        wr(p, s, n);
        write_padding(p, width);
    }
}

static void pad_str(pp *p, const char *s)
{
    pad(p, s, strlen(s));
}

/* fmt.fmtInteger */
static void fmt_integer(pp *p, uint64_t u, int base, bool is_signed, int32_t verb, bool upper)
{
    const char *digits = upper ? "0123456789ABCDEFX" : "0123456789abcdefx";
    bool negative = is_signed && (int64_t)u < 0;
    if (negative) {
        u = 0 - u;
    }
    int prec = 0;
    if (p->prec_present) {
        prec = p->prec;
        if (prec == 0 && u == 0) {
            bool old = p->zero;
            p->zero = false;
            write_padding(p, p->wid);
            p->zero = old;
            return;
        }
    } else if (p->zero && p->wid_present) {
        prec = p->wid;
        if (negative || p->plus || p->space) {
            prec--;
        }
    }
    size_t cap = 68 + (size_t)(p->wid > 0 ? p->wid : 0) + (size_t)(prec > 0 ? prec : 0);
    char small[96];
    char *buf = cap <= sizeof(small) ? small : co_xmalloc(cap);
    size_t i = cap;
    while (u >= (uint64_t)base) {
        buf[--i] = digits[u % (uint64_t)base];
        u /= (uint64_t)base;
    }
    buf[--i] = digits[u];
    while (i > 0 && prec > (int)(cap - i)) {
        buf[--i] = '0';
    }
    if (p->sharp) {
        switch (base) {
        case 2:
            buf[--i] = 'b';
            buf[--i] = '0';
            break;
        case 8:
            if (buf[i] != '0') {
                buf[--i] = '0';
            }
            break;
        case 16:
            buf[--i] = digits[16];
            buf[--i] = '0';
            break;
        default:
            break;
        }
    }
    if (verb == 'O') {
        buf[--i] = 'o';
        buf[--i] = '0';
    }
    if (negative) {
        buf[--i] = '-';
    } else if (p->plus) {
        buf[--i] = '+';
    } else if (p->space) {
        buf[--i] = ' ';
    }
    bool old = p->zero;
    p->zero = false;
    pad(p, buf + i, cap - i);
    p->zero = old;
    if (buf != small) {
        free(buf);
    }
}

static void fmt0x64(pp *p, uint64_t v, bool leading0x)
{
    bool sharp = p->sharp;
    p->sharp = leading0x;
    fmt_integer(p, v, 16, false, 'v', false);
    p->sharp = sharp;
}

static void fmt_unicode(pp *p, uint64_t u)
{
    char buf[128];
    int prec = 4;
    if (p->prec_present && p->prec > 4) {
        prec = p->prec > 100 ? 100 : p->prec;
    }
    size_t i = sizeof(buf);
    if (p->sharp && u <= 0x10FFFF && tpl_is_print((int32_t)u)) {
        buf[--i] = '\'';
        char enc[4];
        size_t w = co_utf8_encode(enc, (int32_t)u);
        i -= w;
        memcpy(buf + i, enc, w);
        buf[--i] = '\'';
        buf[--i] = ' ';
    }
    while (u >= 16) {
        buf[--i] = "0123456789ABCDEF"[u & 0xF];
        prec--;
        u >>= 4;
    }
    buf[--i] = "0123456789ABCDEF"[u];
    prec--;
    while (prec > 0) {
        buf[--i] = '0';
        prec--;
    }
    buf[--i] = '+';
    buf[--i] = 'U';
    bool old = p->zero;
    p->zero = false;
    pad(p, buf + i, sizeof(buf) - i);
    p->zero = old;
}

static void print_arg(pp *p, const tv *arg, int32_t verb);
static void print_value(pp *p, const tv *v, int32_t verb, int depth);

static void bad_verb(pp *p, int32_t verb)
{
    p->erroring = true;
    wrs(p, "%!");
    wr_rune(p, verb);
    wrc(p, '(');
    if (p->arg && p->arg->t && p->arg->t->kind != TK_IFACE) {
        const tv *a = p->arg;
        wrs(p, a->t->name);
        wrc(p, '=');
        print_arg(p, a, 'v');
    } else if (p->value && p->value->t) {
        const tv *v = p->value;
        wrs(p, v->t->name);
        wrc(p, '=');
        print_value(p, v, 'v', 0);
    } else {
        wrs(p, "<nil>");
    }
    wrc(p, ')');
    p->erroring = false;
}

static void fmt_bool(pp *p, bool v, int32_t verb)
{
    if (verb == 't' || verb == 'v') {
        pad_str(p, v ? "true" : "false");
    } else {
        bad_verb(p, verb);
    }
}

static void fmt_int(pp *p, uint64_t v, bool is_signed, int32_t verb)
{
    switch (verb) {
    case 'v':
        if (p->sharp_v && !is_signed) {
            fmt0x64(p, v, true);
        } else {
            fmt_integer(p, v, 10, is_signed, verb, false);
        }
        break;
    case 'd':
        fmt_integer(p, v, 10, is_signed, verb, false);
        break;
    case 'b':
        fmt_integer(p, v, 2, is_signed, verb, false);
        break;
    case 'o':
    case 'O':
        fmt_integer(p, v, 8, is_signed, verb, false);
        break;
    case 'x':
        fmt_integer(p, v, 16, is_signed, verb, false);
        break;
    case 'X':
        fmt_integer(p, v, 16, is_signed, verb, true);
        break;
    case 'c': {
        int32_t r = v > 0x10FFFF ? 0xFFFD : (int32_t)v;
        char tmp[4];
        size_t w = co_utf8_encode(tmp, r);
        pad(p, tmp, w);
        break;
    }
    case 'q': {
        int32_t r = v > 0x10FFFF ? 0xFFFD : (int32_t)v;
        co_buf q = CO_BUF_INIT(64);
        if (quote_rune(&q, r, p->plus) == 0) {
            pad(p, co_buf_cstr(&q), q.len);
        }
        co_buf_dispose(&q);
        break;
    }
    case 'U':
        fmt_unicode(p, v);
        break;
    default:
        bad_verb(p, verb);
    }
}

/* fmt.fmtFloat */
static void fmt_float_flags(pp *p, double v, bool is32, int32_t verb, int prec)
{
    if (p->prec_present) {
        prec = p->prec;
    }
    co_buf nb = CO_BUF_INIT(tpl_out_cap());
    if (putc_(&nb, '+') < 0 || format_float(&nb, v, (char)verb, prec, is32) < 0) {
        p->rc = CO_ETOOBIG;
        co_buf_dispose(&nb);
        return;
    }
    char *num = nb.ptr;
    size_t n = nb.len;
    if (num[1] == '-' || num[1] == '+') {
        num++;
        n--;
    } else {
        num[0] = '+';
    }
    if (p->space && num[0] == '+' && !p->plus) {
        num[0] = ' ';
    }
    if (num[1] == 'I' || num[1] == 'N') {
        bool old = p->zero;
        p->zero = false;
        if (num[1] == 'N' && !p->space && !p->plus) {
            num++;
            n--;
        }
        pad(p, num, n);
        p->zero = old;
        co_buf_dispose(&nb);
        return;
    }
    co_buf out = CO_BUF_INIT(tpl_out_cap());
    if (p->sharp && verb != 'b') {
        int digits = 0;
        if (verb == 'v' || verb == 'g' || verb == 'G' || verb == 'x') {
            digits = prec == -1 ? 6 : prec;
        }
        char tail[16] = "";
        size_t tlen = 0;
        bool has_point = false;
        bool nonzero = false;
        size_t end = n;
        for (size_t i = 1; i < end; i++) {
            char c = num[i];
            if (c == '.') {
                has_point = true;
            } else if (c == 'p' || c == 'P' ||
                       ((c == 'e' || c == 'E') && verb != 'x' && verb != 'X')) {
                tlen = end - i < sizeof(tail) ? end - i : sizeof(tail) - 1;
                memcpy(tail, num + i, tlen);
                end = i;
                break;
            } else {
                if (c != '0') {
                    nonzero = true;
                }
                if (nonzero) {
                    digits--;
                }
            }
        }
        int rc = put(&out, num, end);
        if (!has_point) {
            if (end == 2 && num[1] == '0') {
                digits--;
            }
            rc |= putc_(&out, '.');
        }
        while (digits > 0 && rc == 0) {
            rc |= putc_(&out, '0');
            digits--;
        }
        rc |= put(&out, tail, tlen);
        if (rc) {
            p->rc = CO_ETOOBIG;
        }
    } else if (put(&out, num, n) < 0) {
        p->rc = CO_ETOOBIG;
    }
    co_buf_dispose(&nb);
    num = out.ptr ? out.ptr : (char *)"+";
    n = out.len;
    if (p->plus || num[0] != '+') {
        if (p->zero && p->wid_present && p->wid > (int)n) {
            wrc(p, num[0]);
            write_padding(p, p->wid - (int)n);
            wr(p, num + 1, n - 1);
        } else {
            pad(p, num, n);
        }
    } else {
        pad(p, num + 1, n - 1);
    }
    co_buf_dispose(&out);
}

static void fmt_float(pp *p, double v, bool is32, int32_t verb)
{
    switch (verb) {
    case 'v':
        fmt_float_flags(p, v, is32, 'g', -1);
        break;
    case 'b':
    case 'g':
    case 'G':
    case 'x':
    case 'X':
        fmt_float_flags(p, v, is32, verb, -1);
        break;
    case 'f':
    case 'e':
    case 'E':
        fmt_float_flags(p, v, is32, verb, 6);
        break;
    case 'F':
        fmt_float_flags(p, v, is32, 'f', 6);
        break;
    default:
        bad_verb(p, verb);
    }
}

static void fmt_complex(pp *p, const double *c, int32_t verb)
{
    switch (verb) {
    case 'v':
    case 'b':
    case 'g':
    case 'G':
    case 'x':
    case 'X':
    case 'f':
    case 'F':
    case 'e':
    case 'E': {
        bool old = p->plus;
        wrc(p, '(');
        fmt_float(p, c[0], false, verb);
        p->plus = true;
        fmt_float(p, c[1], false, verb);
        wrs(p, "i)");
        p->plus = old;
        break;
    }
    default:
        bad_verb(p, verb);
    }
}

/* truncate to prec runes */
static size_t truncate_len(pp *p, const char *s, size_t n)
{
    if (!p->prec_present) {
        return n;
    }
    int k = p->prec;
    size_t i = 0;
    while (i < n) {
        if (--k < 0) {
            return i;
        }
        size_t w = 1;
        if ((unsigned char)s[i] >= 0x80) {
            (void)co_utf8_decode_rune(s + i, n - i, &w);
        }
        i += w;
    }
    return n;
}

static void fmt_sbx(pp *p, const char *s, size_t len, bool upper)
{
    const char *digits = upper ? "0123456789ABCDEFX" : "0123456789abcdefx";
    size_t length = len;
    if (p->prec_present && p->prec < (int)length) {
        length = (size_t)p->prec;
    }
    int width = 2 * (int)length;
    if (width > 0) {
        if (p->space) {
            if (p->sharp) {
                width *= 2;
            }
            width += (int)length - 1;
        } else if (p->sharp) {
            width += 2;
        }
    } else {
        if (p->wid_present) {
            write_padding(p, p->wid);
        }
        return;
    }
    if (p->wid_present && p->wid > width && !p->minus) {
        write_padding(p, p->wid - width);
    }
    if (p->sharp) {
        wrc(p, '0');
        wrc(p, digits[16]);
    }
    for (size_t i = 0; i < length; i++) {
        if (p->space && i > 0) {
            wrc(p, ' ');
            if (p->sharp) {
                wrc(p, '0');
                wrc(p, digits[16]);
            }
        }
        unsigned char c = (unsigned char)s[i];
        char two[2] = {digits[c >> 4], digits[c & 0xF]};
        wr(p, two, 2);
    }
    if (p->wid_present && p->wid > width && p->minus) {
        write_padding(p, p->wid - width);
    }
}

static void fmt_q(pp *p, const char *s, size_t n)
{
    n = truncate_len(p, s, n);
    co_buf q = CO_BUF_INIT(tpl_out_cap());
    int rc;
    if (p->sharp && can_backquote(s, n)) {
        rc = putc_(&q, '`');
        rc |= put(&q, s, n);
        rc |= putc_(&q, '`');
    } else {
        rc = quote_with(&q, s, n, '"', p->plus);
    }
    if (rc) {
        p->rc = CO_ETOOBIG;
    } else {
        pad(p, co_buf_cstr(&q), q.len);
    }
    co_buf_dispose(&q);
}

static void fmt_string(pp *p, const char *s, size_t n, int32_t verb)
{
    switch (verb) {
    case 'v':
        if (p->sharp_v) {
            fmt_q(p, s, n);
        } else {
            pad(p, s, truncate_len(p, s, n));
        }
        break;
    case 's':
        pad(p, s, truncate_len(p, s, n));
        break;
    case 'x':
        fmt_sbx(p, s, n, false);
        break;
    case 'X':
        fmt_sbx(p, s, n, true);
        break;
    case 'q':
        fmt_q(p, s, n);
        break;
    default:
        bad_verb(p, verb);
    }
}

static void fmt_bytes(pp *p, const tv *v, int32_t verb, const char *type_string)
{
    const char *s = v->u.s ? v->u.s->s : "";
    size_t n = v->u.s ? v->u.s->len : 0;
    switch (verb) {
    case 'v':
    case 'd':
        if (p->sharp_v) {
            wrs(p, type_string);
            if (!v->u.s) {
                wrs(p, "(nil)");
                return;
            }
            wrc(p, '{');
            for (size_t i = 0; i < n; i++) {
                if (i > 0) {
                    wrs(p, ", ");
                }
                fmt0x64(p, (unsigned char)s[i], true);
            }
            wrc(p, '}');
        } else {
            wrc(p, '[');
            for (size_t i = 0; i < n; i++) {
                if (i > 0) {
                    wrc(p, ' ');
                }
                fmt_integer(p, (unsigned char)s[i], 10, false, verb, false);
            }
            wrc(p, ']');
        }
        break;
    case 's':
        pad(p, s, truncate_len(p, s, n));
        break;
    case 'x':
        fmt_sbx(p, s, n, false);
        break;
    case 'X':
        fmt_sbx(p, s, n, true);
        break;
    case 'q':
        fmt_q(p, s, n);
        break;
    default: {
        /* printValue of the []byte: element-wise */
        wrc(p, '[');
        for (size_t i = 0; i < n; i++) {
            if (i > 0) {
                wrc(p, ' ');
            }
            tv e = tv_uint(&T_UINT8, (unsigned char)s[i]);
            const tv *saved = p->arg;
            p->arg = &e;
            fmt_int(p, (unsigned char)s[i], false, verb);
            p->arg = saved;
        }
        wrc(p, ']');
    }
    }
}

/* Calls a String()/Error() method; returns false when the type has none. */
static bool call_stringer(pp *p, const tv *v, const char *method, tv *out)
{
    const tpl_func *m = tv_method(v, method, strlen(method));
    if (!m || m->nin != 0 || !m->out || m->out->kind != TK_STRING) {
        return false;
    }
    tv self = *v;
    co_buf *saved = p->x->err;
    co_buf scratch = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    p->x->err = &scratch;
    int rc = tpl_call(p->x, m, out, &self, 1);
    p->x->err = saved;
    co_buf_dispose(&scratch);
    return rc == 0 && out->t;
}

static bool handle_methods(pp *p, const tv *v, int32_t verb)
{
    if (p->erroring || !v->t || p->sharp_v) {
        return false;
    }
    /* most values printed have no methods at all: the elements of a large list or map */
    if (v->t->nmethods == 0 && (v->t->kind != TK_PTR || !v->t->elem || v->t->elem->nmethods == 0)) {
        return false;
    }
    switch (verb) {
    case 'v':
    case 's':
    case 'x':
    case 'X':
    case 'q': {
        tv s;
        if (call_stringer(p, v, "Error", &s) || call_stringer(p, v, "String", &s)) {
            fmt_string(p, s.u.s->s, s.u.s->len, verb);
            return true;
        }
        return false;
    }
    default:
        return false;
    }
}

static void fmt_pointer(pp *p, const tv *v, int32_t verb)
{
    uintptr_t u = 0;
    switch (tv_kind(v)) {
    case TK_CHAN:
    case TK_FUNC:
    case TK_MAP:
    case TK_PTR:
    case TK_SLICE:
        u = (uintptr_t)v->u.o;
        break;
    default:
        bad_verb(p, verb);
        return;
    }
    switch (verb) {
    case 'v':
        if (p->sharp_v) {
            wrc(p, '(');
            wrs(p, v->t->name);
            wrs(p, ")(");
            if (u == 0) {
                wrs(p, "nil");
            } else {
                fmt0x64(p, (uint64_t)u, true);
            }
            wrc(p, ')');
        } else if (u == 0) {
            pad_str(p, "<nil>");
        } else {
            fmt0x64(p, (uint64_t)u, !p->sharp);
        }
        break;
    case 'p':
        fmt0x64(p, (uint64_t)u, !p->sharp);
        break;
    case 'b':
    case 'o':
    case 'd':
    case 'x':
    case 'X':
        fmt_int(p, (uint64_t)u, false, verb);
        break;
    default:
        bad_verb(p, verb);
    }
}

static const tv *list_at(const tv *v, size_t i, tv *tmp)
{
    if (v->t == &T_BYTES) {
        *tmp = tv_uint(&T_UINT8, (unsigned char)v->u.s->s[i]);
        return tmp;
    }
    return &v->u.l->items[i];
}

static void print_value_body(pp *p, const tv *v, int32_t verb, int depth);

/* Whether printing @p v at @p depth prints the values inside it. */
static bool prints_contents(const tv *v, int depth)
{
    switch (tv_kind(v)) {
    case TK_MAP:
    case TK_STRUCT:
        return true;
    case TK_ARRAY:
    case TK_SLICE:
        return v->t != &T_BYTES;
    case TK_PTR:
        return depth == 0 && v->u.o && v->t->elem;
    default:
        return false;
    }
}

/* printValue, with a bound on the depth (a map can contain itself) and a stop once the output
 * is full: what is left could only be thrown away, and a value that shares its parts prints
 * exponentially many of them. */
static void print_value(pp *p, const tv *v, int32_t verb, int depth)
{
    if (p->rc || p->failed) {
        return;
    }
    if (!prints_contents(v, depth)) {
        print_value_body(p, v, verb, depth);
        return;
    }
    int rc = co_budget_tick();
    if (rc < 0) {
        p->failed = true;
        tpl_ignore(tpl_fail_budget(p->x, rc));
        return;
    }
    int in = tv_path_enter(&p->path, v);
    if (in < 0) {
        p->failed = true;
        tpl_ignore(tv_path_fail(p->x, &p->path, v));
        return;
    }
    print_value_body(p, v, verb, depth);
    if (in > 0) {
        tv_path_leave(&p->path);
    }
}

static void print_value_body(pp *p, const tv *v, int32_t verb, int depth)
{
    if (depth > 0 && v->t && v->t->kind != TK_IFACE) {
        const tv *saved = p->arg;
        p->arg = v;
        if (handle_methods(p, v, verb)) {
            p->arg = saved;
            return;
        }
    }
    p->arg = NULL;
    p->value = v;
    switch (tv_kind(v)) {
    case TK_INVALID:
        if (depth == 0) {
            wrs(p, "<invalid reflect.Value>");
        } else if (verb == 'v') {
            wrs(p, "<nil>");
        } else {
            bad_verb(p, verb);
        }
        break;
    case TK_BOOL:
        fmt_bool(p, v->u.b, verb);
        break;
    case TK_INT:
    case TK_INT8:
    case TK_INT16:
    case TK_INT32:
    case TK_INT64:
        fmt_int(p, (uint64_t)v->u.i, true, verb);
        break;
    case TK_UINT:
    case TK_UINT8:
    case TK_UINT16:
    case TK_UINT32:
    case TK_UINT64:
    case TK_UINTPTR:
        fmt_int(p, v->u.u, false, verb);
        break;
    case TK_FLOAT32:
        fmt_float(p, v->u.f, true, verb);
        break;
    case TK_FLOAT64:
        fmt_float(p, v->u.f, false, verb);
        break;
    case TK_COMPLEX64:
    case TK_COMPLEX128:
        fmt_complex(p, v->u.c, verb);
        break;
    case TK_STRING:
        fmt_string(p, v->u.s->s, v->u.s->len, verb);
        break;
    case TK_MAP: {
        if (p->sharp_v) {
            wrs(p, v->t->name);
            if (!v->u.m) {
                wrs(p, "(nil)");
                return;
            }
            wrc(p, '{');
        } else {
            wrs(p, "map[");
        }
        if (v->u.m && v->u.m->n) {
            tv_map *m = v->u.m;
            size_t n = m->n;
            const uint32_t *order = tv_map_sorted(p->x, m);
            for (size_t i = 0; i < n; i++) {
                if (i > 0) {
                    if (p->sharp_v) {
                        wrs(p, ", ");
                    } else {
                        wrc(p, ' ');
                    }
                }
                tv k = {&T_STRING, {.s = m->keys[order[i]]}};
                print_value(p, &k, verb, depth + 1);
                wrc(p, ':');
                print_value(p, &m->vals[order[i]], verb, depth + 1);
            }
        }
        wrc(p, p->sharp_v ? '}' : ']');
        break;
    }
    case TK_STRUCT: {
        if (p->sharp_v) {
            wrs(p, v->t->name);
        }
        wrc(p, '{');
        for (size_t i = 0; i < v->t->nfields; i++) {
            if (i > 0) {
                if (p->sharp_v) {
                    wrs(p, ", ");
                } else {
                    wrc(p, ' ');
                }
            }
            if (p->plus_v || p->sharp_v) {
                wrs(p, v->t->fields[i].name);
                wrc(p, ':');
            }
            if (v->u.o) {
                print_value(p, &v->u.o->fields[i], verb, depth + 1);
            } else {
                tv z = tv_invalid();
                print_value(p, &z, verb, depth + 1);
            }
        }
        wrc(p, '}');
        break;
    }
    case TK_IFACE:
        if (p->sharp_v) {
            wrs(p, v->t->name);
            wrs(p, "(nil)");
        } else {
            wrs(p, "<nil>");
        }
        break;
    case TK_ARRAY:
    case TK_SLICE: {
        if (v->t == &T_BYTES || (v->t->elem && v->t->elem->kind == TK_UINT8)) {
            if (verb == 's' || verb == 'q' || verb == 'x' || verb == 'X') {
                fmt_bytes(p, v, verb, v->t->name);
                return;
            }
        }
        if (p->sharp_v) {
            wrs(p, v->t->name);
            if (tv_is_nil(v)) {
                wrs(p, "(nil)");
                return;
            }
            wrc(p, '{');
        } else {
            wrc(p, '[');
        }
        int64_t n = tv_len(v);
        for (int64_t i = 0; i < n; i++) {
            if (i > 0) {
                if (p->sharp_v) {
                    wrs(p, ", ");
                } else {
                    wrc(p, ' ');
                }
            }
            tv tmp;
            const tv *e = list_at(v, (size_t)i, &tmp);
            print_value(p, e, verb, depth + 1);
        }
        wrc(p, p->sharp_v ? '}' : ']');
        break;
    }
    case TK_PTR:
        if (depth == 0 && v->u.o && v->t->elem) {
            switch (v->t->elem->kind) {
            case TK_ARRAY:
            case TK_SLICE:
            case TK_STRUCT:
            case TK_MAP: {
                wrc(p, '&');
                tv s = {v->t->elem, {.o = v->u.o}};
                print_value(p, &s, verb, depth + 1);
                return;
            }
            default:
                break;
            }
        }
        fmt_pointer(p, v, verb);
        break;
    case TK_CHAN:
    case TK_FUNC:
        fmt_pointer(p, v, verb);
        break;
    default:
        wrs(p, "?");
        break;
    }
}

static void print_arg(pp *p, const tv *arg, int32_t verb)
{
    p->arg = arg;
    p->value = NULL;
    if (!arg->t || arg->t->kind == TK_IFACE) {
        /* an untyped nil */
        p->arg = NULL;
        if (verb == 'T' || verb == 'v') {
            pad_str(p, "<nil>");
        } else {
            bad_verb(p, verb);
        }
        return;
    }
    if (verb == 'T') {
        const char *name = arg->t->name;
        pad(p, name, truncate_len(p, name, strlen(name)));
        return;
    }
    if (verb == 'p') {
        fmt_pointer(p, arg, 'p');
        return;
    }
    /* basic types print directly; types with methods go through handleMethods */
    if (arg->t->nmethods == 0 &&
        !(arg->t->kind == TK_PTR && arg->t->elem && arg->t->elem->nmethods)) {
        switch (tv_kind(arg)) {
        case TK_BOOL:
            fmt_bool(p, arg->u.b, verb);
            return;
        case TK_FLOAT32:
            fmt_float(p, arg->u.f, true, verb);
            return;
        case TK_FLOAT64:
            fmt_float(p, arg->u.f, false, verb);
            return;
        case TK_COMPLEX64:
        case TK_COMPLEX128:
            fmt_complex(p, arg->u.c, verb);
            return;
        case TK_INT:
        case TK_INT8:
        case TK_INT16:
        case TK_INT32:
        case TK_INT64:
            fmt_int(p, (uint64_t)arg->u.i, true, verb);
            return;
        case TK_UINT:
        case TK_UINT8:
        case TK_UINT16:
        case TK_UINT32:
        case TK_UINT64:
        case TK_UINTPTR:
            fmt_int(p, arg->u.u, false, verb);
            return;
        case TK_STRING:
            fmt_string(p, arg->u.s->s, arg->u.s->len, verb);
            return;
        default:
            break;
        }
        if (arg->t == &T_BYTES) {
            fmt_bytes(p, arg, verb, "[]byte");
            return;
        }
    }
    if (!handle_methods(p, arg, verb)) {
        print_value(p, arg, verb, 0);
    }
}

static void pp_init(pp *p, tpl_x *x, co_buf *b)
{
    memset(p, 0, offsetof(pp, path));
    p->path.n = 0;
    p->x = x;
    p->b = b;
}

static int pp_done(pp *p)
{
    if (p->failed) {
        return -1;
    }
    if (p->rc) {
        return tpl_fail_out(p->x, p->b);
    }
    return 0;
}

static bool is_string_kind(const tv *v)
{
    return v->t && v->t->kind == TK_STRING;
}

int tpl_sprint(tpl_x *x, co_buf *b, const tv *args, size_t n)
{
    pp p;
    pp_init(&p, x, b);
    bool prev_string = false;
    for (size_t i = 0; i < n; i++) {
        bool is_string = is_string_kind(&args[i]);
        if (i > 0 && !is_string && !prev_string) {
            wrc(&p, ' ');
        }
        clear_flags(&p);
        print_arg(&p, &args[i], 'v');
        prev_string = is_string;
    }
    return pp_done(&p);
}

int tpl_sprintln(tpl_x *x, co_buf *b, const tv *args, size_t n)
{
    pp p;
    pp_init(&p, x, b);
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            wrc(&p, ' ');
        }
        clear_flags(&p);
        print_arg(&p, &args[i], 'v');
    }
    wrc(&p, '\n');
    return pp_done(&p);
}

int tpl_print_value(tpl_x *x, co_buf *b, const tv *v)
{
    return tpl_sprint(x, b, v, 1);
}

static bool too_large(int x)
{
    return x > 1000000 || x < -1000000;
}

static int parsenum(const char *s, size_t start, size_t end, bool *isnum, size_t *newi)
{
    int num = 0;
    *isnum = false;
    size_t i = start;
    if (start >= end) {
        *newi = end;
        return 0;
    }
    for (; i < end && s[i] >= '0' && s[i] <= '9'; i++) {
        if (too_large(num)) {
            *isnum = false;
            *newi = end;
            return 0;
        }
        num = num * 10 + (s[i] - '0');
        *isnum = true;
    }
    *newi = i;
    return num;
}

static int int_from_arg(const tv *a, size_t n, size_t *argnum, bool *is_int)
{
    int num = 0;
    *is_int = false;
    if (*argnum < n) {
        const tv *v = &a[*argnum];
        int64_t wide = 0;
        if (tk_is_int(tv_kind(v))) {
            wide = v->u.i;
            *is_int = true;
        } else if (tk_is_uint(tv_kind(v)) && v->u.u <= (uint64_t)INT64_MAX) {
            wide = (int64_t)v->u.u;
            *is_int = true;
        }
        (*argnum)++;
        if (wide > 1000000 || wide < -1000000) {
            num = 0;
            *is_int = false;
        } else {
            num = (int)wide;
        }
    }
    return num;
}

/* argNumber: parses "[n]" at format[i]. */
static size_t arg_number(pp *p,
                         size_t *argnum,
                         const char *f,
                         size_t i,
                         size_t end,
                         size_t n,
                         bool *found,
                         bool *reordered,
                         bool *good)
{
    *found = false;
    if (i >= end || f[i] != '[') {
        return i;
    }
    *reordered = true;
    /* parseArgNumber */
    size_t len = end - i;
    int index = 0;
    size_t wid = 1;
    bool ok = false;
    if (len >= 3) {
        for (size_t k = 1; k < len; k++) {
            if (f[i + k] == ']') {
                bool isnum;
                size_t newi;
                int w = parsenum(f + i, 1, k, &isnum, &newi);
                if (!isnum || newi != k) {
                    wid = k + 1;
                    ok = false;
                } else {
                    index = w - 1;
                    wid = k + 1;
                    ok = true;
                }
                break;
            }
        }
    }
    (void)p;
    if (ok && index >= 0 && (size_t)index < n) {
        *argnum = (size_t)index;
        *found = true;
        return i + wid;
    }
    *good = false;
    *found = ok;
    return i + wid;
}

int tpl_sprintf(tpl_x *x, co_buf *b, const char *f, size_t end, const tv *a, size_t n)
{
    pp p;
    pp_init(&p, x, b);
    size_t argnum = 0;
    bool after_index = false;
    bool reordered = false;
    size_t i = 0;
    while (i < end) {
        bool good = true;
        size_t lasti = i;
        while (i < end && f[i] != '%') {
            i++;
        }
        if (i > lasti) {
            wr(&p, f + lasti, i - lasti);
        }
        if (i >= end) {
            break;
        }
        i++;
        clear_flags(&p);
        bool simple_done = false;
        for (; i < end; i++) {
            char c = f[i];
            if (c == '#') {
                p.sharp = true;
            } else if (c == '0') {
                p.zero = !p.minus;
            } else if (c == '+') {
                p.plus = true;
            } else if (c == '-') {
                p.minus = true;
                p.zero = false;
            } else if (c == ' ') {
                p.space = true;
            } else {
                if (c >= 'a' && c <= 'z' && argnum < n) {
                    if (c == 'v') {
                        p.sharp_v = p.sharp;
                        p.sharp = false;
                        p.plus_v = p.plus;
                        p.plus = false;
                    }
                    print_arg(&p, &a[argnum], (int32_t)c);
                    argnum++;
                    i++;
                    simple_done = true;
                }
                break;
            }
        }
        if (simple_done) {
            continue;
        }
        i = arg_number(&p, &argnum, f, i, end, n, &after_index, &reordered, &good);
        if (i < end && f[i] == '*') {
            i++;
            p.wid = int_from_arg(a, n, &argnum, &p.wid_present);
            if (!p.wid_present) {
                wrs(&p, "%!(BADWIDTH)");
            }
            if (p.wid < 0) {
                p.wid = -p.wid;
                p.minus = true;
                p.zero = false;
            }
            after_index = false;
        } else {
            size_t newi;
            p.wid = parsenum(f, i, end, &p.wid_present, &newi);
            i = newi;
            if (after_index && p.wid_present) {
                good = false;
            }
        }
        if (i + 1 < end && f[i] == '.') {
            i++;
            if (after_index) {
                good = false;
            }
            i = arg_number(&p, &argnum, f, i, end, n, &after_index, &reordered, &good);
            if (i < end && f[i] == '*') {
                i++;
                p.prec = int_from_arg(a, n, &argnum, &p.prec_present);
                if (p.prec < 0) {
                    p.prec = 0;
                    p.prec_present = false;
                }
                if (!p.prec_present) {
                    wrs(&p, "%!(BADPREC)");
                }
                after_index = false;
            } else {
                size_t newi;
                p.prec = parsenum(f, i, end, &p.prec_present, &newi);
                i = newi;
                if (!p.prec_present) {
                    p.prec = 0;
                    p.prec_present = true;
                }
            }
        }
        if (!after_index) {
            i = arg_number(&p, &argnum, f, i, end, n, &after_index, &reordered, &good);
        }
        if (i >= end) {
            wrs(&p, "%!(NOVERB)");
            break;
        }
        int32_t verb = (unsigned char)f[i];
        size_t size = 1;
        if (verb >= 0x80) {
            verb = co_utf8_decode_rune(f + i, end - i, &size);
        }
        i += size;
        if (verb == '%') {
            wrc(&p, '%');
        } else if (!good) {
            wrs(&p, "%!");
            wr_rune(&p, verb);
            wrs(&p, "(BADINDEX)");
        } else if (argnum >= n) {
            wrs(&p, "%!");
            wr_rune(&p, verb);
            wrs(&p, "(MISSING)");
        } else {
            if (verb == 'v') {
                p.sharp_v = p.sharp;
                p.sharp = false;
                p.plus_v = p.plus;
                p.plus = false;
            }
            print_arg(&p, &a[argnum], verb);
            argnum++;
        }
    }
    if (!reordered && argnum < n) {
        clear_flags(&p);
        wrs(&p, "%!(EXTRA ");
        for (size_t k = argnum; k < n; k++) {
            if (k > argnum) {
                wrs(&p, ", ");
            }
            if (!a[k].t || a[k].t->kind == TK_IFACE) {
                wrs(&p, "<nil>");
            } else {
                wrs(&p, a[k].t->name);
                wrc(&p, '=');
                print_arg(&p, &a[k], 'v');
            }
        }
        wrc(&p, ')');
    }
    return pp_done(&p);
}
