/* SPDX-License-Identifier: Apache-2.0 */
/*
 * text/template's builtin functions: and, or, not, len, index, slice, print, printf, println,
 * html, js, urlquery, call, eq, ne, lt, le, gt, ge, with Go's argument handling and error
 * texts (including the reflect panics that surface as errors, such as an index equal to the
 * length).
 */
#include <string.h>

#include "co/util/utf8.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "tpl.h"

static const tv_type *const P_V[] = {&T_VALUE, &T_VALUE};
static const tv_type *const P_A[] = {&T_IFACE};
static const tv_type *const P_SA[] = {&T_STRING, &T_IFACE};

static tv iface_elem(const tv *v)
{
    if (v->t && v->t->kind == TK_IFACE) {
        return tv_invalid();
    }
    return *v;
}

static int fn_unreachable(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)ret;
    (void)args;
    (void)n;
    return tpl_fail(x, "unreachable");
}

static int fn_not(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)x;
    (void)n;
    bool ok;
    tv v = iface_elem(&args[0]);
    *ret = tv_bool(!tv_truth(&v, &ok));
    return 0;
}

static int fn_len(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    tv v = args[0];
    if (!v.t) {
        return tpl_fail(x, "reflect: call of reflect.Value.Type on zero Value");
    }
    if ((v.t->kind == TK_PTR || v.t->kind == TK_IFACE) && tv_is_nil(&v)) {
        return tpl_fail(x, "len of nil pointer");
    }
    if (v.t->kind == TK_PTR && v.t->elem) {
        tv s = {v.t->elem, {.o = v.u.o}};
        v = s;
    }
    int64_t len = tv_len(&v);
    if (len < 0) {
        return tpl_fail(x, "len of type %s", v.t->name);
    }
    *ret = tv_int(&T_INT, len);
    return 0;
}

static int index_arg(tpl_x *x, const tv *index, int64_t cap, int64_t *out)
{
    int64_t v = 0;
    if (tk_is_int(tv_kind(index))) {
        v = index->u.i;
    } else if (tk_is_uint(tv_kind(index))) {
        v = (int64_t)index->u.u;
    } else if (!index->t) {
        return tpl_fail(x, "cannot index slice/array with nil");
    } else {
        return tpl_fail(x, "cannot index slice/array with type %s", index->t->name);
    }
    if (v < 0 || v > cap) {
        return tpl_fail(x, "index out of range: %lld", (long long)v);
    }
    *out = v;
    return 0;
}

static int fn_index(tpl_x *x, tv *ret, tv *args, size_t n)
{
    tv item = iface_elem(&args[0]);
    if (!item.t) {
        return tpl_fail(x, "index of untyped nil");
    }
    for (size_t i = 1; i < n; i++) {
        tv index = iface_elem(&args[i]);
        if ((item.t->kind == TK_PTR || item.t->kind == TK_IFACE) && tv_is_nil(&item)) {
            return tpl_fail(x, "index of nil pointer");
        }
        switch (item.t->kind) {
        case TK_STRING:
        case TK_SLICE:
        case TK_ARRAY: {
            int64_t len = tv_len(&item);
            int64_t k = 0;
            if (index_arg(x, &index, len, &k) < 0) {
                return -1;
            }
            if (k >= len) {
                return tpl_fail(x, "reflect: %s index out of range",
                                item.t->kind == TK_STRING ? "string" : "slice");
            }
            if (item.t->kind == TK_STRING || item.t == &T_BYTES) {
                item = tv_uint(&T_UINT8, (unsigned char)item.u.s->s[k]);
            } else {
                item = item.u.l->items[k];
            }
            break;
        }
        case TK_MAP: {
            if (!index.t) {
                return tpl_fail(x, "value is nil; should be of type string");
            }
            if (index.t->kind != TK_STRING) {
                return tpl_fail(x, "value has type %s; should be string", index.t->name);
            }
            tv *v = tv_map_get(item.u.m, index.u.s->s, index.u.s->len);
            if (v) {
                item = *v;
            } else if (item.t->elem->kind == TK_STRING) {
                item = tv_string(x, "", 0);
            } else {
                item = tv_nil(item.t->elem);
            }
            break;
        }
        default:
            return tpl_fail(x, "can't index item of type %s", item.t->name);
        }
    }
    *ret = item;
    return 0;
}

