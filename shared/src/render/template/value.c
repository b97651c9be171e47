/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The value model of the template engine: the arena, Go type descriptors, value constructors,
 * string-keyed maps, conversion from json-c, and the reflect-level predicates (truth, length,
 * DeepEqual, deep copy) plus the Unicode and UTF-8 helpers that mirror Go's unicode and
 * unicode/utf8 packages.
 */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/utf8.h"
#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/util/hash.h"
#include "co/json/jdoc.h"
#include "tpl.h"
#include "unicode_tables.h"

/* ------------------------------------------------------------------------------------------ */
/* Arena                                                                                      */
/* ------------------------------------------------------------------------------------------ */

struct arena_chunk {
    struct arena_chunk *next;
    _Alignas(16) char data[];
};

enum { ARENA_CHUNK = 64 * 1024 };

void *tpl_arena_alloc(tpl_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0) {
        n = 16;
    }
    if (n > a->left) {
        size_t size = n > ARENA_CHUNK / 4 ? n : ARENA_CHUNK;
        struct arena_chunk *c = co_xmalloc(sizeof(*c) + size);
        /* the charge cannot fail the allocation; an exceeded budget stops the execution at
         * the next step or function return */
        if (a->charged == 0) {
            a->budget = co_budget_id();
        }
        if (a->budget != 0 && a->budget == co_budget_id()) {
            tpl_ignore(co_budget_charge(sizeof(*c) + size));
            a->charged += sizeof(*c) + size;
        }
        if (n > ARENA_CHUNK / 4 && a->head) {
            /* a big block gets its own chunk behind the current one */
            c->next = a->head->next;
            a->head->next = c;
            a->used += n;
            return c->data;
        }
        c->next = a->head;
        a->head = c;
        a->cur = c->data;
        a->left = size;
    }
    void *p = a->cur;
    a->cur += n;
    a->left -= n;
    a->used += n;
    return p;
}

