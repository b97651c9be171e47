/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The runtime's template functions (component-operator-runtime's templatex.FuncMap and its
 * template-context functions; docs/behaviour.md, "Template functions"): the YAML and JSON
 * conversions that report errors, required, include, tpl, the bitwise and IPv4 helpers. They
 * replace sprig's functions of the same names.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/strconv.h"
#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/jdoc.h"
#include "co/json/json.h"
#include "co/json/yaml.h"
#include "sprig.h"

#define OUT_INIT CO_BUF_INIT(tpl_out_cap())

/* A template value as json-c, through Go's encoding (so that every type marshals as in Go). */
static int to_json_c(tpl_x *x, const tv *v, struct json_object **out)
{
    co_buf b = OUT_INIT;
    if (sp_json_encode(x, &b, v, false, NULL) < 0) {
        co_buf_dispose(&b);
        return -1;
    }
    struct json_object *j = NULL;
    int rc = co_json_parse(&j, b.ptr ? b.ptr : "null", b.ptr ? b.len : 4);
    co_buf_dispose(&b);
    if (rc < 0) {
        return tpl_fail(x, "%s", co_error_last());
    }
    *out = j;
    return 0;
}

/* sigs.k8s.io/yaml's Marshal without the final newline. */
static int fn_to_yaml(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    struct json_object *j = NULL;
    if (to_json_c(x, &a[0], &j) < 0) {
        return -1;
    }
    /* the json-c tree lives while the YAML is written: a few times the value's size */
    uint64_t budget = co_budget_id();
    size_t charged = 0;
    int rc = co_budget_charge_json(j, &charged);
    if (rc < 0) {
        json_object_put(j);
        co_budget_release(budget, charged);
        return tpl_fail_budget(x, rc);
    }
    co_buf b = OUT_INIT;
    rc = co_yaml_emit(&b, j, CO_YAML_SORTED);
    json_object_put(j);
    co_budget_release(budget, charged);
    if (rc < 0) {
        co_buf_dispose(&b);
        return tpl_fail_code(x, tpl_error_code(rc), "%s", co_error_last());
    }
    size_t len = b.len;
    if (len > 0 && b.ptr[len - 1] == '\n') {
        len--;
    }
    *ret = tv_string(x, b.ptr ? b.ptr : "", len);
    co_buf_dispose(&b);
    return 0;
}

static int from_yaml(tpl_x *x, tv *ret, const tv_str *s, bool array)
{
    struct json_object *j = NULL;
    /* the parser charges the tree it builds; it is gone again once converted */
    uint64_t budget = co_budget_id();
    size_t before = co_budget_used();
    int rc = co_yaml_parse(&j, s->s, s->len, CO_YAML_GO_UNMARSHAL);
    size_t tree = co_budget_used() - before;
    if (rc < 0) {
        co_budget_release(budget, tree);
        if ((rc = co_budget_status()) < 0) {
            return tpl_fail_budget(x, rc);
        }
        return tpl_fail(x, "error converting YAML to JSON: yaml: %s", co_error_last());
    }
    if (array && j && !json_object_is_type(j, json_type_array)) {
        const char *what = json_object_is_type(j, json_type_object)    ? "object"
                           : json_object_is_type(j, json_type_string)  ? "string"
                           : json_object_is_type(j, json_type_boolean) ? "bool"
                                                                       : "number";
        json_object_put(j);
        co_budget_release(budget, tree);
        return tpl_fail(x,
                        "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
                        "%s into Go value of type []interface {}",
                        what);
    }
    *ret = j ? tv_from_json(x, j, CO_TEMPLATE_NUMBERS_FLOAT64)
             : (array ? tv_nil(&T_LIST_ANY) : tv_nil(&T_IFACE));
    json_object_put(j);
    co_budget_release(budget, tree);
    return 0;
}

static int fn_from_yaml(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return from_yaml(x, ret, a[0].u.s, false);
}

static int fn_from_yaml_array(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return from_yaml(x, ret, a[0].u.s, true);
}

static int json_out(tpl_x *x, tv *ret, const tv *v, bool html, const char *indent)
{
    co_buf b = OUT_INIT;
    if (sp_json_encode(x, &b, v, html, indent) < 0) {
        co_buf_dispose(&b);
        return -1;
    }
    *ret = tv_string_take(x, &b);
    return 0;
}