static int fn_slice(tpl_x *x, tv *ret, tv *args, size_t n)
{
    tv item = iface_elem(&args[0]);
    if (!item.t) {
        return tpl_fail(x, "slice of untyped nil");
    }
    size_t nidx = n - 1;
    if (nidx > 3) {
        return tpl_fail(x, "too many slice indexes: %zu", nidx);
    }
    int64_t cap;
    switch (item.t->kind) {
    case TK_STRING:
        if (nidx == 3) {
            return tpl_fail(x, "cannot 3-index slice a string");
        }
        cap = tv_len(&item);
        break;
    case TK_ARRAY:
    case TK_SLICE:
        cap = tv_len(&item);
        break;
    default:
        return tpl_fail(x, "can't slice item of type %s", item.t->name);
    }
    int64_t idx[3] = {0, tv_len(&item), 0};
    for (size_t i = 0; i < nidx; i++) {
        tv k = iface_elem(&args[i + 1]);
        if (index_arg(x, &k, cap, &idx[i]) < 0) {
            return -1;
        }
    }
    if (idx[0] > idx[1]) {
        return tpl_fail(x, "invalid slice index: %lld > %lld", (long long)idx[0],
                        (long long)idx[1]);
    }
    if (nidx == 3 && idx[1] > idx[2]) {
        return tpl_fail(x, "invalid slice index: %lld > %lld", (long long)idx[1],
                        (long long)idx[2]);
    }
    size_t from = (size_t)idx[0];
    size_t to = (size_t)idx[1];
    if (item.t->kind == TK_STRING) {
        *ret = tv_string(x, item.u.s->s + from, to - from);
        ret->t = item.t;
        return 0;
    }
    if (item.t == &T_BYTES) {
        *ret = tv_bytes(x, item.u.s->s + from, to - from);
        return 0;
    }
    tv out = tv_list_new(x, item.t, to - from);
    if (to > from) {
        memcpy(out.u.l->items, item.u.l->items + from, (to - from) * sizeof(tv));
    }
    *ret = out;
    return 0;
}

/* printableValue for evalArgs: pointers are followed, no value prints as "<no value>". */
static tv printable(tpl_x *x, const tv *v)
{
    if (!v->t || v->t->kind == TK_IFACE) {
        return tv_cstring(x, "<no value>");
    }
    if (v->t->kind == TK_PTR && v->u.o && v->t->elem) {
        tv s = {v->t->elem, {.o = v->u.o}};
        return s;
    }
    return *v;
}

/* evalArgs: the arguments as one string, like fmt.Sprint. */
static int eval_args(tpl_x *x, tv *args, size_t n, const char **s, size_t *len)
{
    if (n == 1 && args[0].t && args[0].t == &T_STRING) {
        *s = args[0].u.s->s;
        *len = args[0].u.s->len;
        return 0;
    }
    tv *pa = tpl_alloc(x, (n ? n : 1) * sizeof(tv));
    for (size_t i = 0; i < n; i++) {
        pa[i] = printable(x, &args[i]);
    }
    co_buf b = CO_BUF_INIT(tpl_out_cap());
    if (tpl_sprint(x, &b, pa, n) < 0) {
        co_buf_dispose(&b);
        return -1;
    }
    tv r = tv_string_take(x, &b);
    *s = r.u.s->s;
    *len = r.u.s->len;
    return 0;
}

static int fn_print(tpl_x *x, tv *ret, tv *args, size_t n)
{
    co_buf b = CO_BUF_INIT(tpl_out_cap());
    if (tpl_sprint(x, &b, args, n) < 0) {
        co_buf_dispose(&b);
        return -1;
    }
    *ret = tv_string_take(x, &b);
    return 0;
}

