/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The string map: open addressing with linear probing over a power-of-two table kept at most
 * three quarters full, live entries and tombstones counted together, so that probes always end
 * at an empty slot. A table whose slots are mostly tombstones is rebuilt at the same size
 * rather than grown.
 */
#include "co/util/strmap.h"

#include <stdlib.h>
#include <string.h>

#include "co/util/common.h"
#include "co/util/hash.h"

/* A removed key: distinct from every allocated key and from NULL (an empty slot). */
static char tombstone[] = "";

static co_strmap_entry *slot_of(const co_strmap *map, const char *key, bool for_insert)
{
    if (map->cap == 0) {
        return NULL;
    }
    size_t mask = map->cap - 1;
    size_t i = (size_t)co_hash_str(key) & mask;
    co_strmap_entry *tomb = NULL;
    for (;;) {
        co_strmap_entry *e = &map->entries[i];
        if (!e->key) {
            return for_insert ? (tomb ? tomb : e) : NULL;
        }
        if (e->key == tombstone) {
            if (!tomb) {
                tomb = e;
            }
        } else if (strcmp(e->key, key) == 0) {
            return e;
        }
        i = (i + 1) & mask;
    }
}

static void grow(co_strmap *map)
{
    size_t cap = map->cap ? map->cap : 8;
    if (map->len * 2 >= cap) {
        cap *= 2;
    }
    co_strmap_entry *old = map->entries;
    size_t old_cap = map->cap;
    map->entries = co_xcalloc(cap, sizeof(co_strmap_entry));
    map->cap = cap;
    map->len = 0;
    map->used = 0;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].key && old[i].key != tombstone) {
            *slot_of(map, old[i].key, true) = old[i];
            map->len++;
            map->used++;
        }
    }
    free(old);
}

void *co_strmap_get(const co_strmap *map, const char *key)
{
    co_strmap_entry *e = slot_of(map, key, false);
    return e ? e->value : NULL;
}

bool co_strmap_find(const co_strmap *map, const char *key, void **value)
{
    co_strmap_entry *e = slot_of(map, key, false);
    if (e && value) {
        *value = e->value;
    }
    return e != NULL;
}

void *co_strmap_put(co_strmap *map, const char *key, void *value)
{
    co_strmap_entry *e = slot_of(map, key, false);
    if (e) {
        void *prev = e->value;
        e->value = value;
        return prev;
    }
    if (map->cap == 0 || (map->used + 1) * 4 > map->cap * 3) {
        grow(map);
    }
    e = slot_of(map, key, true);
    if (!e->key) {
        map->used++;
    }
    e->key = co_xstrdup(key);
    e->value = value;
    map->len++;
    return NULL;
}

void *co_strmap_remove(co_strmap *map, const char *key)
{
    co_strmap_entry *e = slot_of(map, key, false);
    if (!e) {
        return NULL;
    }
    void *prev = e->value;
    free(e->key);
    e->key = tombstone;
    e->value = NULL;
    map->len--;
    return prev;
}

size_t co_strmap_len(const co_strmap *map)
{
    return map->len;
}

bool co_strmap_next(const co_strmap *map, size_t *iter, const char **key, void **value)
{
    while (*iter < map->cap) {
        co_strmap_entry *e = &map->entries[(*iter)++];
        if (e->key && e->key != tombstone) {
            if (key) {
                *key = e->key;
            }
            if (value) {
                *value = e->value;
            }
            return true;
        }
    }
    return false;
}

void co_strmap_dispose(co_strmap *map)
{
    for (size_t i = 0; i < map->cap; i++) {
        if (map->entries[i].key && map->entries[i].key != tombstone) {
            free(map->entries[i].key);
        }
    }
    free(map->entries);
    map->entries = NULL;
    map->cap = map->len = map->used = 0;
}
