/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file strmap.h
 * The string-keyed hash table of the library: NUL-terminated keys (copied in) to pointers,
 * open addressing with linear probing under the keyed hash of co/util/hash.h, since the keys
 * (object names, index values, template variables, YAML anchors) come from outside.
 *
 * Removal leaves a tombstone, so that entries never move except when an insertion grows or
 * rebuilds the table: replacing a value or removing a key while iterating is safe, inserting a
 * new key is not. Iteration order is the table's, not insertion order. A map is used by one
 * thread at a time.
 */
#ifndef CO_STRMAP_H
#define CO_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

/** A map; embed it and initialise with CO_STRMAP_INIT, release with co_strmap_dispose(). */
typedef struct co_strmap {
    struct co_strmap_entry *entries; /**< cap slots; read through co_strmap_next() */
    size_t cap;                      /**< power of two, or 0 */
    size_t len;                      /**< live entries */
    size_t used;                     /**< live and removed slots */
} co_strmap;

/** One slot (the layout is private to strmap.c). */
typedef struct co_strmap_entry {
    char *key;
    void *value;
} co_strmap_entry;

#define CO_STRMAP_INIT                                                                             \
    {                                                                                              \
        NULL, 0, 0, 0                                                                              \
    }

/** The value of @p key (borrowed), or NULL when absent (or when NULL was stored). */
void *co_strmap_get(const co_strmap *map, const char *key);

/** Whether @p key is present; its value in @p value (if not NULL) when it is. */
bool co_strmap_find(const co_strmap *map, const char *key, void **value);

/**
 * Sets @p key (copied) to @p value. Aborts on out-of-memory.
 * @return the value it replaces, or NULL when the key was new.
 */
void *co_strmap_put(co_strmap *map, const char *key, void *value);

/** Removes @p key. @return its value, or NULL when it was absent. */
void *co_strmap_remove(co_strmap *map, const char *key);

/** Live entries. */
size_t co_strmap_len(const co_strmap *map);

/**
 * Iteration: `for (size_t i = 0; co_strmap_next(map, &i, &key, &value);)`. @p key and @p value
 * (either may be NULL) are borrowed from the map.
 * @return whether an entry was found at or after *@p iter.
 */
bool co_strmap_next(const co_strmap *map, size_t *iter, const char **key, void **value);

/** Frees the keys and the table, not the values; the map is empty and reusable. */
void co_strmap_dispose(co_strmap *map);

#endif
