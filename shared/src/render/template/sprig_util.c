/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers of the sprig groups: spf13/cast conversions, strval, emptiness, Go's runtime panics
 * as text/template reports them, and encoding/json over template values.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/strconv.h"
#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "sprig.h"

const tv_type *const SP_A[] = {&T_IFACE, &T_IFACE, &T_IFACE};
const tv_type *const SP_S[] = {&T_STRING, &T_STRING, &T_STRING};
const tv_type *const SP_I[] = {&T_INT, &T_INT, &T_INT};
const tv_type *const SP_IS[] = {&T_INT, &T_STRING};
const tv_type *const SP_IIS[] = {&T_INT, &T_INT, &T_STRING};
const tv_type *const SP_ISS[] = {&T_INT, &T_STRING, &T_STRING};
const tv_type *const SP_SIS[] = {&T_STRING, &T_INT, &T_STRING};
const tv_type *const SP_SSI[] = {&T_STRING, &T_STRING, &T_INT};
const tv_type *const SP_SA[] = {&T_STRING, &T_IFACE};
const tv_type *const SP_AAB[] = {&T_IFACE, &T_IFACE, &T_BOOL};
const tv_type *const SP_M[] = {&T_MAP_ANY, &T_MAP_ANY};
const tv_type *const SP_MS[] = {&T_MAP_ANY, &T_STRING};
const tv_type *const SP_MSA[] = {&T_MAP_ANY, &T_STRING, &T_IFACE};
const tv_type *const SP_SM[] = {&T_STRING, &T_MAP_ANY};
const tv_type *const SP_IA[] = {&T_INT, &T_IFACE};
const tv_type *const SP_AIF[] = {&T_IFACE, &T_INT, &T_FLOAT64};

const char *sp_cstr(const tv_str *s)
{
    return s->len ? s->s : "";
}

bool sp_is_nil(const tv *v)
{
    return v->t == NULL || v->t->kind == TK_IFACE;
}

int sp_strval(tpl_x *x, co_buf *b, const tv *v)
{
    if (tv_kind(v) == TK_STRING || v->t == &T_BYTES) {
        if (v->u.s && co_buf_put(b, v->u.s->s, v->u.s->len) < 0) {
            return tpl_fail_out(x, b);
        }
        return 0;
    }
    return tpl_print_value(x, b, v);
}

int sp_strval_tv(tpl_x *x, const tv *v, tv *out)
{
    if (tv_kind(v) == TK_STRING) {
        *out = *v;
        return 0;
    }
    co_buf b = CO_BUF_INIT(tpl_out_cap());
    if (sp_strval(x, &b, v) < 0) {
        co_buf_dispose(&b);
        return -1;
    }
    *out = tv_string_take(x, &b);
    return 0;
}

int64_t sp_f2i(double f)
{
    if (isnan(f) || f >= 9223372036854775808.0 || f < -9223372036854775808.0) {
        return INT64_MIN;
    }
    return (int64_t)f;
}

/* ---- strconv ------------------------------------------------------------------------------ */

static bool ieq(const char *s, size_t len, const char *lit)
{
    return strlen(lit) == len && strncasecmp(s, lit, len) == 0;
}

bool sp_parse_float(const char *s, size_t len, double *out)
{
    if (len == 0 || len > 4096) {
        return false;
    }
    size_t i = 0;
    bool neg = false;
    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        i++;
    }
    if (ieq(s + i, len - i, "inf") || ieq(s + i, len - i, "infinity")) {
        *out = neg ? -INFINITY : INFINITY;
        return true;
    }
    if (i == 0 && ieq(s, len, "nan")) {
        *out = NAN;
        return true;
    }
    /* Go's grammar: digits with an optional point and exponent, or a hex mantissa with a
     * mandatory p exponent; underscores only with a base prefix */
    bool hex = len - i > 2 && s[i] == '0' && (s[i + 1] | 0x20) == 'x';
    char tmp[4100];
    size_t n = 0;
    bool digits = false;
    bool exp = false;
    bool point = false;
    bool underscores = false;
    for (size_t j = 0; j < len; j++) {
        char c = s[j];
        if (c == '_') {
            underscores = true;
            continue;
        }
        bool is_digit = (c >= '0' && c <= '9') ||
                        (hex && !exp && (c | 0x20) >= 'a' && (c | 0x20) <= 'f' && j > i + 1);
        if (is_digit) {
            digits = true;
        } else if (c == '.' && !point && !exp) {
            point = true;
        } else if (!exp && digits && ((hex && (c | 0x20) == 'p') || (!hex && (c | 0x20) == 'e'))) {
            exp = true;
            if (j + 1 < len && (s[j + 1] == '+' || s[j + 1] == '-')) {
                tmp[n++] = c;
                c = s[++j];
            }
            if (j + 1 >= len) {
                return false;
            }
        } else if (j < i || (hex && j == i + 1)) {
            /* sign or the x of the prefix */
        } else {
            return false;
        }
        tmp[n++] = c;
    }
    if (!digits || (hex && !exp) || (underscores && !co_strconv_underscores_ok(s, len))) {
        return false;
    }
    tmp[n] = '\0';
    errno = 0;
    char *end = NULL;
    double d = strtod(tmp, &end);
    if (end != tmp + n) {
        return false;
    }
    if (errno == ERANGE && isinf(d)) {
        return false;
    }
    *out = d;
    return true;
}