static int fn_println(tpl_x *x, tv *ret, tv *args, size_t n)
{
    co_buf b = CO_BUF_INIT(tpl_out_cap());
    if (tpl_sprintln(x, &b, args, n) < 0) {
        co_buf_dispose(&b);
        return -1;
    }
    *ret = tv_string_take(x, &b);
    return 0;
}

static int fn_printf(tpl_x *x, tv *ret, tv *args, size_t n)
{
    co_buf b = CO_BUF_INIT(tpl_out_cap());
    if (tpl_sprintf(x, &b, args[0].u.s->s, args[0].u.s->len, args + 1, n - 1) < 0) {
        co_buf_dispose(&b);
        return -1;
    }
    *ret = tv_string_take(x, &b);
    return 0;
}

static int fn_html(tpl_x *x, tv *ret, tv *args, size_t n)
{
    const char *s = NULL;
    size_t len = 0;
    if (eval_args(x, args, n, &s, &len) < 0) {
        return -1;
    }
    co_buf b = CO_BUF_INIT(tpl_out_cap());
    int rc = 0;
    for (size_t i = 0; i < len && rc == 0; i++) {
        switch (s[i]) {
        case '\0':
            rc = co_buf_puts(&b, "\xEF\xBF\xBD");
            break;
        case '"':
            rc = co_buf_puts(&b, "&#34;");
            break;
        case '\'':
            rc = co_buf_puts(&b, "&#39;");
            break;
        case '&':
            rc = co_buf_puts(&b, "&amp;");
            break;
        case '<':
            rc = co_buf_puts(&b, "&lt;");
            break;
        case '>':
            rc = co_buf_puts(&b, "&gt;");
            break;
        default:
            rc = co_buf_putc(&b, s[i]);
        }
    }
    if (rc < 0) {
        return tpl_fail_out(x, &b);
    }
    *ret = tv_string_take(x, &b);
    return 0;
}

static int fn_js(tpl_x *x, tv *ret, tv *args, size_t n)
{
    const char *s = NULL;
    size_t len = 0;
    if (eval_args(x, args, n, &s, &len) < 0) {
        return -1;
    }
    co_buf b = CO_BUF_INIT(tpl_out_cap());
    int rc = 0;
    for (size_t i = 0; i < len && rc == 0; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            switch (c) {
            case '\\':
                rc = co_buf_puts(&b, "\\\\");
                break;
            case '\'':
                rc = co_buf_puts(&b, "\\'");
                break;
            case '"':
                rc = co_buf_puts(&b, "\\\"");
                break;
            case '<':
                rc = co_buf_puts(&b, "\\u003C");
                break;
            case '>':
                rc = co_buf_puts(&b, "\\u003E");
                break;
            case '&':
                rc = co_buf_puts(&b, "\\u0026");
                break;
            case '=':
                rc = co_buf_puts(&b, "\\u003D");
                break;
            default:
                if (c < ' ') {
                    rc = co_buf_printf(&b, "\\u00%c%c", "0123456789ABCDEF"[c >> 4],
                                       "0123456789ABCDEF"[c & 15]);
                } else {
                    rc = co_buf_putc(&b, (char)c);
                }
            }
            continue;
        }
        size_t w;
        int32_t r = co_utf8_decode_rune(s + i, len - i, &w);
        if (tpl_is_print(r)) {
            rc = co_buf_put(&b, s + i, w);
        } else {
            rc = co_buf_printf(&b, "\\u%04X", (unsigned)r);
        }
        i += w - 1;
    }
    if (rc < 0) {
        return tpl_fail_out(x, &b);
    }
    *ret = tv_string_take(x, &b);
    return 0;
}

