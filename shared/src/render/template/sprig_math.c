/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sprig's integer and float math and its numeric conversions (numeric.go and the wrappers in
 * functions.go): every operand goes through spf13/cast as in the original, so strings,
 * bools and nil count as numbers and unconvertible values as 0.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "co/util/strconv.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "sprig.h"

static int64_t i64(const tv *v)
{
    int64_t i = 0;
    return sp_to_int64(v, &i) ? i : 0;
}

static double f64(const tv *v)
{
    double f = 0;
    return sp_to_float64(v, &f) ? f : 0;
}

static uint64_t wrap_add(int64_t a, int64_t b)
{
    return (uint64_t)a + (uint64_t)b;
}

static int fn_add(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
        s = wrap_add((int64_t)s, i64(&a[i]));
    }
    *ret = tv_int(&T_INT64, (int64_t)s);
    return 0;
}

static int fn_add1(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    *ret = tv_int(&T_INT64, (int64_t)wrap_add(i64(&a[0]), 1));
    return 0;
}

static int fn_sub(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    *ret = tv_int(&T_INT64, (int64_t)((uint64_t)i64(&a[0]) - (uint64_t)i64(&a[1])));
    return 0;
}

static int fn_mul(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    uint64_t v = (uint64_t)i64(&a[0]);
    for (size_t i = 1; i < n; i++) {
        v *= (uint64_t)i64(&a[i]);
    }
    *ret = tv_int(&T_INT64, (int64_t)v);
    return 0;
}

static int fn_div(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t l = i64(&a[0]);
    int64_t r = i64(&a[1]);
    if (r == 0) {
        return tpl_fail(x, "runtime error: integer divide by zero");
    }
    *ret = tv_int(&T_INT64, r == -1 ? (int64_t)(0 - (uint64_t)l) : l / r);
    return 0;
}

static int fn_mod(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t l = i64(&a[0]);
    int64_t r = i64(&a[1]);
    if (r == 0) {
        return tpl_fail(x, "runtime error: integer divide by zero");
    }
    *ret = tv_int(&T_INT64, r == -1 ? 0 : l % r);
    return 0;
}

static int fn_max(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    int64_t m = i64(&a[0]);
    for (size_t i = 1; i < n; i++) {
        int64_t b = i64(&a[i]);
        m = b > m ? b : m;
    }
    *ret = tv_int(&T_INT64, m);
    return 0;
}

static int fn_min(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    int64_t m = i64(&a[0]);
    for (size_t i = 1; i < n; i++) {
        int64_t b = i64(&a[i]);
        m = b < m ? b : m;
    }
    *ret = tv_int(&T_INT64, m);
    return 0;
}

/* math.Max / math.Min with Go's NaN and signed-zero rules */
static double go_max(double a, double b)
{
    if (isinf(a) && a > 0) {
        return a;
    }
    if (isinf(b) && b > 0) {
        return b;
    }
    if (isnan(a) || isnan(b)) {
        return NAN;
    }
    if (a == 0 && a == b) {
        return signbit(a) ? b : a;
    }
    return a > b ? a : b;
}

static double go_min(double a, double b)
{
    if (isinf(a) && a < 0) {
        return a;
    }
    if (isinf(b) && b < 0) {
        return b;
    }
    if (isnan(a) || isnan(b)) {
        return NAN;
    }
    if (a == 0 && a == b) {
        return signbit(a) ? a : b;
    }
    return a < b ? a : b;
}

static int fn_maxf(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    double m = f64(&a[0]);
    for (size_t i = 1; i < n; i++) {
        m = go_max(m, f64(&a[i]));
    }
    *ret = tv_float(m);
    return 0;
}

static int fn_minf(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    double m = f64(&a[0]);
    for (size_t i = 1; i < n; i++) {
        m = go_min(m, f64(&a[i]));
    }
    *ret = tv_float(m);
    return 0;
}

static int fn_floor(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    *ret = tv_float(floor(f64(&a[0])));
    return 0;
}

static int fn_ceil(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    *ret = tv_float(ceil(f64(&a[0])));
    return 0;
}

static int fn_round(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    double on = n > 2 ? a[2].u.f : 0.5;
    double val = f64(&a[0]);
    double places = (double)a[1].u.i;
    double p = pow(10, places);
    double digit = p * val;
    double ip;
    double frac = modf(digit, &ip);
    double r = frac >= on ? ceil(digit) : floor(digit);
    *ret = tv_float(r / p);
    return 0;
}

static int fn_int(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    *ret = tv_int(&T_INT, i64(&a[0]));
    return 0;
}

static int fn_int64(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    *ret = tv_int(&T_INT64, i64(&a[0]));
    return 0;
}

static int fn_float64(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    *ret = tv_float(f64(&a[0]));
    return 0;
}

/* strconv.Atoi, errors ignored: a syntax error gives 0, a range error the clamped value */
static int fn_atoi(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    const tv_str *s = a[0].u.s;
    int64_t v = 0;
    bool digits = s->len > 0;
    size_t start = s->len > 0 && (s->s[0] == '+' || s->s[0] == '-') ? 1 : 0;
    if (start == s->len) {
        digits = false;
    }
    for (size_t i = start; i < s->len && digits; i++) {
        digits = s->s[i] >= '0' && s->s[i] <= '9';
    }
    if (digits && (co_strconv_parse_int(&v, s->s, s->len, 10, 0) != 0)) {
        v = s->s[0] == '-' ? INT64_MIN : INT64_MAX;
    } else if (!digits) {
        v = 0;
    }
    *ret = tv_int(&T_INT, v);
    return 0;
}