/* ---- cast --------------------------------------------------------------------------------- */

/* trimZeroDecimal: "12.000" reads as "12". */
static size_t trim_zero_decimal(const char *s, size_t len)
{
    bool zero = false;
    for (size_t i = len; i > 0; i--) {
        switch (s[i - 1]) {
        case '.':
            if (zero) {
                return i - 1;
            }
            break;
        case '0':
            zero = true;
            break;
        default:
            return len;
        }
    }
    return len;
}

bool sp_to_int64(const tv *v, int64_t *out)
{
    switch (tv_kind(v)) {
    case TK_INVALID:
    case TK_IFACE:
        *out = 0;
        return true;
    case TK_BOOL:
        *out = v->u.b ? 1 : 0;
        return true;
    case TK_INT:
    case TK_INT8:
    case TK_INT16:
    case TK_INT32:
    case TK_INT64:
        *out = v->u.i;
        return true;
    case TK_UINT:
    case TK_UINT8:
    case TK_UINT16:
    case TK_UINT32:
    case TK_UINT64:
    case TK_UINTPTR:
        *out = (int64_t)v->u.u;
        return true;
    case TK_FLOAT32:
    case TK_FLOAT64:
        *out = sp_f2i(v->u.f);
        return true;
    case TK_STRING:
        if (v->t != &T_STRING) {
            break;
        }
        return co_strconv_parse_int(out, v->u.s->s, trim_zero_decimal(v->u.s->s, v->u.s->len), 0,
                                    0) == 0;
    default:
        break;
    }
    return false;
}

bool sp_to_float64(const tv *v, double *out)
{
    switch (tv_kind(v)) {
    case TK_INVALID:
    case TK_IFACE:
        *out = 0;
        return true;
    case TK_BOOL:
        *out = v->u.b ? 1 : 0;
        return true;
    case TK_INT:
    case TK_INT8:
    case TK_INT16:
    case TK_INT32:
    case TK_INT64:
        *out = (double)v->u.i;
        return true;
    case TK_UINT:
    case TK_UINT8:
    case TK_UINT16:
    case TK_UINT32:
    case TK_UINT64:
    case TK_UINTPTR:
        *out = (double)v->u.u;
        return true;
    case TK_FLOAT32:
    case TK_FLOAT64:
        *out = v->u.f;
        return true;
    case TK_STRING:
        if (v->t != &T_STRING) {
            break;
        }
        return sp_parse_float(v->u.s->s, v->u.s->len, out);
    default:
        break;
    }
    return false;
}

bool sp_to_uint64(const tv *v, uint64_t *out)
{
    switch (tv_kind(v)) {
    case TK_INVALID:
    case TK_IFACE:
        *out = 0;
        return true;
    case TK_BOOL:
        *out = v->u.b ? 1 : 0;
        return true;
    case TK_INT:
    case TK_INT8:
    case TK_INT16:
    case TK_INT32:
    case TK_INT64:
        if (v->u.i < 0) {
            return false;
        }
        *out = (uint64_t)v->u.i;
        return true;
    case TK_UINT:
    case TK_UINT8:
    case TK_UINT16:
    case TK_UINT32:
    case TK_UINT64:
    case TK_UINTPTR:
        *out = v->u.u;
        return true;
    case TK_FLOAT32:
    case TK_FLOAT64:
        if (v->u.f < 0) {
            return false;
        }
        if (isnan(v->u.f) || v->u.f >= 18446744073709551616.0) {
            *out = 0x8000000000000000ULL;
        } else {
            *out = (uint64_t)v->u.f;
        }
        return true;
    case TK_STRING: {
        if (v->t != &T_STRING) {
            break;
        }
        size_t n = trim_zero_decimal(v->u.s->s, v->u.s->len);
        int64_t i;
        if (n > 0 && v->u.s->s[0] == '-') {
            return false;
        }
        if (co_strconv_parse_int(&i, v->u.s->s, n, 0, 0) != 0) {
            return false;
        }
        *out = (uint64_t)i;
        return true;
    }
    default:
        break;
    }
    return false;
}