/* url.QueryEscape */
int tpl_query_escape(co_buf *b, const char *s, size_t len, bool path_mode);
int tpl_query_escape(co_buf *b, const char *s, size_t len, bool path_mode)
{
    int rc = 0;
    for (size_t i = 0; i < len && rc == 0; i++) {
        unsigned char c = (unsigned char)s[i];
        bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == '~';
        if (path_mode && (c == '$' || c == '&' || c == '+' || c == ',' || c == '/' || c == ':' ||
                          c == ';' || c == '=' || c == '@')) {
            keep = true;
        }
        if (keep) {
            rc = co_buf_putc(b, (char)c);
        } else if (c == ' ' && !path_mode) {
            rc = co_buf_putc(b, '+');
        } else {
            rc = co_buf_printf(b, "%%%c%c", "0123456789ABCDEF"[c >> 4], "0123456789ABCDEF"[c & 15]);
        }
    }
    return rc;
}

static int fn_urlquery(tpl_x *x, tv *ret, tv *args, size_t n)
{
    const char *s = NULL;
    size_t len = 0;
    if (eval_args(x, args, n, &s, &len) < 0) {
        return -1;
    }
    co_buf b = CO_BUF_INIT(tpl_out_cap());
    if (tpl_query_escape(&b, s, len, false) < 0) {
        return tpl_fail_out(x, &b);
    }
    *ret = tv_string_take(x, &b);
    return 0;
}

static int fn_call(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)ret;
    (void)n;
    tv fn = iface_elem(&args[1]);
    if (!fn.t) {
        return tpl_fail(x, "call of nil");
    }
    return tpl_fail(x, "non-function %s of type %s", args[0].u.s->s, fn.t->name);
}

/* ---- comparison --------------------------------------------------------------------------- */

enum kind { K_INVALID, K_BOOL, K_COMPLEX, K_INT, K_FLOAT, K_STRING, K_UINT };

static enum kind basic_kind(const tv *v)
{
    switch (tv_kind(v)) {
    case TK_BOOL:
        return K_BOOL;
    case TK_INT:
    case TK_INT8:
    case TK_INT16:
    case TK_INT32:
    case TK_INT64:
        return K_INT;
    case TK_UINT:
    case TK_UINT8:
    case TK_UINT16:
    case TK_UINT32:
    case TK_UINT64:
    case TK_UINTPTR:
        return K_UINT;
    case TK_FLOAT32:
    case TK_FLOAT64:
        return K_FLOAT;
    case TK_COMPLEX64:
    case TK_COMPLEX128:
        return K_COMPLEX;
    case TK_STRING:
        return K_STRING;
    default:
        return K_INVALID;
    }
}

static bool str_eq(const tv *a, const tv *b)
{
    return a->u.s->len == b->u.s->len && memcmp(a->u.s->s, b->u.s->s, a->u.s->len) == 0;
}

static int str_cmp(const tv *a, const tv *b)
{
    size_t n = a->u.s->len < b->u.s->len ? a->u.s->len : b->u.s->len;
    int c = memcmp(a->u.s->s, b->u.s->s, n);
    if (c != 0) {
        return c;
    }
    return a->u.s->len < b->u.s->len ? -1 : a->u.s->len > b->u.s->len ? 1 : 0;
}

static bool comparable_type(const tv_type *t)
{
    switch (t->kind) {
    case TK_MAP:
    case TK_SLICE:
    case TK_FUNC:
        return false;
    case TK_STRUCT:
        for (size_t i = 0; i < t->nfields; i++) {
            if (!comparable_type(t->fields[i].type)) {
                return false;
            }
        }
        return true;
    default:
        return true;
    }
}

static const char *vs(tpl_x *x, const tv *v)
{
    co_buf b = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE / 4);
    if (v->t) {
        (void)tpl_print_value(x, &b, v);
    } else {
        tpl_ignore(co_buf_puts(&b, "<invalid reflect.Value>"));
    }
    tv s = tv_string(x, co_buf_cstr(&b), b.len);
    co_buf_dispose(&b);
    return s.u.s->s;
}

