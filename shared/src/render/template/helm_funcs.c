/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helm's template functions that neither sprig nor the runtime have: toToml, which encodes a
 * value with BurntSushi/toml's Encoder (two-space indentation of nested tables, keys sorted
 * with plain values before tables, nil map values dropped) and, like Helm, returns the
 * encoder's error text as its result instead of failing.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "sprig.h"

#define OUT_INIT CO_BUF_INIT(tpl_out_cap())

/* the TOML type of a value (BurntSushi's tomlTypeOfGo) */
enum ttype {
    TT_NONE,
    TT_BOOL,
    TT_INT,
    TT_FLOAT,
    TT_STRING,
    TT_DATETIME,
    TT_ARRAY,
    TT_ARRAY_HASH,
    TT_HASH,
};

typedef struct tenc {
    tpl_x *x;
    co_buf *b;
    bool written;
    const char *err;  /* the encoder's error (becomes the result) */
    const char *fail; /* a Go runtime panic (fails the call) */
    int rc;           /* the output buffer failed */
    bool failed;      /* too deep, or the budget spent: the message is set */
    const tv_str **key;
    size_t *mark; /* kpath's length before each key of e->key was added */
    size_t depth;
    size_t cap;
    co_buf kpath; /* the keys of e->key as a table header writes them, dot-separated */
    tv_path path; /* containers being encoded */
} tenc;

static bool stopped(const tenc *e)
{
    return e->err || e->fail || e->rc < 0 || e->failed;
}

/* Enters a container of the value: 1 to leave with tleave(), 0 for nothing to leave, -1 when
 * the value is too deep (a map can contain itself) or the budget is spent. */
static int tenter(tenc *e, const tv *v)
{
    int rc = co_budget_tick();
    if (rc < 0) {
        e->failed = true;
        tpl_ignore(tpl_fail_budget(e->x, rc));
        return -1;
    }
    int in = tv_path_enter(&e->path, v);
    if (in < 0) {
        e->failed = true;
        tpl_ignore(tv_path_fail(e->x, &e->path, v));
    }
    return in;
}

static void tleave(tenc *e, int in)
{
    if (in > 0) {
        tv_path_leave(&e->path);
    }
}

/* Appends to @p b: the output (e->b) or the key path. */
static void bput(tenc *e, co_buf *b, const char *s, size_t n)
{
    if (e->rc == 0) {
        e->rc = co_buf_put(b, s, n);
    }
    if (b == e->b) {
        e->written = true;
    }
}

static void put(tenc *e, const char *s, size_t n)
{
    bput(e, e->b, s, n);
}

static void puts_(tenc *e, const char *s)
{
    put(e, s, strlen(s));
}

static void newline(tenc *e)
{
    if (e->written) {
        put(e, "\n", 1);
    }
}

/* eindirect: pointers to values other than structs and non-nil interfaces are followed (our
 * values never hold a non-nil interface, so only pointers remain). */
static bool is_nil(const tv *v)
{
    switch (tv_kind(v)) {
    case TK_INVALID:
    case TK_IFACE:
        return true;
    case TK_MAP:
        return !v->u.m;
    case TK_SLICE:
        return v->t != &T_BYTES && !v->u.l;
    case TK_PTR:
        return !v->u.o;
    default:
        return false;
    }
}

static int ttype_of(tenc *e, const tv *v);

/* isTableArray: every element a table; a nil element is an error. */
static int table_array(tenc *e, const tv *v)
{
    int64_t n = tv_len(v);
    if (is_nil(v) || n <= 0) {
        return TT_ARRAY;
    }
    bool all = true;
    int in = tenter(e, v);
    if (in < 0) {
        return TT_NONE;
    }
    for (int64_t i = 0; i < n; i++) {
        tv item = sp_list_item(v, (size_t)i);
        int t = ttype_of(e, &item);
        if (stopped(e)) {
            tleave(e, in);
            return TT_NONE;
        }
        if (t == TT_NONE) {
            e->err = "toml: cannot encode array with nil element";
            tleave(e, in);
            return TT_NONE;
        }
        if (t != TT_HASH) {
            all = false;
        }
    }
    tleave(e, in);
    return all ? TT_ARRAY_HASH : TT_ARRAY;
}