void tpl_arena_dispose(tpl_arena *a)
{
    co_budget_release(a->budget, a->charged);
    struct arena_chunk *c = a->head;
    while (c) {
        struct arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    memset(a, 0, sizeof(*a));
}

void *tpl_alloc(tpl_x *x, size_t n)
{
    return tpl_arena_alloc(&x->sess->arena, n);
}

void *tpl_session_alloc(co_template_session *s, size_t n)
{
    return tpl_arena_alloc(&s->arena, n);
}

int tpl_fail_budget(tpl_x *x, int rc)
{
    return tpl_fail_code(x, rc, "%s", co_error_last());
}

int tpl_reserve(tpl_x *x, size_t n, size_t size)
{
    size_t left = co_budget_memory_left();
    if (size != 0 && n > left / size) {
        return tpl_fail_budget(x, co_budget_refuse(n > SIZE_MAX / size ? SIZE_MAX : n * size));
    }
    return 0;
}

size_t tpl_out_cap(void)
{
    size_t left = co_budget_memory_left();
    return left < CO_MAX_TEMPLATE_OUTPUT ? left : CO_MAX_TEMPLATE_OUTPUT;
}

int tpl_fail_out(tpl_x *x, const co_buf *b)
{
    /* a buffer capped below the output cap by the budget: the budget has no more left now (a
     * small buffer for an error message fills long before) */
    if (b->max < CO_MAX_TEMPLATE_OUTPUT && co_budget_memory_left() <= b->max) {
        return tpl_fail_budget(x, co_budget_refuse(b->max + 1));
    }
    return tpl_fail_code(x, CO_ETOOBIG, "output too large (more than %zu bytes)", b->max);
}

/* ------------------------------------------------------------------------------------------ */
/* Types                                                                                      */
/* ------------------------------------------------------------------------------------------ */

#define SCALAR(var, k, nm) const tv_type var = {.kind = (k), .name = (nm)}

SCALAR(T_BOOL, TK_BOOL, "bool");
SCALAR(T_INT, TK_INT, "int");
SCALAR(T_INT8, TK_INT8, "int8");
SCALAR(T_INT16, TK_INT16, "int16");
SCALAR(T_INT32, TK_INT32, "int32");
SCALAR(T_INT64, TK_INT64, "int64");
SCALAR(T_UINT, TK_UINT, "uint");
SCALAR(T_UINT8, TK_UINT8, "uint8");
SCALAR(T_UINT16, TK_UINT16, "uint16");
SCALAR(T_UINT32, TK_UINT32, "uint32");
SCALAR(T_UINT64, TK_UINT64, "uint64");
SCALAR(T_UINTPTR, TK_UINTPTR, "uintptr");
SCALAR(T_FLOAT32, TK_FLOAT32, "float32");
SCALAR(T_FLOAT64, TK_FLOAT64, "float64");
SCALAR(T_COMPLEX128, TK_COMPLEX128, "complex128");
SCALAR(T_STRING, TK_STRING, "string");
SCALAR(T_IFACE, TK_IFACE, "interface {}");
SCALAR(T_ERROR, TK_IFACE, "error");
/* reflect.Value: a parameter type meaning "anything, including no value" (builtins) */
SCALAR(T_VALUE, TK_STRUCT, "reflect.Value");

const tv_type T_BYTES = {.kind = TK_SLICE, .name = "[]uint8", .elem = &T_UINT8};
const tv_type T_LIST_ANY = {.kind = TK_SLICE, .name = "[]interface {}", .elem = &T_IFACE};
const tv_type T_LIST_STRING = {.kind = TK_SLICE, .name = "[]string", .elem = &T_STRING};
const tv_type T_LIST_INT = {.kind = TK_SLICE, .name = "[]int", .elem = &T_INT};
const tv_type T_LIST_FLOAT64 = {.kind = TK_SLICE, .name = "[]float64", .elem = &T_FLOAT64};
const tv_type T_LIST_BOOL = {.kind = TK_SLICE, .name = "[]bool", .elem = &T_BOOL};
const tv_type T_LIST_LIST_ANY = {.kind = TK_SLICE, .name = "[][]interface {}", .elem = &T_LIST_ANY};
const tv_type T_MAP_ANY = {.kind = TK_MAP, .name = "map[string]interface {}", .elem = &T_IFACE};
const tv_type T_LIST_MAP = {.kind = TK_SLICE,
                            .name = "[]map[string]interface {}",
                            .elem = &T_MAP_ANY};
const tv_type T_MAP_STRING = {.kind = TK_MAP, .name = "map[string]string", .elem = &T_STRING};

/* ------------------------------------------------------------------------------------------ */
/* Constructors                                                                               */
/* ------------------------------------------------------------------------------------------ */

/* the empty string: its text is a NUL byte like every other string (a GNU C initialiser of
 * the flexible array, which gcc and clang both accept) */
const tv_str tv_empty_str = {0, {0}};

tv tv_invalid(void)
{
    tv v = {NULL, {0}};
    return v;
}

tv tv_nil(const tv_type *t)
{
    tv v = {t, {0}};
    return v;
}

tv tv_bool(bool b)
{
    tv v = {&T_BOOL, {.b = b}};
    return v;
}

tv tv_int(const tv_type *t, int64_t i)
{
    tv v = {t, {.i = i}};
    return v;
}

tv tv_uint(const tv_type *t, uint64_t u)
{
    tv v = {t, {.u = u}};
    return v;
}

tv tv_float(double f)
{
    tv v = {&T_FLOAT64, {.f = f}};
    return v;
}

const tv_str *tv_str_new(tpl_x *x, const char *s, size_t len)
{
    if (len == 0) {
        return &tv_empty_str;
    }
    tv_str *p = tpl_alloc(x, sizeof(*p) + len + 1);
    p->len = len;
    memcpy(p->s, s, len);
    p->s[len] = '\0';
    return p;
}

tv tv_string(tpl_x *x, const char *s, size_t len)
{
    tv v = {&T_STRING, {.s = tv_str_new(x, s, len)}};
    return v;
}

tv tv_cstring(tpl_x *x, const char *s)
{
    return tv_string(x, s, strlen(s));
}

tv tv_string_take(tpl_x *x, co_buf *b)
{
    tv v = tv_string(x, b->ptr ? b->ptr : "", b->len);
    co_buf_dispose(b);
    return v;
}

tv tv_bytes(tpl_x *x, const char *s, size_t len)
{
    tv v = {&T_BYTES, {.s = tv_str_new(x, s, len)}};
    return v;
}

tv tv_list_new(tpl_x *x, const tv_type *t, size_t n)
{
    tv_list *l = tpl_alloc(x, sizeof(*l));
    l->n = n;
    l->items = n ? tpl_alloc(x, n * sizeof(tv)) : NULL;
    if (n) {
        memset(l->items, 0, n * sizeof(tv));
    }
    tv v = {t, {.l = l}};
    return v;
}

/* ------------------------------------------------------------------------------------------ */
/* Maps                                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Keyed (co/util/hash.h): map keys come from values, sources and templates nobody here trusts. */
static uint32_t hash_key(const char *s, size_t len)
{
    return (uint32_t)co_hash_bytes(s, len);
}

/* The index has 2*cap slots (a power of two). */
static void map_reindex(tv_map *m)
{
    if (!m->index) {
        return;
    }
    size_t slots = m->cap * 2;
    memset(m->index, 0, slots * sizeof(*m->index));
    for (size_t i = 0; i < m->n; i++) {
        uint32_t h = hash_key(m->keys[i]->s, m->keys[i]->len) & (uint32_t)(slots - 1);
        while (m->index[h]) {
            h = (h + 1) & (uint32_t)(slots - 1);
        }
        m->index[h] = (uint32_t)i + 1;
    }
}

static void map_grow(tpl_x *x, tv_map *m, size_t want)
{
    size_t cap = m->cap ? m->cap : 4;
    while (cap < want) {
        cap *= 2;
    }
    if (cap == m->cap) {
        return;
    }
    const tv_str **keys = tpl_alloc(x, cap * sizeof(void *));
    tv *vals = tpl_alloc(x, cap * sizeof(*vals));
    if (m->n && m->keys && m->vals) {
        memcpy(keys, m->keys, m->n * sizeof(void *));
        memcpy(vals, m->vals, m->n * sizeof(*vals));
    }
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    m->index = tpl_alloc(x, cap * 2 * sizeof(*m->index));
    map_reindex(m);
}

tv tv_map_new(tpl_x *x, const tv_type *t, size_t hint)
{
    tv_map *m = tpl_alloc(x, sizeof(*m));
    memset(m, 0, sizeof(*m));
    map_grow(x, m, hint ? hint : 4);
    tv v = {t, {.m = m}};
    return v;
}

tv *tv_map_get(const tv_map *m, const char *key, size_t len)
{
    if (!m || m->n == 0) {
        return NULL;
    }
    size_t slots = m->cap * 2;
    uint32_t h = hash_key(key, len) & (uint32_t)(slots - 1);
    while (m->index[h]) {
        uint32_t i = m->index[h] - 1;
        if (m->keys[i]->len == len && memcmp(m->keys[i]->s, key, len) == 0) {
            return &m->vals[i];
        }
        h = (h + 1) & (uint32_t)(slots - 1);
    }
    return NULL;
}

void tv_map_set(tpl_x *x, tv_map *m, const tv_str *key, tv val)
{
    tv *slot = tv_map_get(m, key->s, key->len);
    if (slot) {
        *slot = val;
        return;
    }
    if (m->n + 1 > m->cap) {
        map_grow(x, m, m->n + 1);
    }
    size_t slots = m->cap * 2;
    uint32_t h = hash_key(key->s, key->len) & (uint32_t)(slots - 1);
    while (m->index[h]) {
        h = (h + 1) & (uint32_t)(slots - 1);
    }
    m->keys[m->n] = key;
    m->vals[m->n] = val;
    m->index[h] = (uint32_t)m->n + 1;
    m->n++;
    m->sorted = NULL;
    m->natsort = NULL;
}

bool tv_map_del(tv_map *m, const char *key, size_t len)
{
    tv *slot = tv_map_get(m, key, len);
    if (!slot) {
        return false;
    }
    size_t i = (size_t)(slot - m->vals);
    m->n--;
    if (i != m->n) {
        m->keys[i] = m->keys[m->n];
        m->vals[i] = m->vals[m->n];
    }
    map_reindex(m);
    m->sorted = NULL;
    m->natsort = NULL;
    return true;
}

static int key_cmp(const tv_str *a, const tv_str *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->s, b->s, n);
    if (c != 0) {
        return c;
    }
    return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}