static int fn_to_json(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return json_out(x, ret, &a[0], true, NULL);
}

static int fn_to_pretty_json(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return json_out(x, ret, &a[0], true, "  ");
}

static int fn_to_raw_json(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return json_out(x, ret, &a[0], false, NULL);
}

static int from_json(tpl_x *x, tv *ret, const tv_str *s, bool array)
{
    if (s->len == 0) {
        return tpl_fail(x, "unexpected end of JSON input");
    }
    tv v;
    int type = CO_JV_NULL;
    if (tpl_json_decode(x, s->s, s->len, &v, &type) < 0) {
        return -1;
    }
    if (array && type != CO_JV_NULL && type != CO_JV_ARRAY) {
        const char *what = type == CO_JV_OBJECT   ? "object"
                           : type == CO_JV_STRING ? "string"
                           : type == CO_JV_BOOL   ? "bool"
                                                  : "number";
        return tpl_fail(x, "json: cannot unmarshal %s into Go value of type []interface {}", what);
    }
    *ret = type != CO_JV_NULL ? v : (array ? tv_nil(&T_LIST_ANY) : tv_nil(&T_IFACE));
    return 0;
}

static int fn_from_json(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return from_json(x, ret, a[0].u.s, false);
}

static int fn_from_json_array(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return from_json(x, ret, a[0].u.s, true);
}

static int fn_required(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    bool missing = sp_is_nil(&a[1]) || (a[1].t == &T_STRING && a[1].u.s->len == 0);
    if (missing) {
        return tpl_fail(x, "%s", sp_cstr(a[0].u.s));
    }
    *ret = a[1];
    return 0;
}

/* cast.ToUint64E / ToUint32E with their error texts. */
static int to_uint(tpl_x *x, const tv *v, const char *type, uint64_t *out)
{
    tk k = tv_kind(v);
    bool negative = (tk_is_int(k) && v->u.i < 0) || (tk_is_float(k) && v->u.f < 0);
    if (k == TK_STRING && v->t == &T_STRING) {
        int64_t i;
        size_t len = v->u.s->len;
        /* trimZeroDecimal, then ParseInt(s, 0, 0) */
        bool zero = false;
        for (size_t p = len; p > 0; p--) {
            char c = v->u.s->s[p - 1];
            if (c == '.' && zero) {
                len = p - 1;
                break;
            }
            if (c != '0') {
                break;
            }
            zero = true;
        }
        if (co_strconv_parse_int(&i, v->u.s->s, len, 0, 0) == 0) {
            negative = i < 0;
        }
    }
    if (negative) {
        return tpl_fail(x, "unable to cast negative value");
    }
    if (!sp_to_uint64(v, out)) {
        return sp_cast_fail(x, v, type);
    }
    return 0;
}

static int shift(tpl_x *x, tv *ret, tv *a, bool left)
{
    uint64_t arg = 0;
    uint64_t by = 0;
    if (to_uint(x, &a[1], "uint64", &arg) < 0 || to_uint(x, &a[0], "uint64", &by) < 0) {
        return -1;
    }
    uint64_t r = by >= 64 ? 0 : (left ? arg << by : arg >> by);
    *ret = tv_uint(&T_UINT64, r);
    return 0;
}

static int fn_shift_left(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return shift(x, ret, a, true);
}

static int fn_shift_right(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return shift(x, ret, a, false);
}

static int bitop(tpl_x *x, tv *ret, tv *a, size_t n, char op)
{
    uint64_t r = op == '&' ? UINT64_MAX : 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        if (to_uint(x, &a[i], "uint64", &v) < 0) {
            return -1;
        }
        r = op == '&' ? r & v : op == '|' ? r | v : r ^ v;
    }
    *ret = tv_uint(&T_UINT64, r);
    return 0;
}

static int fn_and(tpl_x *x, tv *ret, tv *a, size_t n)
{
    return bitop(x, ret, a, n, '&');
}

static int fn_or(tpl_x *x, tv *ret, tv *a, size_t n)
{
    return bitop(x, ret, a, n, '|');
}

static int fn_xor(tpl_x *x, tv *ret, tv *a, size_t n)
{
    return bitop(x, ret, a, n, '^');
}