static int ttype_of(tenc *e, const tv *v)
{
    if (is_nil(v)) {
        return TT_NONE;
    }
    if (tpl_is_time(v)) {
        return TT_DATETIME;
    }
    switch (tv_kind(v)) {
    case TK_BOOL:
        return TT_BOOL;
    case TK_FLOAT32:
    case TK_FLOAT64:
        return TT_FLOAT;
    case TK_STRING:
        return TT_STRING;
    case TK_SLICE:
    case TK_ARRAY:
        return table_array(e, v);
    case TK_MAP:
    case TK_STRUCT:
    case TK_PTR:
        return TT_HASH;
    default:
        if (tk_is_int(tv_kind(v)) || tk_is_uint(tv_kind(v))) {
            return TT_INT;
        }
        {
            const char *kind = sp_kind_name(v);
            size_t kl = strlen(kind);
            char *msg = tpl_alloc(e->x, kl + 32);
            snprintf(msg, kl + 32, "unsupported type: %s", kind);
            e->err = msg;
        }
        return TT_NONE;
    }
}

/* BurntSushi's dblQuotedReplacer; the bytes between escapes go out in one piece. */
static void quoted(tenc *e, co_buf *b, const char *s, size_t n)
{
    bput(e, b, "\"", 1);
    size_t plain = 0; /* start of the bytes not yet written */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        const char *r = NULL;
        switch (c) {
        case '"':
            r = "\\\"";
            break;
        case '\\':
            r = "\\\\";
            break;
        case '\b':
            r = "\\b";
            break;
        case '\t':
            r = "\\t";
            break;
        case '\n':
            r = "\\n";
            break;
        case '\f':
            r = "\\f";
            break;
        case '\r':
            r = "\\r";
            break;
        default:
            if (c < 0x20 || c == 0x7f) {
                snprintf(esc, sizeof(esc), "\\u%04x", c);
                r = esc;
            }
            break;
        }
        if (r) {
            bput(e, b, s + plain, i - plain);
            bput(e, b, r, strlen(r));
            plain = i + 1;
        }
    }
    bput(e, b, s + plain, n - plain);
    bput(e, b, "\"", 1);
}

static void key_part(tenc *e, co_buf *b, const tv_str *k)
{
    if (k->len == 0) {
        bput(e, b, "\"\"", 2);
        return;
    }
    for (size_t i = 0; i < k->len; i++) {
        unsigned char c = (unsigned char)k->s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-')) {
            quoted(e, b, k->s, k->len);
            return;
        }
    }
    bput(e, b, k->s, k->len);
}

/* Two spaces per level below the first, written a run at a time. */
static void indent(tenc *e)
{
    static const char spaces[] = "                                                                ";
    size_t n = e->depth > 1 ? 2 * (e->depth - 1) : 0;
    while (n > 0 && !stopped(e)) {
        size_t k = n < sizeof(spaces) - 1 ? n : sizeof(spaces) - 1;
        put(e, spaces, k);
        n -= k;
    }
}

/* The dotted path of the keys, kept rendered as keys are added and removed, so that a table
 * header at depth d is one copy rather than d keys quoted again (a deep map is otherwise
 * quadratic in quoting work, not only in output). */
static void key_path(tenc *e)
{
    put(e, co_buf_cstr(&e->kpath), e->kpath.len);
}

static void push_key(tenc *e, const tv_str *k)
{
    if (e->depth == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 16;
        const tv_str **nk = tpl_alloc(e->x, cap * sizeof(const tv_str *));
        size_t *nm = tpl_alloc(e->x, cap * sizeof(size_t));
        if (e->depth) {
            memcpy(nk, e->key, e->depth * sizeof(const tv_str *));
            memcpy(nm, e->mark, e->depth * sizeof(size_t));
        }
        e->key = nk;
        e->mark = nm;
        e->cap = cap;
    }
    e->mark[e->depth] = e->kpath.len;
    if (e->depth > 0) {
        bput(e, &e->kpath, ".", 1);
    }
    key_part(e, &e->kpath, k);
    e->key[e->depth++] = k;
}

static void pop_key(tenc *e)
{
    e->depth--;
    co_buf_truncate(&e->kpath, e->mark[e->depth]);
}

static void element(tenc *e, const tv *v);
static void encode(tenc *e, const tv *v);

static void map_body(tenc *e, const tv *v, bool inline_);
static void struct_body(tenc *e, const tv *v, bool inline_);

static void key_value(tenc *e, const tv_str *k, const tv *v, bool inline_)
{
    if (!k) {
        e->err = "toml: top-level values must be Go maps or structs";
        return;
    }
    if (!inline_) {
        indent(e);
    }
    key_part(e, e->b, k);
    puts_(e, " = ");
    element(e, v);
    if (!inline_) {
        newline(e);
    }
}

