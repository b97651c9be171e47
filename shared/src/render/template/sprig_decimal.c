/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sprig's float math (addf, add1f, subf, mulf, divf): like the original, every operand
 * becomes the exact decimal of its shortest float64 representation (shopspring/decimal's
 * NewFromFloat), the operations are exact decimal arithmetic (division rounds half away from
 * zero at 16 decimal places), and the result is the float64 nearest to the exact decimal.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "sprig.h"

/* A decimal: (-1)^neg * digits * 10^exp, digits most significant first, no leading zeros
 * (n == 0 is zero). Digits live in the session arena. */
typedef struct dec {
    bool neg;
    int exp;
    size_t n;
    uint8_t *d;
} dec;

static void trim(dec *a)
{
    size_t k = 0;
    while (k < a->n && a->d[k] == 0) {
        k++;
    }
    a->d += k;
    a->n -= k;
    if (a->n == 0) {
        a->neg = false;
        a->exp = 0;
    }
}

/* NewFromFloat: the shortest representation, exactly. */
static int from_float(tpl_x *x, double f, dec *out)
{
    if (isnan(f) || isinf(f)) {
        co_buf g = CO_BUF_INIT(64);
        tpl_ignore(tpl_format_float(&g, f, 'g', -1));
        int rc = tpl_fail(x, "Cannot create a Decimal from %.*s", (int)g.len, g.ptr);
        co_buf_dispose(&g);
        return rc;
    }
    memset(out, 0, sizeof(*out));
    if (f == 0) {
        return 0;
    }
    co_buf g = CO_BUF_INIT(64);
    tpl_ignore(tpl_format_float(&g, f, 'e', -1));
    const char *s = g.ptr;
    out->d = tpl_alloc(x, g.len + 1);
    size_t i = 0;
    if (s[i] == '-') {
        out->neg = true;
        i++;
    }
    int frac = 0;
    bool point = false;
    for (; i < g.len && s[i] != 'e'; i++) {
        if (s[i] == '.') {
            point = true;
            continue;
        }
        out->d[out->n++] = (uint8_t)(s[i] - '0');
        frac += point ? 1 : 0;
    }
    int e = i < g.len ? (int)strtol(s + i + 1, NULL, 10) : 0;
    out->exp = e - frac;
    co_buf_dispose(&g);
    trim(out);
    return 0;
}

/* @a with @k zeros appended (exp lowered by k). */
static dec shifted(tpl_x *x, const dec *a, int k)
{
    dec r = *a;
    if (a->n == 0 || k <= 0) {
        return r;
    }
    r.d = tpl_alloc(x, a->n + (size_t)k);
    memcpy(r.d, a->d, a->n);
    memset(r.d + a->n, 0, (size_t)k);
    r.n = a->n + (size_t)k;
    r.exp = a->exp - k;
    return r;
}

static int cmp_mag(const dec *a, const dec *b)
{
    if (a->n != b->n) {
        return a->n < b->n ? -1 : 1;
    }
    int c = memcmp(a->d, b->d, a->n);
    return c < 0 ? -1 : c > 0 ? 1 : 0;
}

/* |a| + |b| or |a| - |b| (|a| >= |b|) for equal exponents */
static dec add_mag(tpl_x *x, const dec *a, const dec *b, bool sub)
{
    size_t n = (a->n > b->n ? a->n : b->n) + 1;
    dec r = {false, a->exp, n, tpl_alloc(x, n)};
    int carry = 0;
    for (size_t i = 0; i < n; i++) {
        int da = i < a->n ? a->d[a->n - 1 - i] : 0;
        int db = i < b->n ? b->d[b->n - 1 - i] : 0;
        int v = sub ? da - db - carry : da + db + carry;
        carry = sub ? (v < 0) : (v >= 10);
        if (sub && v < 0) {
            v += 10;
        } else if (!sub && v >= 10) {
            v -= 10;
        }
        r.d[n - 1 - i] = (uint8_t)v;
    }
    trim(&r);
    return r;
}