/* cast.ToStringE of a scalar */
static int to_string_e(tpl_x *x, const tv *v, co_buf *out)
{
    switch (tv_kind(v)) {
    case TK_INVALID:
    case TK_IFACE:
        return 0;
    case TK_STRING:
        return co_buf_put(out, v->u.s->s, v->u.s->len);
    case TK_BOOL:
        return co_buf_puts(out, v->u.b ? "true" : "false");
    case TK_FLOAT64:
    case TK_FLOAT32:
        return tpl_format_float(out, v->u.f, 'f', -1);
    case TK_INT:
    case TK_INT8:
    case TK_INT16:
    case TK_INT32:
    case TK_INT64:
        return co_buf_printf(out, "%lld", (long long)v->u.i);
    case TK_UINT:
    case TK_UINT8:
    case TK_UINT16:
    case TK_UINT32:
    case TK_UINT64:
    case TK_UINTPTR:
        return co_buf_printf(out, "%llu", (unsigned long long)v->u.u);
    default:
        if (v->t == &T_BYTES) {
            return co_buf_put(out, v->u.s->s, v->u.s->len);
        }
        return sp_cast_fail(x, v, "string");
    }
}

static int fn_parse_ipv4(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf s = CO_BUF_INIT(tpl_out_cap());
    if (to_string_e(x, &a[0], &s) < 0) {
        co_buf_dispose(&s);
        return -1;
    }
    const char *p = s.ptr ? s.ptr : "";
    size_t len = s.len;
    size_t parts[5];
    size_t np = 0;
    parts[np++] = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '.') {
            if (np == 5) {
                np++;
                break;
            }
            parts[np++] = i + 1;
        }
    }
    if (np != 4) {
        co_buf_dispose(&s);
        return tpl_fail(x, "invalid IP address");
    }
    uint32_t r = 0;
    for (int i = 3; i >= 0; i--) {
        size_t from = parts[i];
        size_t to = i == 3 ? len : parts[i + 1] - 1;
        int64_t v;
        bool ok = true;
        for (size_t k = from; k < to; k++) {
            ok = ok && p[k] >= '0' && p[k] <= '9';
        }
        ok = ok && to > from && co_strconv_parse_int(&v, p + from, to - from, 10, 0) == 0;
        if (!ok || v > 255) {
            int rc;
            if (ok || (to > from && p[from] != '-' && p[from] != '+' &&
                       strspn(p + from, "0123456789") == to - from)) {
                rc = tpl_fail(x, "strconv.ParseUint: parsing \"%.*s\": value out of range",
                              (int)(to - from), p + from);
            } else {
                rc = tpl_fail(x, "strconv.ParseUint: parsing \"%.*s\": invalid syntax",
                              (int)(to - from), p + from);
            }
            co_buf_dispose(&s);
            return rc;
        }
        r |= (uint32_t)v << (8 * (3 - i));
    }
    co_buf_dispose(&s);
    *ret = tv_uint(&T_UINT32, r);
    return 0;
}

static int fn_format_ipv4(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    uint64_t v = 0;
    if (to_uint(x, &a[0], "uint32", &v) < 0) {
        return -1;
    }
    uint32_t i = (uint32_t)v;
    char s[16];
    snprintf(s, sizeof(s), "%u.%u.%u.%u", i >> 24, (i >> 16) & 0xFF, (i >> 8) & 0xFF, i & 0xFF);
    *ret = tv_cstring(x, s);
    return 0;
}

/* ---- include and tpl ---------------------------------------------------------------------- */

/* The rendered text with every "<no value>" removed (the runtime's adjust). */
static tv adjusted(tpl_x *x, co_buf *b)
{
    size_t len = co_template_strip_no_value(b->ptr ? b->ptr : NULL, b->len);
    tv r = tv_string(x, b->ptr ? b->ptr : "", len);
    co_buf_dispose(b);
    return r;
}

static int fn_include(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf b = OUT_INIT;
    tv dot = sp_is_nil(&a[1]) ? tv_invalid() : a[1];
    if (tpl_execute(x, x->set, sp_cstr(a[0].u.s), dot, &b) < 0) {
        co_buf_dispose(&b);
        return -1;
    }
    *ret = adjusted(x, &b);
    return 0;
}

