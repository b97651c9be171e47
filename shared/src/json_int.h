/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers the json module shares with yaml: Go-compatible number formatting and UTF-8
 * decoding; and between json.c and jdoc.c, a document's internals and its tables of member
 * keys. Not part of the public API.
 */
#ifndef CO_JSON_INT_H
#define CO_JSON_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "co/buf.h"
#include "co/common.h"
#include "co/hash.h"
#include "co/jdoc.h"

struct json_object;

/** Buffer size that holds any number formatted by co_json__format_double(). */
#define CO_JSON__NUMBER_MAX 40

/**
 * Formats the finite double @p v like Go's strconv.FormatFloat(v, @p fmt, -1, @p bits) with
 * fmt 'e' or 'g' (shortest representation that reads back as the same float64, or float32
 * when @p bits is 32), or with fmt 'j' as encoding/json writes a float64. ('f' is used
 * internally for magnitudes between 1e-6 and 1e21 only.)
 * @return the length written to @p out (NUL-terminated).
 */
size_t co_json__format_double(char out[CO_JSON__NUMBER_MAX], double v, char fmt, int bits);

/**
 * Length of the valid UTF-8 sequence at @p s (at most @p len bytes), with its code point in
 * @p cp; 0 when the bytes there are not valid UTF-8 (overlong forms, surrogates and values
 * above U+10FFFF are invalid, as in Go's utf8.DecodeRune).
 */
size_t co_json__utf8_decode(const unsigned char *s, size_t len, uint32_t *cp);

/** Whether @p obj is an integer (int64 or uint64) and its value. @p is_unsigned is set when
 * the value exceeds INT64_MAX (then @p u holds it, else @p i does). */
int co_json__integer(const struct json_object *obj, int64_t *i, uint64_t *u, int *is_unsigned);

/**
 * Reads the reference token of a JSON Pointer at *p (which points at its '/') into @p token,
 * unescaping "~0" and "~1", and advances *p to the next '/' or the end.
 * @return 0 or CO_EINVALID for another '~' escape.
 */
int co_json__pointer_next(const char **p, co_buf *token);

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
 * hash is keyed with the process key (co/hash.h), so nobody can prepare keys that crowd one
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