/* Insertion sort for small maps, merge sort otherwise; both stable and allocation-light. */
static void sort_perm(uint32_t *p, size_t n, const tv_str **keys, uint32_t *tmp)
{
    if (n < 16) {
        for (size_t i = 1; i < n; i++) {
            uint32_t v = p[i];
            size_t j = i;
            while (j > 0 && key_cmp(keys[p[j - 1]], keys[v]) > 0) {
                p[j] = p[j - 1];
                j--;
            }
            p[j] = v;
        }
        return;
    }
    size_t h = n / 2;
    sort_perm(p, h, keys, tmp);
    sort_perm(p + h, n - h, keys, tmp);
    size_t i = 0;
    size_t j = h;
    size_t k = 0;
    while (i < h && j < n) {
        tmp[k++] = key_cmp(keys[p[i]], keys[p[j]]) <= 0 ? p[i++] : p[j++];
    }
    while (i < h) {
        tmp[k++] = p[i++];
    }
    while (j < n) {
        tmp[k++] = p[j++];
    }
    memcpy(p, tmp, n * sizeof(*p));
}

const uint32_t *tv_map_sorted(tpl_x *x, tv_map *m)
{
    if (!m || m->n == 0) {
        return NULL;
    }
    if (m->sorted) {
        return m->sorted;
    }
    uint32_t *p = tpl_alloc(x, m->n * sizeof(*p));
    uint32_t *tmp = tpl_alloc(x, m->n * sizeof(*tmp));
    for (size_t i = 0; i < m->n; i++) {
        p[i] = (uint32_t)i;
    }
    sort_perm(p, m->n, m->keys, tmp);
    m->sorted = p;
    return p;
}