static int fn_tpl(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    /* a clone of the executing set: the same parse trees plus "gotpl" */
    const co_template_set *orig = x->set;
    co_template_set clone = *orig;
    memset(&clone.arena, 0, sizeof(clone.arena));
    clone.trees = co_xmalloc((orig->ntrees + 1) * sizeof(tpl_tree *));
    clone.cap = orig->ntrees + 1;
    memcpy(clone.trees, orig->trees, orig->ntrees * sizeof(tpl_tree *));
    int rc = tpl_parse(&clone, "gotpl", a[0].u.s->s, a[0].u.s->len);
    if (rc < 0) {
        rc = tpl_fail_code(x, tpl_error_code(rc), "%s", co_error_last());
    } else {
        co_buf b = OUT_INIT;
        tv dot = sp_is_nil(&a[1]) ? tv_invalid() : a[1];
        rc = tpl_execute(x, &clone, "gotpl", dot, &b);
        if (rc < 0) {
            co_buf_dispose(&b);
        } else {
            *ret = adjusted(x, &b);
        }
    }
    tpl_arena_dispose(&clone.arena);
    free(clone.trees);
    return rc;
}

/* ---- table -------------------------------------------------------------------------------- */

static const tv_type *const P_AA[] = {&T_IFACE, &T_IFACE};
static const tv_type *const P_SA[] = {&T_STRING, &T_IFACE};

static const tpl_func funcs[] = {
    TPL_FUNC("bitwiseAnd", fn_and, SP_A, 1, true, true, &T_UINT64),
    TPL_FUNC("bitwiseOr", fn_or, SP_A, 1, true, true, &T_UINT64),
    TPL_FUNC("bitwiseShiftLeft", fn_shift_left, P_AA, 2, false, true, &T_UINT64),
    TPL_FUNC("bitwiseShiftRight", fn_shift_right, P_AA, 2, false, true, &T_UINT64),
    TPL_FUNC("bitwiseXor", fn_xor, SP_A, 1, true, true, &T_UINT64),
    TPL_FUNC("formatIPv4Address", fn_format_ipv4, SP_A, 1, false, true, &T_STRING),
    TPL_FUNC("fromJson", fn_from_json, SP_S, 1, false, true, &T_IFACE),
    TPL_FUNC("fromJsonArray", fn_from_json_array, SP_S, 1, false, true, &T_LIST_ANY),
    TPL_FUNC("fromYaml", fn_from_yaml, SP_S, 1, false, true, &T_IFACE),
    TPL_FUNC("fromYamlArray", fn_from_yaml_array, SP_S, 1, false, true, &T_LIST_ANY),
    TPL_FUNC("include", fn_include, P_SA, 2, false, true, &T_STRING),
    TPL_FUNC("mustFromJson", fn_from_json, SP_S, 1, false, true, &T_IFACE),
    TPL_FUNC("mustFromJsonArray", fn_from_json_array, SP_S, 1, false, true, &T_LIST_ANY),
    TPL_FUNC("mustFromYaml", fn_from_yaml, SP_S, 1, false, true, &T_IFACE),
    TPL_FUNC("mustFromYamlArray", fn_from_yaml_array, SP_S, 1, false, true, &T_LIST_ANY),
    TPL_FUNC("mustToJson", fn_to_json, SP_A, 1, false, true, &T_STRING),
    TPL_FUNC("mustToPrettyJson", fn_to_pretty_json, SP_A, 1, false, true, &T_STRING),
    TPL_FUNC("mustToRawJson", fn_to_raw_json, SP_A, 1, false, true, &T_STRING),
    TPL_FUNC("mustToYaml", fn_to_yaml, SP_A, 1, false, true, &T_STRING),
    TPL_FUNC("parseIPv4Address", fn_parse_ipv4, SP_A, 1, false, true, &T_UINT32),
    TPL_FUNC("required", fn_required, P_SA, 2, false, true, &T_IFACE),
    TPL_FUNC("toJson", fn_to_json, SP_A, 1, false, true, &T_STRING),
    TPL_FUNC("toPrettyJson", fn_to_pretty_json, SP_A, 1, false, true, &T_STRING),
    TPL_FUNC("toRawJson", fn_to_raw_json, SP_A, 1, false, true, &T_STRING),
    TPL_FUNC("toYaml", fn_to_yaml, SP_A, 1, false, true, &T_STRING),
    TPL_FUNC("tpl", fn_tpl, P_SA, 2, false, true, &T_STRING),
};

void tpl_register_runtime(co_template_funcs *f)
{
    tpl_register_all(f, funcs, CO_ARRAY_SIZE(funcs));
}