static int eq_values(tpl_x *x, const tv *a1, tv *rest, size_t nrest, bool *out)
{
    tv arg1 = iface_elem(a1);
    if (nrest == 0) {
        return tpl_fail(x, "missing argument for comparison");
    }
    enum kind k1 = basic_kind(&arg1);
    for (size_t i = 0; i < nrest; i++) {
        tv arg = iface_elem(&rest[i]);
        enum kind k2 = basic_kind(&arg);
        bool truth = false;
        if (k1 != k2) {
            if (k1 == K_INT && k2 == K_UINT) {
                truth = arg1.u.i >= 0 && (uint64_t)arg1.u.i == arg.u.u;
            } else if (k1 == K_UINT && k2 == K_INT) {
                truth = arg.u.i >= 0 && arg1.u.u == (uint64_t)arg.u.i;
            } else if (arg1.t && arg.t) {
                return tpl_fail(x, "incompatible types for comparison: %s and %s", arg1.t->name,
                                arg.t->name);
            }
        } else {
            switch (k1) {
            case K_BOOL:
                truth = arg1.u.b == arg.u.b;
                break;
            case K_COMPLEX:
                truth = arg1.u.c[0] == arg.u.c[0] && arg1.u.c[1] == arg.u.c[1];
                break;
            case K_FLOAT:
                truth = arg1.u.f == arg.u.f;
                break;
            case K_INT:
                truth = arg1.u.i == arg.u.i;
                break;
            case K_STRING:
                truth = str_eq(&arg1, &arg);
                break;
            case K_UINT:
                truth = arg1.u.u == arg.u.u;
                break;
            default: {
                tk ka = tv_kind(&arg1);
                tk kb = tv_kind(&arg);
                if (ka != kb && ka != TK_INVALID && kb != TK_INVALID) {
                    return tpl_fail(x, "non-comparable types %s: %s, %s: %s", vs(x, &arg1),
                                    arg1.t->name, arg.t->name, vs(x, &arg));
                }
                if (tv_is_nil(&arg1) || tv_is_nil(&arg)) {
                    truth = tv_is_nil(&arg) == tv_is_nil(&arg1);
                } else {
                    if (!comparable_type(arg.t)) {
                        return tpl_fail(x, "non-comparable type %s: %s", vs(x, &arg), arg.t->name);
                    }
                    if (tv_deep_equal(x, &arg1, &arg, &truth) < 0) {
                        return -1;
                    }
                    truth = truth && (arg1.t->kind != TK_PTR || arg1.u.o == arg.u.o);
                }
            }
            }
        }
        if (truth) {
            *out = true;
            return 0;
        }
    }
    *out = false;
    return 0;
}

static int fn_eq(tpl_x *x, tv *ret, tv *args, size_t n)
{
    bool r = false;
    if (eq_values(x, &args[0], args + 1, n - 1, &r) < 0) {
        return -1;
    }
    *ret = tv_bool(r);
    return 0;
}

static int fn_ne(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    bool r = false;
    if (eq_values(x, &args[0], args + 1, 1, &r) < 0) {
        return -1;
    }
    *ret = tv_bool(!r);
    return 0;
}

static int less(tpl_x *x, const tv *a, const tv *b, bool *out)
{
    tv arg1 = iface_elem(a);
    enum kind k1 = basic_kind(&arg1);
    if (k1 == K_INVALID) {
        return tpl_fail(x, "invalid type for comparison");
    }
    tv arg2 = iface_elem(b);
    enum kind k2 = basic_kind(&arg2);
    if (k2 == K_INVALID) {
        return tpl_fail(x, "invalid type for comparison");
    }
    bool truth = false;
    if (k1 != k2) {
        if (k1 == K_INT && k2 == K_UINT) {
            truth = arg1.u.i < 0 || (uint64_t)arg1.u.i < arg2.u.u;
        } else if (k1 == K_UINT && k2 == K_INT) {
            truth = arg2.u.i >= 0 && arg1.u.u < (uint64_t)arg2.u.i;
        } else {
            return tpl_fail(x, "incompatible types for comparison: %s and %s", arg1.t->name,
                            arg2.t->name);
        }
    } else {
        switch (k1) {
        case K_BOOL:
        case K_COMPLEX:
            return tpl_fail(x, "invalid type for comparison");
        case K_FLOAT:
            truth = arg1.u.f < arg2.u.f;
            break;
        case K_INT:
            truth = arg1.u.i < arg2.u.i;
            break;
        case K_STRING:
            truth = str_cmp(&arg1, &arg2) < 0;
            break;
        default:
            truth = arg1.u.u < arg2.u.u;
            break;
        }
    }
    *out = truth;
    return 0;
}