int sp_cast_fail(tpl_x *x, const tv *v, const char *type)
{
    co_buf b = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE / 2);
    static const char f[] = "unable to cast %#v of type %T to ";
    /* a value too large (or deep) for the message is left out */
    static const char brief[] = "unable to cast a value of type %T to ";
    tv args[2] = {*v, *v};
    if (tpl_sprintf(x, &b, f, sizeof(f) - 1, args, 2) < 0) {
        co_buf_reset(&b);
        tpl_ignore(tpl_sprintf(x, &b, brief, sizeof(brief) - 1, args + 1, 1));
    }
    tpl_ignore(co_buf_puts(&b, type));
    int rc = tpl_fail(x, "%.*s", (int)b.len, b.ptr ? b.ptr : "");
    co_buf_dispose(&b);
    return rc;
}

/* ---- results and panics ------------------------------------------------------------------ */

int sp_ret_buf(tpl_x *x, tv *ret, co_buf *b, int rc)
{
    if (rc == -1) {
        co_buf_dispose(b);
        return -1;
    }
    if (rc < 0) {
        co_buf_dispose(b);
        return tpl_fail_out(x, b);
    }
    *ret = tv_string_take(x, b);
    return 0;
}

int sp_panic_nil(tpl_x *x)
{
    return tpl_fail(x, "runtime error: invalid memory address or nil pointer dereference");
}

int sp_panic_slice(tpl_x *x, int64_t lo, int64_t hi, int64_t n, bool has_lo, bool is_string)
{
    if (hi < 0) {
        return tpl_fail(x, "runtime error: slice bounds out of range [:%lld]", (long long)hi);
    }
    if (hi > n) {
        return tpl_fail(x, "runtime error: slice bounds out of range [:%lld] with %s %lld",
                        (long long)hi, is_string ? "length" : "capacity", (long long)n);
    }
    if (has_lo && lo < 0) {
        return tpl_fail(x, "runtime error: slice bounds out of range [%lld:]", (long long)lo);
    }
    return tpl_fail(x, "runtime error: slice bounds out of range [%lld:%lld]", (long long)lo,
                    (long long)hi);
}

static const char *const kind_names[] = {
    "invalid", "bool",      "int",        "int8",   "int16",  "int32",   "int64",
    "uint",    "uint8",     "uint16",     "uint32", "uint64", "uintptr", "float32",
    "float64", "complex64", "complex128", "array",  "chan",   "func",    "interface",
    "map",     "ptr",       "slice",      "string", "struct",
};

const char *sp_kind_name(const tv *v)
{
    tk k = tv_kind(v);
    if (k == TK_IFACE) {
        return "invalid";
    }
    return (size_t)k < CO_ARRAY_SIZE(kind_names) ? kind_names[k] : "invalid";
}

bool sp_empty(const tv *v)
{
    switch (tv_kind(v)) {
    case TK_INVALID:
    case TK_IFACE:
        return true;
    case TK_ARRAY:
    case TK_SLICE:
    case TK_MAP:
    case TK_STRING:
        return tv_len(v) == 0;
    case TK_BOOL:
        return !v->u.b;
    case TK_COMPLEX64:
    case TK_COMPLEX128:
        return v->u.c[0] == 0 && v->u.c[1] == 0;
    case TK_INT:
    case TK_INT8:
    case TK_INT16:
    case TK_INT32:
    case TK_INT64:
        return v->u.i == 0;
    case TK_UINT:
    case TK_UINT8:
    case TK_UINT16:
    case TK_UINT32:
    case TK_UINT64:
    case TK_UINTPTR:
        return v->u.u == 0;
    case TK_FLOAT32:
    case TK_FLOAT64:
        return v->u.f == 0;
    case TK_STRUCT:
        return false;
    default:
        return tv_is_nil(v);
    }
}

bool sp_is_list(const tv *v)
{
    tk k = tv_kind(v);
    return k == TK_SLICE || k == TK_ARRAY;
}

tv sp_list_item(const tv *v, size_t i)
{
    if (v->t == &T_BYTES) {
        return tv_uint(&T_UINT8, (unsigned char)v->u.s->s[i]);
    }
    return v->u.l->items[i];
}

/* ---- encoding/json ------------------------------------------------------------------------ */

typedef struct jenc {
    tpl_x *x;
    co_buf *b;
    bool html;
    const char *indent;
    int depth;
    int rc;
    tv_path path;
} jenc;