static int fn_to_decimal(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf b = CO_BUF_INIT(tpl_out_cap());
    int64_t v = 0;
    if (tpl_sprint(x, &b, &a[0], 1) < 0) {
        co_buf_dispose(&b);
        return -1;
    }
    if (co_strconv_parse_int(&v, b.ptr ? b.ptr : "", b.len, 8, 0) != 0) {
        v = 0;
    }
    co_buf_dispose(&b);
    *ret = tv_int(&T_INT64, v);
    return 0;
}

/* untilStep: the integers from start towards stop */
static int until_step(tpl_x *x, tv *ret, int64_t start, int64_t stop, int64_t step)
{
    uint64_t count = 0;
    if (stop < start) {
        if (step < 0) {
            count = ((uint64_t)start - (uint64_t)stop + (uint64_t)(-(step + 1))) /
                    ((uint64_t)(-(step + 1)) + 1);
        }
    } else if (step > 0) {
        count = ((uint64_t)stop - (uint64_t)start + (uint64_t)step - 1) / (uint64_t)step;
    }
    if (tpl_reserve(x, count > SIZE_MAX / sizeof(tv) ? SIZE_MAX / sizeof(tv) : (size_t)count,
                    sizeof(tv)) < 0) {
        return -1;
    }
    tv l = tv_list_new(x, &T_LIST_INT, (size_t)count);
    int64_t v = start;
    for (uint64_t i = 0; i < count; i++) {
        l.u.l->items[i] = tv_int(&T_INT, v);
        v = (int64_t)((uint64_t)v + (uint64_t)step);
    }
    *ret = l;
    return 0;
}

static int fn_until(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t c = a[0].u.i;
    return until_step(x, ret, 0, c, c < 0 ? -1 : 1);
}

static int fn_until_step(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return until_step(x, ret, a[0].u.i, a[1].u.i, a[2].u.i);
}

static int fn_seq(tpl_x *x, tv *ret, tv *a, size_t n)
{
    tv l = tv_nil(&T_LIST_INT);
    int rc = 0;
    switch (n) {
    case 1: {
        int64_t end = a[0].u.i;
        int64_t inc = end < 1 ? -1 : 1;
        rc = until_step(x, &l, 1, end + inc, inc);
        break;
    }
    case 2: {
        int64_t start = a[0].u.i;
        int64_t end = a[1].u.i;
        int64_t step = end < start ? -1 : 1;
        rc = until_step(x, &l, start, end + step, step);
        break;
    }
    case 3: {
        int64_t start = a[0].u.i;
        int64_t step = a[1].u.i;
        int64_t end = a[2].u.i;
        int64_t inc = 1;
        if (end < start) {
            inc = -1;
            if (step > 0) {
                *ret = tv_string(x, "", 0);
                return 0;
            }
        }
        rc = until_step(x, &l, start, end + inc, step);
        break;
    }
    default:
        *ret = tv_string(x, "", 0);
        return 0;
    }
    if (rc < 0) {
        return -1;
    }
    co_buf b = CO_BUF_INIT(tpl_out_cap());
    for (size_t i = 0; l.u.l && i < l.u.l->n && rc == 0; i++) {
        rc = co_buf_printf(&b, i ? " %lld" : "%lld", (long long)l.u.l->items[i].u.i);
    }
    return sp_ret_buf(x, ret, &b, rc);
}

/* ---- table -------------------------------------------------------------------------------- */

static const tv_type *const P_AA[] = {&T_IFACE, &T_IFACE};

static const tpl_func funcs[] = {
    TPL_FUNC("add", fn_add, SP_A, 1, true, false, &T_INT64),
    TPL_FUNC("add1", fn_add1, SP_A, 1, false, false, &T_INT64),
    TPL_FUNC("atoi", fn_atoi, SP_S, 1, false, false, &T_INT),
    TPL_FUNC("biggest", fn_max, P_AA, 2, true, false, &T_INT64),
    TPL_FUNC("ceil", fn_ceil, SP_A, 1, false, false, &T_FLOAT64),
    TPL_FUNC("div", fn_div, P_AA, 2, false, false, &T_INT64),
    TPL_FUNC("float64", fn_float64, SP_A, 1, false, false, &T_FLOAT64),
    TPL_FUNC("floor", fn_floor, SP_A, 1, false, false, &T_FLOAT64),
    TPL_FUNC("int", fn_int, SP_A, 1, false, false, &T_INT),
    TPL_FUNC("int64", fn_int64, SP_A, 1, false, false, &T_INT64),
    TPL_FUNC("max", fn_max, P_AA, 2, true, false, &T_INT64),
    TPL_FUNC("maxf", fn_maxf, P_AA, 2, true, false, &T_FLOAT64),
    TPL_FUNC("min", fn_min, P_AA, 2, true, false, &T_INT64),
    TPL_FUNC("minf", fn_minf, P_AA, 2, true, false, &T_FLOAT64),
    TPL_FUNC("mod", fn_mod, P_AA, 2, false, false, &T_INT64),
    TPL_FUNC("mul", fn_mul, P_AA, 2, true, false, &T_INT64),
    TPL_FUNC("round", fn_round, SP_AIF, 3, true, false, &T_FLOAT64),
    TPL_FUNC("seq", fn_seq, SP_I, 1, true, false, &T_STRING),
    TPL_FUNC("sub", fn_sub, P_AA, 2, false, false, &T_INT64),
    TPL_FUNC("toDecimal", fn_to_decimal, SP_A, 1, false, false, &T_INT64),
    TPL_FUNC("until", fn_until, SP_I, 1, false, false, &T_LIST_INT),
    TPL_FUNC("untilStep", fn_until_step, SP_I, 3, false, false, &T_LIST_INT),
};

void tpl_register_sprig_math(co_template_funcs *f)
{
    tpl_register_all(f, funcs, CO_ARRAY_SIZE(funcs));
}