tv tv_map_copy(tpl_x *x, const tv *src)
{
    if (!src->u.m) {
        return *src;
    }
    tv out = tv_map_new(x, src->t, src->u.m->n);
    for (size_t i = 0; i < src->u.m->n; i++) {
        tv_map_set(x, out.u.m, src->u.m->keys[i], src->u.m->vals[i]);
    }
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* json-c                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static tv from_json(tpl_x *x, struct json_object *j, co_template_numbers mode, int depth)
{
    if (!j) {
        return tv_nil(&T_IFACE);
    }
    switch (json_object_get_type(j)) {
    case json_type_null:
        return tv_nil(&T_IFACE);
    case json_type_boolean:
        return tv_bool(json_object_get_boolean(j) != 0);
    case json_type_double:
        return tv_float(json_object_get_double(j));
    case json_type_int: {
        int64_t i = json_object_get_int64(j);
        bool big = i == INT64_MAX && json_object_get_uint64(j) > (uint64_t)INT64_MAX;
        if (mode == CO_TEMPLATE_NUMBERS_INT64 && !big) {
            return tv_int(&T_INT64, i);
        }
        return tv_float(big ? (double)json_object_get_uint64(j) : (double)i);
    }
    case json_type_string:
        return tv_string(x, json_object_get_string(j), (size_t)json_object_get_string_len(j));
    case json_type_array: {
        size_t n = json_object_array_length(j);
        tv l = tv_list_new(x, &T_LIST_ANY, n);
        for (size_t i = 0; i < n; i++) {
            l.u.l->items[i] = from_json(x, json_object_array_get_idx(j, i), mode, depth + 1);
        }
        return l;
    }
    case json_type_object: {
        tv m = tv_map_new(x, &T_MAP_ANY, (size_t)json_object_object_length(j));
        json_object_object_foreach (j, key, val) {
            tv_map_set(x, m.u.m, tv_str_new(x, key, strlen(key)),
                       from_json(x, val, mode, depth + 1));
        }
        return m;
    }
    }
    return tv_nil(&T_IFACE);
}

tv tv_from_json(tpl_x *x, struct json_object *j, co_template_numbers mode)
{
    return from_json(x, j, mode, 0);
}

tv tv_from_jv(tpl_x *x, const co_jv *j, co_template_numbers mode)
{
    switch (j->type) {
    case CO_JV_BOOL:
        return tv_bool((j->flags & CO_JV_TRUE) != 0);
    case CO_JV_NUMBER:
        if (j->flags & CO_JV_DOUBLE) {
            return tv_float(j->as.d);
        }
        if (j->flags & CO_JV_UINT) {
            return tv_float((double)j->as.u);
        }
        return mode == CO_TEMPLATE_NUMBERS_INT64 ? tv_int(&T_INT64, j->as.i)
                                                 : tv_float((double)j->as.i);
    case CO_JV_STRING:
        return tv_string(x, j->as.s, j->len);
    case CO_JV_ARRAY: {
        tv l = tv_list_new(x, &T_LIST_ANY, j->len);
        size_t i = 0;
        for (const co_jv *e = co_jv_first(j); e; e = co_jv_next(j, e)) {
            l.u.l->items[i++] = tv_from_jv(x, e, mode);
        }
        return l;
    }
    case CO_JV_OBJECT: {
        tv m = tv_map_new(x, &T_MAP_ANY, j->len);
        for (const co_jv *k = co_jv_first(j); k; k = co_jv_next(j, k)) {
            tv_map_set(x, m.u.m, tv_str_new(x, k->as.s, k->len), tv_from_jv(x, k + 1, mode));
        }
        return m;
    }
    default:
        return tv_nil(&T_IFACE);
    }
}

/* An upper bound of the values and member keys of JSON text: each one but the first follows a
 * comma, a colon or an opening bracket outside strings. */
static size_t json_nodes_bound(const char *s, size_t len)
{
    size_t n = 1;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\') {
                i++;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == ',' || c == ':' || c == '[' || c == '{') {
            n++;
        }
    }
    return n;
}

