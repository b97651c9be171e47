/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file jdoc.h
 * JSON documents as a compact read-only tree, for the paths that read a document once and throw
 * it away (an admission review): one array of nodes and one string arena per document, built by
 * the same strict parser as co_json_parse() and freed in one go.
 *
 * A json-c tree spends most of its cost on bookkeeping such a reader never uses: an object is a
 * hash table of sixteen slots and every key a copy of its own, each value a separate allocation,
 * and freeing walks all of it again. Here a value is one 24-byte node; a container's contents
 * follow it in document order, so the value after it is `v + v->size`. An object's members are
 * pairs of nodes: the key (a string) and then its value.
 *
 * Same language as co_json_parse(): the same inputs are accepted and refused with the same
 * messages; numbers are int64, uint64 or double by the same rules; duplicate keys: the last
 * wins (the earlier members stay in the array, marked, and are skipped by lookups and
 * iteration). Strings are NUL-terminated and belong to the document: a plain one stays in the
 * document's copy of the input text, one with escapes is decoded into its arena (a string
 * holding "\u0000" is also NUL-terminated and has its length in `len`; keys never hold a NUL).
 *
 * Ownership: everything a document hands out is borrowed from it and lives until
 * co_jdoc_free(). A document is read by any number of threads at once; nothing writes it.
 */
#ifndef CO_JDOC_H
#define CO_JDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"

struct json_object;

/** The type of a node. */
typedef enum co_jv_type {
    CO_JV_NULL = 0,
    CO_JV_BOOL,
    CO_JV_NUMBER,
    CO_JV_STRING,
    CO_JV_ARRAY,
    CO_JV_OBJECT,
} co_jv_type;

/** Bits of co_jv.flags. */
enum {
    CO_JV_TRUE = 1 << 0,   /**< a boolean that is true */
    CO_JV_INT = 1 << 1,    /**< a number held in as.i */
    CO_JV_UINT = 1 << 2,   /**< a number above INT64_MAX, held in as.u */
    CO_JV_DOUBLE = 1 << 3, /**< a number held in as.d */
    CO_JV_DEAD = 1 << 4,   /**< a member key overridden by a later duplicate */
    CO_JV_DUPS = 1 << 5,   /**< an object with dead members */
};

/** One value of a document. */
typedef struct co_jv {
    uint8_t type;  /**< co_jv_type */
    uint8_t flags; /**< CO_JV_* bits */
    /** string: bytes (without the NUL); array: elements; object: members, dead ones included */
    uint32_t len;
    /** nodes this value spans, itself included: the next value is `this + size` */
    uint32_t size;
    union {
        const char *s; /**< string (NUL-terminated) */
        int64_t i;
        uint64_t u;
        double d;
    } as;
} co_jv;

/** A parsed document (opaque). */
typedef struct co_jdoc co_jdoc;

/**
 * Parses one JSON value into a new document: the language and limits of co_json_parse_max(),
 * the skip lists of co_json_parse_skip() (@p skip NULL builds everything).
 * @param[out] out the document; free it with co_jdoc_free()
 * @return 0; CO_EINVALID with "line L, column C: <problem>" (the message co_json_parse_skip()
 * gives for the same input); CO_ETOOBIG over @p max.
 */
CO_MUST_CHECK int co_jdoc_parse(co_jdoc **out,
                                const char *data,
                                size_t len,
                                size_t max,
                                const char *const *const *skip);

/**
 * A document holding the same value as json-c tree @p obj (NULL for JSON null), for code that
 * has a json-c tree and calls what reads documents. Free it with co_jdoc_free().
 */
co_jdoc *co_jdoc_of_json(const struct json_object *obj);

/** Frees @p doc and everything it handed out (NULL is a no-op). */
void co_jdoc_free(co_jdoc *doc);

/** The document's value (a node of type CO_JV_NULL for `null`). */
const co_jv *co_jdoc_root(const co_jdoc *doc);

/** Whether @p v is there and of type @p t (NULL for an absent value is never of any type). */
static inline bool co_jv_is(const co_jv *v, co_jv_type t)
{
    return v && v->type == t;
}

/** Whether @p v is absent or JSON null, the two ways a field is "not set". */
static inline bool co_jv_unset(const co_jv *v)
{
    return !v || v->type == CO_JV_NULL;
}

/**
 * The value of member @p key of object @p obj (a borrowed node), or NULL when @p obj is NULL,
 * not an object, or has no such member.
 */
const co_jv *co_jv_get(const co_jv *obj, const char *key);

/** The member @p key of @p obj when it is a string, else NULL. */
const char *co_jv_str(const co_jv *obj, const char *key);

/**
 * The first element of array @p c or the first live member key of object @p c (its value is
 * the node after it), or NULL when there is none or @p c is no container.
 */
const co_jv *co_jv_first(const co_jv *c);

/** The element or live member key of @p c after @p at (from co_jv_first()), or NULL. */
const co_jv *co_jv_next(const co_jv *c, const co_jv *at);

/** Iterates over the elements of an array, or the member keys of an object (value: it + 1).
 * @p it names the loop variable it declares, so it cannot be parenthesised. */
/* NOLINTNEXTLINE(bugprone-macro-parentheses) */
#define CO_JV_EACH(it, c) for (const co_jv *it = co_jv_first(c); it; (it) = co_jv_next((c), (it)))

/** Live members of object @p obj (0 for anything else). */
size_t co_jv_members(const co_jv *obj);

/**
 * Whether @p a and @p b are the same value: same type (integers and doubles differ, as in
 * json_object_equal()), same contents, object members in any order. NULL equals only NULL.
 */
bool co_jv_equal(const co_jv *a, const co_jv *b);

/**
 * A json-c tree equal to @p v, a new reference (NULL for JSON null): for code that still walks
 * json-c trees, and tests.
 */
struct json_object *co_jv_to_json(const co_jv *v);

#endif
