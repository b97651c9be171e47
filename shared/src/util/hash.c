/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SipHash (co/util/hash.h), written from the description in the paper that defines it, and the
 * process key. No library the build already links offers a keyed hash cheap enough to call
 * once per table lookup: nettle 3.8 has no SipHash, OpenSSL's sits behind an EVP_MAC context
 * that costs more to set up than the hash of a short key, and json-c's seeded hash is private
 * to its own tables.
 */
#include "co/util/hash.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "co/util/common.h"

typedef struct sip {
    uint64_t v0, v1, v2, v3;
} sip;

static inline uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof(w));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

static inline void rounds(sip *s, int n)
{
    for (int i = 0; i < n; i++) {
        s->v0 += s->v1;
        s->v1 = rotl(s->v1, 13);
        s->v1 ^= s->v0;
        s->v0 = rotl(s->v0, 32);
        s->v2 += s->v3;
        s->v3 = rotl(s->v3, 16);
        s->v3 ^= s->v2;
        s->v0 += s->v3;
        s->v3 = rotl(s->v3, 21);
        s->v3 ^= s->v0;
        s->v2 += s->v1;
        s->v1 = rotl(s->v1, 17);
        s->v1 ^= s->v2;
        s->v2 = rotl(s->v2, 32);
    }
}

/* SipHash-c-d; always inlined with constant round counts, so each variant unrolls its own. */
static inline __attribute__((always_inline)) uint64_t
siphash(const co_hash_key *key, const void *data, size_t len, int c, int d)
{
    /* the initial state spells "somepseudorandomlygeneratedbytes" */
    sip s = {key->k0 ^ 0x736f6d6570736575ULL, key->k1 ^ 0x646f72616e646f6dULL,
             key->k0 ^ 0x6c7967656e657261ULL, key->k1 ^ 0x7465646279746573ULL};
    const unsigned char *m = data;
    const unsigned char *end = m + (len & ~(size_t)7);
    for (; m < end; m += 8) {
        uint64_t w = load_le64(m);
        s.v3 ^= w;
        rounds(&s, c);
        s.v0 ^= w;
    }
    /* the last word: the 0-7 bytes left, and the length modulo 256 in its top byte */
    unsigned char tail[8] = {0};
    if (len & 7) {
        memcpy(tail, m, len & 7);
    }
    uint64_t w = load_le64(tail) | (uint64_t)(len & 0xff) << 56;
    s.v3 ^= w;
    rounds(&s, c);
    s.v0 ^= w;
    s.v2 ^= 0xff;
    rounds(&s, d);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint64_t co_hash_sip13(const co_hash_key *key, const void *data, size_t len)
{
    return siphash(key, data, len, 1, 3);
}

uint64_t co_hash_sip24(const co_hash_key *key, const void *data, size_t len)
{
    return siphash(key, data, len, 2, 4);
}

/* ---- the process key ----------------------------------------------------------------------- */

static co_hash_key process_key;
static bool key_ready; /* read and written with __atomic builtins */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/*
 * Where getrandom(2) is refused (a seccomp filter that predates it), the key still must not be
 * one an attacker can compute offline: the clocks to the nanosecond, the process id and where
 * address-space randomisation put the stack and this code, pressed through SipHash-2-4.
 */
static void weak_key(co_hash_key *key)
{
    struct timespec rt, mono;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    uint64_t mix[6] = {(uint64_t)rt.tv_sec,      (uint64_t)rt.tv_nsec,
                       (uint64_t)mono.tv_nsec,   (uint64_t)getpid(),
                       (uint64_t)(uintptr_t)&rt, (uint64_t)(uintptr_t)weak_key};
    co_hash_key zero = {0, 0};
    key->k0 = co_hash_sip24(&zero, mix, sizeof(mix));
    key->k1 = co_hash_sip24(key, mix, sizeof(mix));
}

static void key_init(void)
{
    unsigned char raw[16];
    size_t got = 0;
    while (got < sizeof(raw)) {
        /* blocks only until the kernel's pool is first initialised, early in boot */
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    if (got == sizeof(raw)) {
        process_key.k0 = load_le64(raw);
        process_key.k1 = load_le64(raw + 8);
    } else {
        weak_key(&process_key);
    }
    co_memzero(raw, sizeof(raw));
    __atomic_store_n(&key_ready, true, __ATOMIC_RELEASE);
}

/* The process key, drawn on first use; after that, one load instead of a call. */
static inline const co_hash_key *the_key(void)
{
    if (!__atomic_load_n(&key_ready, __ATOMIC_ACQUIRE)) {
        CO_ASSERT(pthread_once(&key_once, key_init) == 0);
    }
    return &process_key;
}

uint64_t co_hash_bytes(const void *data, size_t len)
{
    return siphash(the_key(), data, len, 1, 3);
}

uint64_t co_hash_str(const char *s)
{
    return co_hash_bytes(s, strlen(s));
}