static dec add(tpl_x *x, const dec *a0, const dec *b0)
{
    if (a0->n == 0) {
        return *b0;
    }
    if (b0->n == 0) {
        return *a0;
    }
    int e = a0->exp < b0->exp ? a0->exp : b0->exp;
    dec a = shifted(x, a0, a0->exp - e);
    dec b = shifted(x, b0, b0->exp - e);
    dec r;
    if (a.neg == b.neg) {
        r = add_mag(x, &a, &b, false);
        r.neg = a.neg && r.n > 0;
    } else if (cmp_mag(&a, &b) >= 0) {
        r = add_mag(x, &a, &b, true);
        r.neg = a.neg && r.n > 0;
    } else {
        r = add_mag(x, &b, &a, true);
        r.neg = b.neg && r.n > 0;
    }
    if (r.n > 0) {
        r.exp = e;
    }
    return r;
}

static dec mul(tpl_x *x, const dec *a, const dec *b)
{
    if (a->n == 0 || b->n == 0) {
        dec z = {0};
        return z;
    }
    size_t n = a->n + b->n;
    uint32_t *acc = tpl_alloc(x, n * sizeof(uint32_t));
    memset(acc, 0, n * sizeof(uint32_t));
    for (size_t i = 0; i < a->n; i++) {
        for (size_t j = 0; j < b->n; j++) {
            acc[i + j + 1] += (uint32_t)a->d[i] * b->d[j];
        }
        /* normalise now and then so that the sums never overflow */
        if ((i & 1023) == 1023) {
            for (size_t k = n - 1; k > 0; k--) {
                acc[k - 1] += acc[k] / 10;
                acc[k] %= 10;
            }
        }
    }
    for (size_t k = n - 1; k > 0; k--) {
        acc[k - 1] += acc[k] / 10;
        acc[k] %= 10;
    }
    dec r = {a->neg != b->neg, a->exp + b->exp, n, tpl_alloc(x, n)};
    for (size_t k = 0; k < n; k++) {
        r.d[k] = (uint8_t)acc[k];
    }
    trim(&r);
    return r;
}

/* DivRound(b, 16): the quotient at 16 decimal places, half away from zero. */
static int divide(tpl_x *x, const dec *a, const dec *b, dec *out)
{
    if (b->n == 0) {
        return tpl_fail(x, "decimal division by 0");
    }
    dec q = {0};
    if (a->n == 0) {
        *out = q;
        return 0;
    }
    /* integer division of A = a.d * 10^s1 by B = b.d * 10^s2 with the quotient at 10^-16 */
    int e = a->exp - b->exp + 16; /* A/B = (a.d * 10^e / b.d) * 10^-16 */
    dec num = {false, 0, a->n, a->d};
    dec den = {false, 0, b->n, b->d};
    if (e > 0) {
        num = shifted(x, &num, e);
    } else if (e < 0) {
        den = shifted(x, &den, -e);
    }
    num.exp = 0;
    den.exp = 0;
    /* long division; the remainder stays below the divisor, so den.n + 1 digits hold it */
    q.d = tpl_alloc(x, num.n + 1);
    uint8_t *rd = tpl_alloc(x, den.n + 2);
    dec rem = {false, 0, 0, rd};
    for (size_t i = 0; i < num.n; i++) {
        if (rem.n > 0 || num.d[i] != 0) {
            rd[rem.n++] = num.d[i];
        }
        uint8_t digit = 0;
        while (cmp_mag(&rem, &den) >= 0) {
            /* rem -= den, in place */
            int borrow = 0;
            for (size_t k = 0; k < rem.n; k++) {
                int v = rd[rem.n - 1 - k] - (k < den.n ? den.d[den.n - 1 - k] : 0) - borrow;
                borrow = v < 0;
                rd[rem.n - 1 - k] = (uint8_t)(v < 0 ? v + 10 : v);
            }
            size_t lead = 0;
            while (lead < rem.n && rd[lead] == 0) {
                lead++;
            }
            memmove(rd, rd + lead, rem.n - lead);
            rem.n -= lead;
            digit++;
        }
        q.d[q.n++] = digit;
    }
    trim(&q);
    q.exp = q.n ? -16 : 0;
    /* round: 2 * remainder >= divisor moves away from zero */
    dec two = {false, 0, 1, (uint8_t[]){2}};
    dec r2 = mul(x, &rem, &two);
    r2.exp = 0;
    if (rem.n > 0 && cmp_mag(&r2, &den) >= 0) {
        /* the unit may become the quotient itself: its digit must outlive this function */
        uint8_t *unit = tpl_alloc(x, 1);
        unit[0] = 1;
        dec one = {false, -16, 1, unit};
        dec qq = q;
        qq.neg = false;
        qq.exp = -16;
        if (q.n == 0) {
            qq = one;
        } else {
            qq = add(x, &qq, &one);
        }
        q = qq;
    }
    q.neg = (a->neg != b->neg) && q.n > 0;
    *out = q;
    return 0;
}