int tpl_json_decode(tpl_x *x, const char *s, size_t len, tv *out, int *type)
{
    /* a co_jdoc document (24 bytes a node, its vector grown by doubling, the text copied twice
     * at most) instead of a json-c tree, which spends up to 800 bytes on an empty object, and
     * reserved before parsing, so that no text makes the parser take more than the budget */
    size_t nodes = json_nodes_bound(s, len);
    if (tpl_reserve(x, nodes * 2 * sizeof(co_jv) + len * 3, 1) < 0) {
        return -1;
    }
    co_jdoc *doc = NULL;
    if (co_jdoc_parse(&doc, s, len, CO_MAX_DOCUMENT, NULL) < 0) {
        return tpl_fail(x, "%s", co_error_last());
    }
    const co_jv *root = co_jdoc_root(doc);
    *type = root->type;
    *out =
        root->type == CO_JV_NULL ? tv_invalid() : tv_from_jv(x, root, CO_TEMPLATE_NUMBERS_FLOAT64);
    co_jdoc_free(doc);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Predicates                                                                                 */
/* ------------------------------------------------------------------------------------------ */

bool tk_is_int(tk k)
{
    return k >= TK_INT && k <= TK_INT64;
}

bool tk_is_uint(tk k)
{
    return k >= TK_UINT && k <= TK_UINTPTR;
}

bool tk_is_float(tk k)
{
    return k == TK_FLOAT32 || k == TK_FLOAT64;
}

bool tv_is_nil(const tv *v)
{
    switch (tv_kind(v)) {
    case TK_INVALID:
    case TK_IFACE:
        return true;
    case TK_MAP:
        return v->u.m == NULL;
    case TK_SLICE:
        return v->t == &T_BYTES ? v->u.s == NULL : v->u.l == NULL;
    case TK_PTR:
        return v->u.o == NULL;
    case TK_FUNC:
        return v->u.fn == NULL;
    default:
        return false;
    }
}

int64_t tv_len(const tv *v)
{
    switch (tv_kind(v)) {
    case TK_STRING:
        return (int64_t)v->u.s->len;
    case TK_SLICE:
    case TK_ARRAY:
        if (v->t == &T_BYTES) {
            return v->u.s ? (int64_t)v->u.s->len : 0;
        }
        return v->u.l ? (int64_t)v->u.l->n : 0;
    case TK_MAP:
        return v->u.m ? (int64_t)v->u.m->n : 0;
    default:
        return -1;
    }
}

bool tv_truth(const tv *v, bool *ok)
{
    *ok = true;
    switch (tv_kind(v)) {
    case TK_INVALID:
        return false;
    case TK_ARRAY:
    case TK_MAP:
    case TK_SLICE:
    case TK_STRING:
        return tv_len(v) > 0;
    case TK_BOOL:
        return v->u.b;
    case TK_COMPLEX64:
    case TK_COMPLEX128:
        return v->u.c[0] != 0 || v->u.c[1] != 0;
    case TK_CHAN:
    case TK_FUNC:
    case TK_PTR:
    case TK_IFACE:
        return !tv_is_nil(v);
    case TK_INT:
    case TK_INT8:
    case TK_INT16:
    case TK_INT32:
    case TK_INT64:
        return v->u.i != 0;
    case TK_FLOAT32:
    case TK_FLOAT64:
        return v->u.f != 0;
    case TK_UINT:
    case TK_UINT8:
    case TK_UINT16:
    case TK_UINT32:
    case TK_UINT64:
    case TK_UINTPTR:
        return v->u.u != 0;
    case TK_STRUCT:
        return true;
    }
    *ok = false;
    return false;
}

static const tv *list_item(const tv *v, size_t i, tv *tmp)
{
    if (v->t == &T_BYTES) {
        *tmp = tv_uint(&T_UINT8, (unsigned char)v->u.s->s[i]);
        return tmp;
    }
    return &v->u.l->items[i];
}

/* The payload that identifies a container (NULL for everything else). */
static const void *container(const tv *v)
{
    switch (tv_kind(v)) {
    case TK_MAP:
        return v->u.m;
    case TK_SLICE:
    case TK_ARRAY:
        return v->t == &T_BYTES ? NULL : (const void *)v->u.l;
    case TK_STRUCT:
    case TK_PTR:
        return v->u.o;
    default:
        return NULL;
    }
}

int tv_path_enter(tv_path *p, const tv *v)
{
    const void *c = container(v);
    if (!c) {
        return 0;
    }
    if (p->n >= CO_MAX_TEMPLATE_VALUE_DEPTH) {
        return -1;
    }
    p->nodes[p->n++] = c;
    return 1;
}

bool tv_path_cycle(const tv_path *p, const tv *v)
{
    const void *c = container(v);
    for (size_t i = 0; c && i < p->n; i++) {
        /* nodes[0..n) were written by tv_path_enter(); the rest is never read */
        if (p->nodes[i] == c) { // NOLINT(clang-analyzer-core.UndefinedBinaryOperatorResult)
            return true;
        }
    }
    return false;
}

int tv_path_fail(tpl_x *x, const tv_path *p, const tv *v)
{
    if (tv_path_cycle(p, v)) {
        return tpl_fail(x, "value contains itself");
    }
    return tpl_fail(x, "value nested deeper than %d levels", CO_MAX_TEMPLATE_VALUE_DEPTH);
}

typedef struct walk {
    tpl_x *x;
    tv_path path;
} walk;

/* Counts one value of a walk against the CPU budget. */
static int walk_tick(walk *w)
{
    int rc = co_budget_tick();
    return rc < 0 ? tpl_fail_budget(w->x, rc) : 0;
}

static int deep_equal(walk *w, const tv *a, const tv *b, bool *eq);

static int deep_equal_container(walk *w, const tv *a, const tv *b, bool *eq)
{
    *eq = true;
    switch (tv_kind(a)) {
    case TK_SLICE:
    case TK_ARRAY: {
        if (tv_is_nil(a) || tv_is_nil(b)) {
            *eq = tv_is_nil(a) == tv_is_nil(b);
            return 0;
        }
        int64_t n = tv_len(a);
        if (n != tv_len(b)) {
            *eq = false;
            return 0;
        }
        for (int64_t i = 0; i < n && *eq; i++) {
            tv ta;
            tv tb;
            if (deep_equal(w, list_item(a, (size_t)i, &ta), list_item(b, (size_t)i, &tb), eq) < 0) {
                return -1;
            }
        }
        return 0;
    }
    case TK_MAP: {
        if (!a->u.m || !b->u.m) {
            *eq = a->u.m == b->u.m;
            return 0;
        }
        if (a->u.m->n != b->u.m->n) {
            *eq = false;
            return 0;
        }
        if (a->u.m == b->u.m) {
            return 0;
        }
        for (size_t i = 0; i < a->u.m->n && *eq; i++) {
            const tv_str *k = a->u.m->keys[i];
            tv *v = tv_map_get(b->u.m, k->s, k->len);
            if (!v) {
                *eq = false;
            } else if (deep_equal(w, &a->u.m->vals[i], v, eq) < 0) {
                return -1;
            }
        }
        return 0;
    }
    case TK_PTR:
    case TK_STRUCT: {
        if (!a->u.o || !b->u.o) {
            *eq = a->u.o == b->u.o;
            return 0;
        }
        if (a->u.o == b->u.o) {
            return 0;
        }
        const tv_type *st = a->t->kind == TK_PTR ? a->t->elem : a->t;
        if (st == &T_TIME && a->t == b->t) {
            *eq = tpl_time_equal(a, b);
            return 0;
        }
        if (a->t->marshal_json || (st && st->marshal_json)) {
            /* native payloads (time, semver) compare by their canonical encoding */
            *eq = a->u.o->native == b->u.o->native;
            return 0;
        }
        for (size_t i = 0; st && i < st->nfields && *eq; i++) {
            if (deep_equal(w, &a->u.o->fields[i], &b->u.o->fields[i], eq) < 0) {
                return -1;
            }
        }
        return 0;
    }
    default:
        *eq = false;
        return 0;
    }
}

static int deep_equal(walk *w, const tv *a, const tv *b, bool *eq)
{
    if (!a->t || !b->t) {
        *eq = !a->t && !b->t;
        return 0;
    }
    if (a->t != b->t && strcmp(a->t->name, b->t->name) != 0) {
        *eq = false;
        return 0;
    }
    switch (tv_kind(a)) {
    case TK_BOOL:
        *eq = a->u.b == b->u.b;
        return 0;
    case TK_INT:
    case TK_INT8:
    case TK_INT16:
    case TK_INT32:
    case TK_INT64:
        *eq = a->u.i == b->u.i;
        return 0;
    case TK_UINT:
    case TK_UINT8:
    case TK_UINT16:
    case TK_UINT32:
    case TK_UINT64:
    case TK_UINTPTR:
        *eq = a->u.u == b->u.u;
        return 0;
    case TK_FLOAT32:
    case TK_FLOAT64:
        *eq = a->u.f == b->u.f;
        return 0;
    case TK_COMPLEX64:
    case TK_COMPLEX128:
        *eq = a->u.c[0] == b->u.c[0] && a->u.c[1] == b->u.c[1];
        return 0;
    case TK_STRING:
        *eq = a->u.s->len == b->u.s->len && memcmp(a->u.s->s, b->u.s->s, a->u.s->len) == 0;
        return 0;
    case TK_IFACE:
        *eq = true; /* both nil */
        return 0;
    default:
        break;
    }
    if (walk_tick(w) < 0) {
        return -1;
    }
    int in = tv_path_enter(&w->path, a);
    if (in < 0) {
        return tv_path_fail(w->x, &w->path, a);
    }
    int rc = deep_equal_container(w, a, b, eq);
    if (in > 0) {
        tv_path_leave(&w->path);
    }
    return rc;
}

int tv_deep_equal(tpl_x *x, const tv *a, const tv *b, bool *eq)
{
    walk w;
    w.x = x;
    w.path.n = 0;
    return deep_equal(&w, a, b, eq);
}

static int deep_copy(walk *w, const tv *v, tv *out)
{
    tk k = tv_kind(v);
    if ((k != TK_MAP && k != TK_SLICE) || tv_is_nil(v) || v->t == &T_BYTES) {
        *out = *v;
        return 0;
    }
    if (walk_tick(w) < 0) {
        return -1;
    }
    int in = tv_path_enter(&w->path, v);
    if (in < 0) {
        return tv_path_fail(w->x, &w->path, v);
    }
    int rc = 0;
    if (k == TK_MAP) {
        *out = tv_map_new(w->x, v->t, v->u.m->n);
        for (size_t i = 0; i < v->u.m->n && rc == 0; i++) {
            tv c;
            rc = deep_copy(w, &v->u.m->vals[i], &c);
            if (rc == 0) {
                tv_map_set(w->x, out->u.m, v->u.m->keys[i], c);
            }
        }
    } else {
        *out = tv_list_new(w->x, v->t, v->u.l->n);
        for (size_t i = 0; i < v->u.l->n && rc == 0; i++) {
            rc = deep_copy(w, &v->u.l->items[i], &out->u.l->items[i]);
        }
    }
    /* copies of shared values multiply: stop as soon as the budget is spent */
    if (rc == 0 && (rc = co_budget_status()) < 0) {
        rc = tpl_fail_budget(w->x, rc);
    }
    tv_path_leave(&w->path);
    return rc;
}

int tv_deep_copy(tpl_x *x, const tv *v, tv *out)
{
    walk w;
    w.x = x;
    w.path.n = 0;
    return deep_copy(&w, v, out);
}

const char *tv_type_name(const tv *v)
{
    return v->t ? v->t->name : "<nil>";
}

const tpl_func *tv_method(const tv *v, const char *name, size_t len)
{
    const tv_type *t = v->t;
    for (int pass = 0; pass < 2 && t; pass++) {
        for (size_t i = 0; i < t->nmethods; i++) {
            const tpl_func *m = &t->methods[i];
            if (strlen(m->name) == len && memcmp(m->name, name, len) == 0) {
                return m;
            }
        }
        /* a pointer's method set includes the value methods of its element */
        t = t->kind == TK_PTR ? t->elem : NULL;
    }
    return NULL;
}

static bool in_table(const uint32_t (*t)[2], size_t n, int32_t r)
{
    if (r < 0) {
        return false;
    }
    uint32_t c = (uint32_t)r;
    size_t lo = 0;
    size_t hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < t[mid][0]) {
            hi = mid;
        } else if (c > t[mid][1]) {
            lo = mid + 1;
        } else {
            return true;
        }
    }
    return false;
}

