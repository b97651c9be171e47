/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading co_jdoc documents (co/json/jdoc.h). The parser that builds them is json.c's, which shares
 * its scanners and error messages with co_json_parse().
 */
#include "co/json/jdoc.h"

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "json_int.h"

const co_jv *co_jdoc_root(const co_jdoc *doc)
{
    return doc->nodes;
}

/* The member key after key @p k of an object (dead ones included). */
static inline const co_jv *next_key(const co_jv *k)
{
    return k + 1 + k[1].size;
}

const co_jv *co_jv_get(const co_jv *obj, const char *key)
{
    if (!obj || obj->type != CO_JV_OBJECT) {
        return NULL;
    }
    const co_jv *k = obj + 1;
    for (uint32_t i = 0; i < obj->len; i++, k = next_key(k)) {
        /* keys are short: the first byte, then an inline comparison, beat a call to strcmp */
        const char *s = k->as.s;
        if (s[0] != key[0] || (k->flags & CO_JV_DEAD)) {
            continue;
        }
        size_t j = 0;
        while (s[j] && s[j] == key[j]) {
            j++;
        }
        if (s[j] == key[j]) {
            return k + 1;
        }
    }
    return NULL;
}

const char *co_jv_str(const co_jv *obj, const char *key)
{
    const co_jv *v = co_jv_get(obj, key);
    return v && v->type == CO_JV_STRING ? v->as.s : NULL;
}

/* From key @p k on, the first live one among the @p left members that remain, or NULL. */
static const co_jv *live_key(const co_jv *k, uint32_t left)
{
    for (; left; left--, k = next_key(k)) {
        if (!(k->flags & CO_JV_DEAD)) {
            return k;
        }
    }
    return NULL;
}

const co_jv *co_jv_first(const co_jv *c)
{
    if (!c || !c->len || (c->type != CO_JV_ARRAY && c->type != CO_JV_OBJECT)) {
        return NULL;
    }
    return c->type == CO_JV_ARRAY ? c + 1 : live_key(c + 1, c->len);
}

const co_jv *co_jv_next(const co_jv *c, const co_jv *at)
{
    const co_jv *end = c + c->size;
    if (c->type == CO_JV_ARRAY) {
        const co_jv *next = at + at->size;
        return next < end ? next : NULL;
    }
    const co_jv *k = next_key(at);
    if (k >= end) {
        return NULL;
    }
    if (!(c->flags & CO_JV_DUPS)) {
        return k;
    }
    for (; k < end; k = next_key(k)) {
        if (!(k->flags & CO_JV_DEAD)) {
            return k;
        }
    }
    return NULL;
}

size_t co_jv_members(const co_jv *obj)
{
    if (!obj || obj->type != CO_JV_OBJECT) {
        return 0;
    }
    if (!(obj->flags & CO_JV_DUPS)) {
        return obj->len;
    }
    size_t n = 0;
    CO_JV_EACH (k, obj) {
        n++;
    }
    return n;
}

/* Members up to which co_jv_equal() looks each key of one object up in the other by a scan. */
#define EQUAL_SCAN_MAX 16

/*
 * co_jv_equal() of objects @p a and @p b of @p n live members each, larger ones: a scan of b
 * per key of a would cost n^2 / 2 comparisons (seconds for an UPDATE that leaves 50,000 values
 * as they were), a table of b's keys costs one lookup per key.
 */
static bool objects_equal(const co_jv *a, const co_jv *b, size_t n)
{
    size_t slots = co_jv__keys_slots(n);
    uint32_t *table = co_xcalloc(slots, sizeof(*table));
    CO_JV_EACH (k, b) {
        table[co_jv__keys_find(table, slots, b, k->as.s, k->len)] = (uint32_t)(k - b);
    }
    bool same = true;
    CO_JV_EACH (k, a) {
        uint32_t at = table[co_jv__keys_find(table, slots, b, k->as.s, k->len)];
        if (!at || !co_jv_equal(k + 1, b + at + 1)) {
            same = false;
            break;
        }
    }
    free(table);
    return same;
}

bool co_jv_equal(const co_jv *a, const co_jv *b)
{
    if (!a || !b) {
        return a == b;
    }
    if (a->type != b->type) {
        return false;
    }
    switch ((co_jv_type)a->type) {
    case CO_JV_NULL:
        return true;
    case CO_JV_BOOL:
        return (a->flags & CO_JV_TRUE) == (b->flags & CO_JV_TRUE);
    case CO_JV_NUMBER: {
        const unsigned kinds = CO_JV_INT | CO_JV_UINT | CO_JV_DOUBLE;
        if ((a->flags & kinds) != (b->flags & kinds)) {
            return false;
        }
        return a->flags & CO_JV_DOUBLE ? a->as.d == b->as.d
               : a->flags & CO_JV_UINT ? a->as.u == b->as.u
                                       : a->as.i == b->as.i;
    }
    case CO_JV_STRING:
        return a->len == b->len && memcmp(a->as.s, b->as.s, a->len) == 0;
    case CO_JV_ARRAY: {
        if (a->len != b->len) {
            return false;
        }
        const co_jv *y = co_jv_first(b);
        CO_JV_EACH (x, a) {
            if (!co_jv_equal(x, y)) {
                return false;
            }
            y = co_jv_next(b, y);
        }
        return true;
    }
    case CO_JV_OBJECT: {
        size_t n = co_jv_members(a);
        if (n != co_jv_members(b)) {
            return false;
        }
        if (n > EQUAL_SCAN_MAX) {
            return objects_equal(a, b, n);
        }
        CO_JV_EACH (k, a) {
            const co_jv *other = co_jv_get(b, k->as.s);
            if (!other || !co_jv_equal(k + 1, other)) {
                return false;
            }
        }
        return true;
    }
    default:
        return false;
    }
}

struct json_object *co_jv_to_json(const co_jv *v)
{
    switch ((co_jv_type)v->type) {
    case CO_JV_BOOL:
        return json_object_new_boolean(v->flags & CO_JV_TRUE);
    case CO_JV_NUMBER:
        return v->flags & CO_JV_INT    ? json_object_new_int64(v->as.i)
               : v->flags & CO_JV_UINT ? json_object_new_uint64(v->as.u)
                                       : json_object_new_double(v->as.d);
    case CO_JV_STRING:
        return json_object_new_string_len(v->as.s, (int)v->len);
    case CO_JV_ARRAY: {
        struct json_object *o = json_object_new_array_ext((int)v->len);
        CO_JV_EACH (e, v) {
            json_object_array_add(o, co_jv_to_json(e));
        }
        return o;
    }
    case CO_JV_OBJECT: {
        struct json_object *o = json_object_new_object();
        CO_JV_EACH (k, v) {
            json_object_object_add(o, k->as.s, co_jv_to_json(k + 1));
        }
        return o;
    }
    case CO_JV_NULL:
    default:
        return NULL;
    }
}