/* The float64 nearest to the decimal. */
static double to_float(tpl_x *x, const dec *a)
{
    if (a->n == 0) {
        return 0;
    }
    char *s = tpl_alloc(x, a->n + 32);
    size_t k = 0;
    if (a->neg) {
        s[k++] = '-';
    }
    for (size_t i = 0; i < a->n; i++) {
        s[k++] = (char)('0' + a->d[i]);
    }
    snprintf(s + k, 24, "e%d", a->exp);
    return strtod(s, NULL);
}

static double f64(const tv *v)
{
    double f = 0;
    return sp_to_float64(v, &f) ? f : 0;
}

typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV } decop;

/* Exact results of float64 operands stay far below this unless a template chains thousands
 * of operations; past it the work would grow without bound. */
enum { MAX_DIGITS = 8192 };

static int decimal_op(tpl_x *x, tv *ret, double first, const tv *rest, size_t n, decop op)
{
    dec acc = {0};
    if (from_float(x, first, &acc) < 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        dec v = {0};
        if (from_float(x, f64(&rest[i]), &v) < 0) {
            return -1;
        }
        if (acc.n > MAX_DIGITS) {
            return tpl_fail_code(x, CO_ETOOBIG, "decimal result longer than %d digits", MAX_DIGITS);
        }
        switch (op) {
        case OP_ADD:
            acc = add(x, &acc, &v);
            break;
        case OP_SUB:
            v.neg = !v.neg && v.n > 0;
            acc = add(x, &acc, &v);
            break;
        case OP_MUL:
            acc = mul(x, &acc, &v);
            break;
        case OP_DIV:
            if (divide(x, &acc, &v, &acc) < 0) {
                return -1;
            }
            break;
        }
    }
    *ret = tv_float(to_float(x, &acc));
    return 0;
}

static int fn_addf(tpl_x *x, tv *ret, tv *a, size_t n)
{
    return decimal_op(x, ret, 0, a, n, OP_ADD);
}

static int fn_add1f(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    tv one = tv_int(&T_INT, 1);
    return decimal_op(x, ret, f64(&a[0]), &one, 1, OP_ADD);
}

static int fn_subf(tpl_x *x, tv *ret, tv *a, size_t n)
{
    return decimal_op(x, ret, f64(&a[0]), a + 1, n - 1, OP_SUB);
}

static int fn_mulf(tpl_x *x, tv *ret, tv *a, size_t n)
{
    return decimal_op(x, ret, f64(&a[0]), a + 1, n - 1, OP_MUL);
}

static int fn_divf(tpl_x *x, tv *ret, tv *a, size_t n)
{
    return decimal_op(x, ret, f64(&a[0]), a + 1, n - 1, OP_DIV);
}

static const tv_type *const P_AA[] = {&T_IFACE, &T_IFACE};

static const tpl_func funcs[] = {
    TPL_FUNC("add1f", fn_add1f, SP_A, 1, false, false, &T_FLOAT64),
    TPL_FUNC("addf", fn_addf, SP_A, 1, true, false, &T_FLOAT64),
    TPL_FUNC("divf", fn_divf, P_AA, 2, true, false, &T_FLOAT64),
    TPL_FUNC("mulf", fn_mulf, P_AA, 2, true, false, &T_FLOAT64),
    TPL_FUNC("subf", fn_subf, P_AA, 2, true, false, &T_FLOAT64),
};

void tpl_register_sprig_decimal(co_template_funcs *f)
{
    tpl_register_all(f, funcs, CO_ARRAY_SIZE(funcs));
}