static int fn_lt(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    bool r = false;
    if (less(x, &args[0], &args[1], &r) < 0) {
        return -1;
    }
    *ret = tv_bool(r);
    return 0;
}

static int le_values(tpl_x *x, tv *args, bool *out)
{
    bool lt = false;
    if (less(x, &args[0], &args[1], &lt) < 0) {
        return -1;
    }
    if (lt) {
        *out = true;
        return 0;
    }
    return eq_values(x, &args[0], args + 1, 1, out);
}

static int fn_le(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    bool r = false;
    if (le_values(x, args, &r) < 0) {
        return -1;
    }
    *ret = tv_bool(r);
    return 0;
}

static int fn_gt(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    bool r = false;
    if (le_values(x, args, &r) < 0) {
        return -1;
    }
    *ret = tv_bool(!r);
    return 0;
}

static int fn_ge(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    bool r = false;
    if (less(x, &args[0], &args[1], &r) < 0) {
        return -1;
    }
    *ret = tv_bool(!r);
    return 0;
}

static const tpl_func builtins[] = {
    {.name = "and",
     .fn = fn_unreachable,
     .in = P_V,
     .out = &T_VALUE,
     .nin = 2,
     .variadic = true,
     .has_err = false,
     .special = TPL_SPECIAL_AND},
    {.name = "call",
     .fn = fn_call,
     .in = P_V,
     .out = &T_VALUE,
     .nin = 2,
     .variadic = true,
     .has_err = true,
     .special = TPL_SPECIAL_CALL},
    TPL_FUNC("eq", fn_eq, P_V, 2, true, true, &T_BOOL),
    TPL_FUNC("ge", fn_ge, P_V, 2, false, true, &T_BOOL),
    TPL_FUNC("gt", fn_gt, P_V, 2, false, true, &T_BOOL),
    TPL_FUNC("html", fn_html, P_A, 1, true, false, &T_STRING),
    TPL_FUNC("index", fn_index, P_V, 2, true, true, &T_VALUE),
    TPL_FUNC("js", fn_js, P_A, 1, true, false, &T_STRING),
    TPL_FUNC("le", fn_le, P_V, 2, false, true, &T_BOOL),
    TPL_FUNC("len", fn_len, P_V, 1, false, true, &T_INT),
    TPL_FUNC("lt", fn_lt, P_V, 2, false, true, &T_BOOL),
    TPL_FUNC("ne", fn_ne, P_V, 2, false, true, &T_BOOL),
    TPL_FUNC("not", fn_not, P_V, 1, false, false, &T_BOOL),
    {.name = "or",
     .fn = fn_unreachable,
     .in = P_V,
     .out = &T_VALUE,
     .nin = 2,
     .variadic = true,
     .has_err = false,
     .special = TPL_SPECIAL_OR},
    TPL_FUNC("print", fn_print, P_A, 1, true, false, &T_STRING),
    TPL_FUNC("printf", fn_printf, P_SA, 2, true, false, &T_STRING),
    TPL_FUNC("println", fn_println, P_A, 1, true, false, &T_STRING),
    TPL_FUNC("slice", fn_slice, P_V, 2, true, true, &T_VALUE),
    TPL_FUNC("urlquery", fn_urlquery, P_A, 1, true, false, &T_STRING),
};

void tpl_register_builtins(co_template_funcs *f)
{
    tpl_register_all(f, builtins, CO_ARRAY_SIZE(builtins));
}
