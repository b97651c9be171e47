/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the keyed hash: SipHash-2-4 against the reference vectors of its authors,
 * SipHash-1-3 (the variant the tables use) against published vectors, the key taking part,
 * and the process key: not a fixed one, drawn once and the same in every thread.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "co/util/hash.h"
#include "tests/support/test_support.h"

/* The key of the reference vectors: bytes 00 01 ... 0f. */
static const co_hash_key REF_KEY = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};

/* Messages 00 01 02 ... of every length: byte i is i. */
static void counting(unsigned char m[64])
{
    for (int i = 0; i < 64; i++) {
        m[i] = (unsigned char)i;
    }
}

/* The process key is drawn on first use: here several threads make that use at once. */
#define THREADS 8
static uint64_t seen[THREADS];

static void *hash_once(void *arg)
{
    uint64_t *out = arg;
    *out = co_hash_str("metadata.name");
    return NULL;
}

static void test_hash__first_use_from_many_threads_agrees(void **state)
{
    (void)state;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_create(&t[i], NULL, hash_once, &seen[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
    }
    for (int i = 1; i < THREADS; i++) {
        assert_true(seen[i] == seen[0]);
    }
    assert_true(co_hash_str("metadata.name") == seen[0]);
}

static void test_hash__sip24_reference_vectors(void **state)
{
    (void)state;
    /* SipHash-2-4 of 00 01 ... (len - 1) under REF_KEY for len 0..63, as its authors publish
     * them; len 15 is the worked example of the paper's appendix */
    static const uint64_t want[64] = {
        0x726fdb47dd0e0e31ULL, 0x74f839c593dc67fdULL, 0x0d6c8009d9a94f5aULL, 0x85676696d7fb7e2dULL,
        0xcf2794e0277187b7ULL, 0x18765564cd99a68dULL, 0xcbc9466e58fee3ceULL, 0xab0200f58b01d137ULL,
        0x93f5f5799a932462ULL, 0x9e0082df0ba9e4b0ULL, 0x7a5dbbc594ddb9f3ULL, 0xf4b32f46226bada7ULL,
        0x751e8fbc860ee5fbULL, 0x14ea5627c0843d90ULL, 0xf723ca908e7af2eeULL, 0xa129ca6149be45e5ULL,
        0x3f2acc7f57c29bdbULL, 0x699ae9f52cbe4794ULL, 0x4bc1b3f0968dd39cULL, 0xbb6dc91da77961bdULL,
        0xbed65cf21aa2ee98ULL, 0xd0f2cbb02e3b67c7ULL, 0x93536795e3a33e88ULL, 0xa80c038ccd5ccec8ULL,
        0xb8ad50c6f649af94ULL, 0xbce192de8a85b8eaULL, 0x17d835b85bbb15f3ULL, 0x2f2e6163076bcfadULL,
        0xde4daaaca71dc9a5ULL, 0xa6a2506687956571ULL, 0xad87a3535c49ef28ULL, 0x32d892fad841c342ULL,
        0x7127512f72f27cceULL, 0xa7f32346f95978e3ULL, 0x12e0b01abb051238ULL, 0x15e034d40fa197aeULL,
        0x314dffbe0815a3b4ULL, 0x027990f029623981ULL, 0xcadcd4e59ef40c4dULL, 0x9abfd8766a33735cULL,
        0x0e3ea96b5304a7d0ULL, 0xad0c42d6fc585992ULL, 0x187306c89bc215a9ULL, 0xd4a60abcf3792b95ULL,
        0xf935451de4f21df2ULL, 0xa9538f0419755787ULL, 0xdb9acddff56ca510ULL, 0xd06c98cd5c0975ebULL,
        0xe612a3cb9ecba951ULL, 0xc766e62cfcadaf96ULL, 0xee64435a9752fe72ULL, 0xa192d576b245165aULL,
        0x0a8787bf8ecb74b2ULL, 0x81b3e73d20b49b6fULL, 0x7fa8220ba3b2eceaULL, 0x245731c13ca42499ULL,
        0xb78dbfaf3a8d83bdULL, 0xea1ad565322a1a0bULL, 0x60e61c23a3795013ULL, 0x6606d7e446282b93ULL,
        0x6ca4ecb15c5f91e1ULL, 0x9f626da15c9625f3ULL, 0xe51b38608ef25f57ULL, 0x958a324ceb064572ULL,
    };
    unsigned char m[64];
    counting(m);
    for (size_t len = 0; len < 64; len++) {
        if (co_hash_sip24(&REF_KEY, m, len) != want[len]) {
            fail_msg("SipHash-2-4 of %zu bytes: %016llx, want %016llx", len,
                     (unsigned long long)co_hash_sip24(&REF_KEY, m, len),
                     (unsigned long long)want[len]);
        }
    }
}

static void test_hash__sip13_published_vectors(void **state)
{
    (void)state;
    /* SipHash-1-3 of 00 01 ... (len - 1) under the all-zero key, as the reference code of
     * its authors computes them */
    static const uint64_t want[] = {
        0xd1fba762150c532cULL, 0x68a914128e01e473ULL, 0x010bac45c41e3669ULL, 0x4d4c9a4a8ef6e0adULL,
        0x7cc43f98813e4dbdULL, 0x5abe2169dff36275ULL, 0xe3c25f87624f1cdbULL, 0x2f098ab0c751325aULL,
        0xead411e67ebe2eeaULL, 0x75927f9d95124362ULL, 0xaf9f77a65ab51a1dULL, 0xfe64ce8b6617fcffULL,
        0xa6baf4fb0f9fe1c2ULL, 0xa0cf3211850f8e0dULL, 0x7f86049379fbfe67ULL, 0xf30eb725bb91c9eaULL,
        0x8972188433a5c5b7ULL, 0x4883c49a2c009c1dULL, 0xadc2c0b63044067dULL, 0x091f4a3329f87d19ULL,
        0x639e355ae68c0100ULL, 0xb17bef2cb5213239ULL,
    };
    const co_hash_key zero = {0, 0};
    unsigned char m[64];
    counting(m);
    for (size_t len = 0; len < CO_ARRAY_SIZE(want); len++) {
        if (co_hash_sip13(&zero, m, len) != want[len]) {
            fail_msg("SipHash-1-3 of %zu bytes: %016llx, want %016llx", len,
                     (unsigned long long)co_hash_sip13(&zero, m, len),
                     (unsigned long long)want[len]);
        }
    }
    assert_true(co_hash_sip13(&zero, "siphash", 7) == 0x8264ceeccb16bcbeULL);
}

static void test_hash__every_key_bit_takes_part(void **state)
{
    (void)state;
    const char *msg = "spec.values.key";
    uint64_t base13 = co_hash_sip13(&REF_KEY, msg, strlen(msg));
    uint64_t base24 = co_hash_sip24(&REF_KEY, msg, strlen(msg));
    for (int bit = 0; bit < 128; bit++) {
        co_hash_key k = REF_KEY;
        if (bit < 64) {
            k.k0 ^= 1ULL << bit;
        } else {
            k.k1 ^= 1ULL << (bit - 64);
        }
        if (co_hash_sip13(&k, msg, strlen(msg)) == base13 ||
            co_hash_sip24(&k, msg, strlen(msg)) == base24) {
            fail_msg("key bit %d does not change the hash", bit);
        }
    }
}

static void test_hash__process_key_is_not_a_fixed_one(void **state)
{
    (void)state;
    const co_hash_key zero = {0, 0};
    const char *msg = "spec.values.key";
    uint64_t h = co_hash_bytes(msg, strlen(msg));
    /* equal by chance once in 2^64 runs */
    assert_true(h != co_hash_sip13(&zero, msg, strlen(msg)));
    assert_true(h != co_hash_sip13(&REF_KEY, msg, strlen(msg)));
    assert_true(h != co_hash_bytes("spec.values.kez", strlen(msg)));
}

static void test_hash__str_and_bytes_agree_at_any_alignment(void **state)
{
    (void)state;
    const char *msg = "metadata.annotations.example.com/some-long-annotation-name";
    size_t len = strlen(msg);
    uint64_t h = co_hash_str(msg);
    assert_true(co_hash_bytes(msg, len) == h);
    char buf[128];
    for (size_t off = 1; off < 8; off++) {
        memcpy(buf + off, msg, len + 1);
        assert_true(co_hash_str(buf + off) == h);
    }
    assert_true(co_hash_str("") == co_hash_bytes("", 0));
    /* the length is part of the last word: a key and the same key with a NUL differ */
    assert_true(co_hash_bytes("a", 1) != co_hash_bytes("a\0", 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* first: the key must not have been drawn by another test yet */
        cmocka_unit_test(test_hash__first_use_from_many_threads_agrees),
        cmocka_unit_test(test_hash__sip24_reference_vectors),
        cmocka_unit_test(test_hash__sip13_published_vectors),
        cmocka_unit_test(test_hash__every_key_bit_takes_part),
        cmocka_unit_test(test_hash__process_key_is_not_a_fixed_one),
        cmocka_unit_test(test_hash__str_and_bytes_agree_at_any_alignment),
    };
    return cmocka_run_group_tests_name("hash", tests, NULL, NULL);
}