static void jput(jenc *e, const char *s, size_t n)
{
    if (e->rc == 0 && co_buf_put(e->b, s, n) < 0) {
        e->rc = tpl_fail_out(e->x, e->b);
    }
}

static void jputs(jenc *e, const char *s)
{
    jput(e, s, strlen(s));
}

static void jnewline(jenc *e, int depth)
{
    if (!e->indent) {
        return;
    }
    jput(e, "\n", 1);
    for (int i = 0; i < depth; i++) {
        jputs(e, e->indent);
    }
}

static void jstring(jenc *e, const char *s, size_t len)
{
    if (e->rc == 0 &&
        co_json_go_quote(e->b, s, len, e->html ? 0u : (unsigned)CO_JSON_NO_HTML_ESCAPE) < 0) {
        e->rc = tpl_fail_out(e->x, e->b);
    }
}

static void jfloat(jenc *e, double f, bool is32)
{
    if (isnan(f) || isinf(f)) {
        co_buf g = CO_BUF_INIT(64);
        tpl_ignore(tpl_format_float(&g, f, 'g', -1));
        if (e->rc == 0) {
            e->rc = tpl_fail(e->x, "json: unsupported value: %.*s", (int)g.len, g.ptr);
        }
        co_buf_dispose(&g);
        return;
    }
    double a = fabs(f);
    char fmt = 'f';
    if (a != 0 &&
        ((!is32 && (a < 1e-6 || a >= 1e21)) || (is32 && ((float)a < 1e-6F || (float)a >= 1e21F)))) {
        fmt = 'e';
    }
    co_buf g = CO_BUF_INIT(512);
    tpl_ignore(tpl_format_float(&g, f, fmt, -1));
    size_t n = g.len;
    char *p = g.ptr;
    if (fmt == 'e' && n >= 4 && p[n - 4] == 'e' && p[n - 3] == '-' && p[n - 2] == '0') {
        p[n - 2] = p[n - 1];
        n--;
    }
    jput(e, p, n);
    co_buf_dispose(&g);
}

static void jvalue(jenc *e, const tv *v);

/* Enters a map, list or struct: Go's encoder reports a cycle (it looks for one once it is 1000
 * levels deep); a value that is merely that deep is refused here too. */
static int jenter(jenc *e, const tv *v)
{
    int rc = co_budget_tick();
    if (rc < 0) {
        e->rc = tpl_fail_budget(e->x, rc);
        return -1;
    }
    int in = tv_path_enter(&e->path, v);
    if (in < 0) {
        if (tv_path_cycle(&e->path, v)) {
            e->rc = tpl_fail(e->x, "json: unsupported value: encountered a cycle via %s",
                             tv_type_name(v));
        } else {
            e->rc = tpl_fail(e->x, "json: unsupported value: nested deeper than %d levels",
                             CO_MAX_TEMPLATE_VALUE_DEPTH);
        }
        return -1;
    }
    e->depth++;
    return in;
}

/* Leaves what jenter() entered (@p in: its result). */
static void jleave(jenc *e, int in)
{
    e->depth--;
    if (in > 0) {
        tv_path_leave(&e->path);
    }
}

static void jmap(jenc *e, const tv *v)
{
    tv_map *m = v->u.m;
    if (!m) {
        jputs(e, "null");
        return;
    }
    const uint32_t *perm = tv_map_sorted(e->x, m);
    jput(e, "{", 1);
    for (size_t i = 0; i < m->n && e->rc == 0; i++) {
        if (i > 0) {
            jput(e, ",", 1);
        }
        jnewline(e, e->depth);
        const tv_str *k = m->keys[perm[i]];
        jstring(e, k->s, k->len);
        jput(e, e->indent ? ": " : ":", e->indent ? 2 : 1);
        jvalue(e, &m->vals[perm[i]]);
    }
    if (m->n > 0) {
        jnewline(e, e->depth - 1);
    }
    jput(e, "}", 1);
}

static void jlist(jenc *e, const tv *v)
{
    if (v->t == &T_BYTES) {
        if (!v->u.s) {
            jputs(e, "null");
            return;
        }
        char *s = co_base64_encode(v->u.s->s, v->u.s->len, 0);
        jstring(e, s, strlen(s));
        free(s);
        return;
    }
    if (v->t->kind == TK_SLICE && !v->u.l) {
        jputs(e, "null");
        return;
    }
    size_t n = v->u.l ? v->u.l->n : 0;
    jput(e, "[", 1);
    for (size_t i = 0; i < n && e->rc == 0; i++) {
        if (i > 0) {
            jput(e, ",", 1);
        }
        jnewline(e, e->depth);
        jvalue(e, &v->u.l->items[i]);
    }
    if (n > 0) {
        jnewline(e, e->depth - 1);
    }
    jput(e, "]", 1);
}

