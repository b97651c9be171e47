/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the json module (json.c, jdoc.c, json_patch.c): a document's internals, its
 * tables of member keys and JSON Pointer tokens. What other modules may use is in json_lib.h.
 */
#ifndef CO_JSON_INT_H
#define CO_JSON_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "co/util/buf.h"
#include "co/util/common.h"
#include "co/util/hash.h"
#include "co/json/jdoc.h"

#include "json_lib.h"

/**
 * Reads the reference token of a JSON Pointer at *p (which points at its '/') into @p token,
 * unescaping "~0" and "~1", and advances *p to the next '/' or the end.
 * @return 0 or CO_EINVALID for another '~' escape.
 */
int co_json__pointer_next(const char **p, co_buf *token);

/* Parses a canonical decimal array index ("0", "17"; no sign, no leading zero, at most 18
 * digits). @return 0, or -1 (no message) for anything else. */
int co_json__array_index(const char *key, size_t *out);

/* A co_jdoc's string arena: blocks allocated as strings need them (the first one with the
 * document itself). */
typedef struct co_jdoc__block {
    struct co_jdoc__block *next;
} co_jdoc__block;

struct co_jdoc {
    struct co_jv *nodes; /* the values, in document order; nodes[0] is the root */
    size_t n, cap;
    co_jdoc__block *blocks; /* the arena's blocks after the first, newest first */
    char *at;               /* free space in the current block */
    size_t left;
};

/*
 * A table of an object's member keys, for objects too large to search member by member (the
 * duplicate check of co_jdoc_parse(), co_jv_equal()): open addressing with linear probing over
 * a power of two of slots, each the offset of a key node from its object node (0: empty). The
 * hash is keyed with the process key (co/util/hash.h), so nobody can prepare keys that crowd one
 * run of slots; at most half of the slots are used, so a probe ends soon.
 */

/** Slots of a key table for @p n members: the smallest power of two of at least 2n. */
static inline size_t co_jv__keys_slots(size_t n)
{
    size_t slots = 1;
    while (slots < n * 2) {
        slots *= 2;
    }
    return slots;
}

/** The slot of @p table (of @p slots, over the keys of @p obj) holding the key of @p len bytes
 * at @p s, or the empty slot where it would go. */
static inline size_t co_jv__keys_find(const uint32_t *table,
                                      size_t slots,
                                      const struct co_jv *obj,
                                      const char *s,
                                      uint32_t len)
{
    size_t slot = (size_t)co_hash_bytes(s, len) & (slots - 1);
    for (; table[slot]; slot = (slot + 1) & (slots - 1)) {
        const struct co_jv *k = obj + table[slot];
        if (k->len == len && k->as.s[0] == s[0] && !memcmp(k->as.s, s, len)) {
            break;
        }
    }
    return slot;
}

#endif
