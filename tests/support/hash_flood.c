/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hash-flooding keys (see hash_flood.h). FNV-1a's low k bits depend only on the low k bits of
 * its state, and each step (xor a byte, multiply by an odd prime) is a bijection modulo 2^k.
 * So, walking back from the target slot, every three-character suffix tells which state a key
 * must reach before it; a table of those states, filled once, turns the prefix and a
 * seven-character counter into a colliding key with one lookup.
 */
#include "tests/support/hash_flood.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/common.h"

#define FNV_PRIME 1099511628211ULL

static const char ALNUM[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
#define NALNUM (sizeof(ALNUM) - 1)

uint64_t co_test_fnv1a64(uint64_t basis, const char *s, size_t len)
{
    uint64_t h = basis;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (unsigned char)s[i]) * FNV_PRIME;
    }
    return h;
}

size_t co_test_old_dedupe_slots(size_t n)
{
    size_t slots = 1;
    while (slots < n * 2) {
        slots *= 2;
    }
    return slots;
}

/* The inverse of the FNV prime modulo 2^64 (Newton's iteration doubles the correct bits). */
static uint64_t prime_inverse(void)
{
    uint64_t x = FNV_PRIME;
    for (int i = 0; i < 6; i++) {
        x *= 2 - FNV_PRIME * x;
    }
    return x;
}

co_test_names co_test_flood_keys(uint64_t basis, size_t n, size_t slots, const char *prefix)
{
    CO_ASSERT(slots >= 2 && (slots & (slots - 1)) == 0 && slots <= ((size_t)1 << 24));
    uint64_t mask = slots - 1, inv = prime_inverse();
    /* suffix[s] - 1: the index of a suffix taking state s to slot 0, or -1 */
    uint32_t *suffix = co_xcalloc(slots, sizeof(*suffix));
    for (uint32_t i = 0; i < NALNUM * NALNUM * NALNUM; i++) {
        uint64_t s = 0; /* the target: slot 0 */
        s = ((s * inv) ^ (unsigned char)ALNUM[i % NALNUM]) & mask;
        s = ((s * inv) ^ (unsigned char)ALNUM[i / NALNUM % NALNUM]) & mask;
        s = ((s * inv) ^ (unsigned char)ALNUM[i / NALNUM / NALNUM]) & mask;
        suffix[s] = i + 1;
    }
    size_t plen = strlen(prefix);
    co_test_names out = {co_xcalloc(n ? n : 1, sizeof(char *)), 0};
    char *key = co_xmalloc(plen + 32);
    for (uint32_t p = 0; out.len < n; p++) {
        CO_ASSERT(p < 1000000); /* seven-character counters */
        snprintf(key, plen + 32, "%sk%06u", prefix, (unsigned)p);
        uint32_t i = suffix[co_test_fnv1a64(basis, key, plen + 7) & mask];
        if (i-- == 0) {
            continue;
        }
        key[plen + 7] = ALNUM[i / NALNUM / NALNUM];
        key[plen + 8] = ALNUM[i / NALNUM % NALNUM];
        key[plen + 9] = ALNUM[i % NALNUM];
        key[plen + 10] = '\0';
        CO_ASSERT((co_test_fnv1a64(basis, key, plen + CO_TEST_FLOOD_KEY_LEN) & mask) == 0);
        out.items[out.len++] = co_xstrdup(key);
    }
    free(key);
    free(suffix);
    return out;
}

co_test_names co_test_ordinary_keys(size_t n, const char *prefix)
{
    co_test_names out = {co_xcalloc(n ? n : 1, sizeof(char *)), 0};
    for (size_t p = 0; out.len < n; p++) {
        CO_ASSERT(p < 1000000);
        out.items[out.len++] =
            co_xasprintf("%sk%06u%c%c%c", prefix, (unsigned)p, ALNUM[p * 7 % NALNUM],
                         ALNUM[p * 13 % NALNUM], ALNUM[p * 29 % NALNUM]);
    }
    return out;
}

char *co_test_object_of(const co_test_names *keys)
{
    size_t cap = 3;
    for (size_t i = 0; i < keys->len; i++) {
        cap += strlen(keys->items[i]) + 24; /* quotes, colon, comma, a size_t */
    }
    char *text = co_xmalloc(cap);
    size_t at = 0;
    text[at++] = '{';
    for (size_t i = 0; i < keys->len; i++) {
        at +=
            (size_t)snprintf(text + at, cap - at, "%s\"%s\":%zu", i ? "," : "", keys->items[i], i);
    }
    text[at++] = '}';
    text[at] = '\0';
    return text;
}