#define IN(tab, r) in_table((tab), sizeof(tab) / sizeof((tab)[0]), (r))

bool tpl_is_letter(int32_t r)
{
    if (r < 0x80) {
        return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z');
    }
    return IN(uni_letter, r);
}

bool tpl_is_digit(int32_t r)
{
    if (r < 0x80) {
        return r >= '0' && r <= '9';
    }
    return IN(uni_digit, r);
}

bool tpl_is_space(int32_t r)
{
    if (r < 0x100) {
        return r == ' ' || (r >= '\t' && r <= '\r') || r == 0x85 || r == 0xA0;
    }
    return IN(uni_space, r);
}

bool tpl_is_upper(int32_t r)
{
    if (r < 0x80) {
        return r >= 'A' && r <= 'Z';
    }
    return IN(uni_upper, r);
}

bool tpl_is_lower(int32_t r)
{
    if (r < 0x80) {
        return r >= 'a' && r <= 'z';
    }
    return IN(uni_lower, r);
}

bool tpl_is_punct(int32_t r)
{
    return IN(uni_punct, r);
}

/* unicode.IsGraphic: L, M, N, P, S, Zs. */
bool tpl_is_graphic(int32_t r)
{
    if (r < 0x80) {
        return r >= 0x20 && r < 0x7F;
    }
    return IN(uni_letter, r) || IN(uni_mark, r) || IN(uni_number, r) || IN(uni_punct, r) ||
           IN(uni_symbol, r) || IN(uni_zs, r);
}

