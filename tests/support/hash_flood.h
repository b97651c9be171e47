/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keys for hash-flooding tests: keys that all started probing at one slot of the unkeyed
 * (FNV-1a) tables the library had before its hash took a per-process key (co/hash.h), such as
 * json.c's duplicate-key check, and ordinary keys of the same shape and length to compare with.
 */
#ifndef CO_TEST_HASH_FLOOD_H
#define CO_TEST_HASH_FLOOD_H

#include <stddef.h>
#include <stdint.h>

#include "tests/support/test_support.h"

/** Length of every key the functions below return, after the prefix. */
#define CO_TEST_FLOOD_KEY_LEN 10

/** FNV-1a's 64-bit offset basis, as json.c's duplicate check used it. */
#define CO_TEST_FNV_BASIS 14695981039346656037ULL
/** The basis the tables of depgraph.c, envsubst.c and kube_util.c started from: the same
 * number with its last digit missing (hash flooding works the same). */
#define CO_TEST_FNV_BASIS_SHORT 1469598103934665603ULL

/** Unkeyed 64-bit FNV-1a of @p len bytes from @p basis, the hash the old tables used. */
uint64_t co_test_fnv1a64(uint64_t basis, const char *s, size_t len);

/** The number of slots json.c's old duplicate-key table had for an object of @p n members
 * (the smallest power of two of at least 2n). */
size_t co_test_old_dedupe_slots(size_t n);

/** @p n distinct keys, each @p prefix and CO_TEST_FLOOD_KEY_LEN letters and digits, whose
 * co_test_fnv1a64() from @p basis agree modulo @p slots (a power of two of at most 2^24): in
 * an unkeyed table of that many slots, or fewer, all of them start probing at the same slot.
 * Deterministic. Free with co_test_names_free(). */
co_test_names co_test_flood_keys(uint64_t basis, size_t n, size_t slots, const char *prefix);

/** @p n distinct keys of the same shape and length with no particular hash. Deterministic. */
co_test_names co_test_ordinary_keys(size_t n, const char *prefix);

/** The JSON object text {"key0":0,"key1":1,...} of @p keys (free with free()). */
char *co_test_object_of(const co_test_names *keys);

#endif