static void element(tenc *e, const tv *v)
{
    if (stopped(e)) {
        return;
    }
    if (tpl_is_time(v)) {
        tv s;
        tv args[2] = {*v, tv_cstring(e->x, "2006-01-02T15:04:05.999999999Z07:00")};
        const tpl_func *m = tv_method(v, "Format", 6);
        if (m && tpl_call(e->x, m, &s, args, 2) == 0) {
            put(e, s.u.s->s, s.u.s->len);
        }
        return;
    }
    char num[32];
    switch (tv_kind(v)) {
    case TK_INVALID:
    case TK_IFACE:
        e->fail = "reflect: call of reflect.Value.Interface on zero Value";
        return;
    case TK_STRING:
        quoted(e, e->b, v->u.s->s, v->u.s->len);
        return;
    case TK_BOOL:
        puts_(e, v->u.b ? "true" : "false");
        return;
    case TK_FLOAT32:
    case TK_FLOAT64: {
        double f = v->u.f;
        if (isnan(f)) {
            puts_(e, "nan");
        } else if (isinf(f)) {
            puts_(e, signbit(f) ? "-inf" : "+inf");
        } else {
            co_buf tmp = OUT_INIT;
            int rc = tpl_format_float(&tmp, f, 'f', -1);
            if (rc == 0) {
                put(e, co_buf_cstr(&tmp), tmp.len);
                if (!memchr(co_buf_cstr(&tmp), '.', tmp.len)) {
                    puts_(e, ".0");
                }
            } else {
                e->rc = rc;
            }
            co_buf_dispose(&tmp);
        }
        return;
    }
    case TK_SLICE:
    case TK_ARRAY: {
        int in = tenter(e, v);
        if (in < 0) {
            return;
        }
        int64_t n = tv_len(v);
        puts_(e, "[");
        for (int64_t i = 0; i < n && !stopped(e); i++) {
            tv item = sp_list_item(v, (size_t)i);
            element(e, &item);
            if (i != n - 1) {
                puts_(e, ", ");
            }
        }
        puts_(e, "]");
        tleave(e, in);
        return;
    }
    case TK_MAP:
    case TK_STRUCT:
    case TK_PTR: {
        int in = tenter(e, v);
        if (in < 0) {
            return;
        }
        if (tv_kind(v) == TK_MAP) {
            map_body(e, v, true);
        } else {
            struct_body(e, v, true);
        }
        tleave(e, in);
        return;
    }
    default:
        if (tk_is_int(tv_kind(v))) {
            snprintf(num, sizeof(num), "%lld", (long long)v->u.i);
        } else {
            snprintf(num, sizeof(num), "%llu", (unsigned long long)v->u.u);
        }
        puts_(e, num);
        return;
    }
}

static void table(tenc *e, const tv *v)
{
    int in = tenter(e, v);
    if (in < 0) {
        return;
    }
    if (e->depth == 1) {
        newline(e);
    }
    if (e->depth > 0) {
        indent(e);
        puts_(e, "[");
        key_path(e);
        puts_(e, "]");
        newline(e);
    }
    if (tv_kind(v) == TK_MAP) {
        map_body(e, v, false);
    } else {
        struct_body(e, v, false);
    }
    tleave(e, in);
}

static void array_of_tables(tenc *e, const tv *v)
{
    if (e->depth == 0) {
        e->err = "toml: top-level values must be Go maps or structs";
        return;
    }
    int list_in = tenter(e, v);
    if (list_in < 0) {
        return;
    }
    int64_t n = tv_len(v);
    for (int64_t i = 0; i < n && !stopped(e); i++) {
        tv item = sp_list_item(v, (size_t)i);
        if (is_nil(&item)) {
            continue;
        }
        newline(e);
        indent(e);
        puts_(e, "[[");
        key_path(e);
        puts_(e, "]]");
        newline(e);
        int in = tenter(e, &item);
        if (in < 0) {
            break;
        }
        if (tv_kind(&item) == TK_MAP) {
            map_body(e, &item, false);
        } else {
            struct_body(e, &item, false);
        }
        tleave(e, in);
    }
    tleave(e, list_in);
}

/* encode(key, v) with the key on e->key. */
static void encode(tenc *e, const tv *v)
{
    if (stopped(e)) {
        return;
    }
    const tv_str *last = e->depth ? e->key[e->depth - 1] : NULL;
    if (tpl_is_time(v)) {
        key_value(e, last, v, false);
        return;
    }
    switch (tv_kind(v)) {
    case TK_INVALID:
    case TK_IFACE:
        return;
    case TK_MAP:
        if (v->u.m) {
            table(e, v);
        }
        return;
    case TK_STRUCT:
    case TK_PTR:
        if (v->u.o) {
            table(e, v);
        }
        return;
    case TK_SLICE:
    case TK_ARRAY:
        if (ttype_of(e, v) == TT_ARRAY_HASH) {
            array_of_tables(e, v);
            return;
        }
        if (stopped(e)) {
            return;
        }
        break;
    default:
        break;
    }
    key_value(e, last, v, false);
}