/* unicode.IsPrint: like IsGraphic but the only space is U+0020. */
bool tpl_is_print(int32_t r)
{
    if (r < 0x80) {
        return r >= 0x20 && r < 0x7F;
    }
    return IN(uni_letter, r) || IN(uni_mark, r) || IN(uni_number, r) || IN(uni_punct, r) ||
           IN(uni_symbol, r);
}

static int32_t map_rune(const uint32_t (*t)[2], size_t n, int32_t r)
{
    if (r < 0) {
        return r;
    }
    size_t lo = 0;
    size_t hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((uint32_t)r < t[mid][0]) {
            hi = mid;
        } else if ((uint32_t)r > t[mid][0]) {
            lo = mid + 1;
        } else {
            return (int32_t)t[mid][1];
        }
    }
    return r;
}

#define MAP(tab, r) map_rune((tab), sizeof(tab) / sizeof((tab)[0]), (r))

int32_t tpl_to_upper(int32_t r)
{
    if (r < 0x80) {
        return r >= 'a' && r <= 'z' ? r - 32 : r;
    }
    return MAP(uni_to_upper, r);
}

int32_t tpl_to_lower(int32_t r)
{
    if (r < 0x80) {
        return r >= 'A' && r <= 'Z' ? r + 32 : r;
    }
    return MAP(uni_to_lower, r);
}

int32_t tpl_to_title(int32_t r)
{
    if (r < 0x80) {
        return r >= 'a' && r <= 'z' ? r - 32 : r;
    }
    return MAP(uni_to_title, r);
}