static void jstruct(jenc *e, const tv *v, const tv_type *st, const tv *fields, bool *first)
{
    if (!fields) {
        return;
    }
    for (size_t i = 0; i < st->nfields && e->rc == 0; i++) {
        const tv_field *fd = &st->fields[i];
        const tv *fv = &fields[i];
        if (fd->json && strcmp(fd->json, "-") == 0) {
            continue;
        }
        if ((fd->flags & (TV_FIELD_EMBEDDED | TV_FIELD_INLINE)) && fd->type->kind == TK_STRUCT &&
            fv->u.o) {
            jstruct(e, fv, fd->type, fv->u.o->fields, first);
            continue;
        }
        if ((fd->flags & TV_FIELD_OMITEMPTY) && sp_empty(fv) && tv_kind(fv) != TK_STRUCT) {
            continue;
        }
        if (!*first) {
            jput(e, ",", 1);
        }
        *first = false;
        jnewline(e, e->depth);
        const char *name = fd->json ? fd->json : fd->name;
        jstring(e, name, strlen(name));
        jput(e, e->indent ? ": " : ":", e->indent ? 2 : 1);
        jvalue(e, fv);
    }
    (void)v;
}

static void jvalue(jenc *e, const tv *v)
{
    if (e->rc != 0) {
        return;
    }
    if (!v->t) {
        jputs(e, "null");
        return;
    }
    if (v->t->marshal_json) {
        co_buf tmp = CO_BUF_INIT(tpl_out_cap());
        if (v->t->marshal_json(e->x, &tmp, v) < 0) {
            co_buf_dispose(&tmp);
            e->rc = -1;
            return;
        }
        jput(e, tmp.ptr ? tmp.ptr : "", tmp.len);
        co_buf_dispose(&tmp);
        return;
    }
    char num[32];
    switch (tv_kind(v)) {
    case TK_INVALID:
    case TK_IFACE:
        jputs(e, "null");
        return;
    case TK_BOOL:
        jputs(e, v->u.b ? "true" : "false");
        return;
    case TK_INT:
    case TK_INT8:
    case TK_INT16:
    case TK_INT32:
    case TK_INT64:
        snprintf(num, sizeof(num), "%lld", (long long)v->u.i);
        jputs(e, num);
        return;
    case TK_UINT:
    case TK_UINT8:
    case TK_UINT16:
    case TK_UINT32:
    case TK_UINT64:
    case TK_UINTPTR:
        snprintf(num, sizeof(num), "%llu", (unsigned long long)v->u.u);
        jputs(e, num);
        return;
    case TK_FLOAT32:
    case TK_FLOAT64:
        jfloat(e, v->u.f, v->t->kind == TK_FLOAT32);
        return;
    case TK_STRING:
        jstring(e, v->u.s->s, v->u.s->len);
        return;
    case TK_MAP: {
        int in = jenter(e, v);
        if (in >= 0) {
            jmap(e, v);
            jleave(e, in);
        }
        return;
    }
    case TK_SLICE:
    case TK_ARRAY: {
        int in = jenter(e, v);
        if (in >= 0) {
            jlist(e, v);
            jleave(e, in);
        }
        return;
    }
    case TK_PTR:
        if (!v->u.o) {
            jputs(e, "null");
            return;
        }
        if (v->t->elem && v->t->elem->kind == TK_STRUCT) {
            tv s = {v->t->elem, {.o = v->u.o}};
            jvalue(e, &s);
            return;
        }
        break;
    case TK_STRUCT: {
        int in = jenter(e, v);
        if (in < 0) {
            return;
        }
        bool first = true;
        jput(e, "{", 1);
        jstruct(e, v, v->t, v->u.o ? v->u.o->fields : NULL, &first);
        if (!first) {
            jnewline(e, e->depth - 1);
        }
        jput(e, "}", 1);
        jleave(e, in);
        return;
    }
    default:
        break;
    }
    e->rc = tpl_fail(e->x, "json: unsupported type: %s", tv_type_name(v));
}

int sp_json_encode(tpl_x *x, co_buf *b, const tv *v, bool escape_html, const char *indent)
{
    jenc e;
    memset(&e, 0, offsetof(jenc, path));
    e.path.n = 0;
    e.x = x;
    e.b = b;
    e.html = escape_html;
    e.indent = indent;
    jvalue(&e, v);
    return e.rc;
}