static void map_body(tenc *e, const tv *v, bool inline_)
{
    if (!v->u.m) {
        if (inline_) {
            puts_(e, "{}");
        }
        return;
    }
    tv_map *m = v->u.m;
    const uint32_t *order = tv_map_sorted(e->x, m);
    /* classify first: plain values, then tables (and errors before any output matters) */
    bool *sub = tpl_alloc(e->x, (m->n ? m->n : 1) * sizeof(*sub));
    size_t nsub = 0;
    for (size_t i = 0; i < m->n; i++) {
        int t = ttype_of(e, &m->vals[i]);
        if (stopped(e)) {
            return;
        }
        sub[i] = t == TT_HASH || t == TT_ARRAY_HASH;
        nsub += sub[i];
    }
    size_t ndirect = m->n - nsub;
    if (inline_) {
        puts_(e, "{");
    }
    for (int pass = 0; pass < 2 && !stopped(e); pass++) {
        size_t count = pass == 0 ? ndirect : nsub;
        size_t idx = 0;
        for (size_t j = 0; j < m->n && !stopped(e); j++) {
            uint32_t i = order[j];
            if (sub[i] != (pass == 1)) {
                continue;
            }
            size_t pos = idx++;
            const tv *val = &m->vals[i];
            if (is_nil(val)) {
                continue;
            }
            if (inline_) {
                key_value(e, m->keys[i], val, true);
                if ((pass == 0 && nsub > 0) || pos != count - 1) {
                    puts_(e, ", ");
                }
            } else {
                push_key(e, m->keys[i]);
                encode(e, val);
                pop_key(e);
            }
        }
    }
    if (inline_) {
        puts_(e, "}");
    }
}

/* A struct's exported fields by their Go names, plain values first (eStruct). */
static void struct_body(tenc *e, const tv *v, bool inline_)
{
    const tv_type *st = tv_kind(v) == TK_PTR ? v->t->elem : v->t;
    if (!v->u.o || !st) {
        return;
    }
    if (inline_) {
        puts_(e, "{");
    }
    for (int pass = 0; pass < 2 && !stopped(e); pass++) {
        for (size_t i = 0; i < st->nfields && !stopped(e); i++) {
            const tv *fv = &v->u.o->fields[i];
            int t = ttype_of(e, fv);
            if ((t == TT_HASH || t == TT_ARRAY_HASH) != (pass == 1) || is_nil(fv)) {
                continue;
            }
            const tv_str *name = tv_str_new(e->x, st->fields[i].name, strlen(st->fields[i].name));
            if (inline_) {
                key_value(e, name, fv, true);
                if (i != st->nfields - 1) {
                    puts_(e, ", ");
                }
            } else {
                push_key(e, name);
                encode(e, fv);
                pop_key(e);
            }
        }
    }
    if (inline_) {
        puts_(e, "}");
    }
}

static int fn_to_toml(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (!a[0].t || a[0].t == &T_IFACE) {
        return tpl_fail(x, "reflect: call of reflect.Value.Type on zero Value");
    }
    co_buf b = OUT_INIT;
    tenc e;
    memset(&e, 0, offsetof(tenc, path));
    e.path.n = 0;
    e.x = x;
    e.b = &b;
    e.kpath = (co_buf)OUT_INIT;
    encode(&e, &a[0]);
    co_buf_dispose(&e.kpath);
    if (e.failed) {
        co_buf_dispose(&b);
        return -1;
    }
    if (e.rc < 0) {
        co_buf_dispose(&b);
        return tpl_fail_out(x, &b);
    }
    if (e.fail) {
        co_buf_dispose(&b);
        return tpl_fail(x, "%s", e.fail);
    }
    if (e.err) {
        co_buf_dispose(&b);
        *ret = tv_cstring(x, e.err);
        return 0;
    }
    return sp_ret_buf(x, ret, &b, 0);
}

static const tpl_func funcs[] = {
    TPL_FUNC("toToml", fn_to_toml, SP_A, 1, false, false, &T_STRING),
};

void tpl_register_helm(co_template_funcs *f)
{
    tpl_register_all(f, funcs, CO_ARRAY_SIZE(funcs));
}
