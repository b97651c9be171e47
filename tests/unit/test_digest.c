/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for digests and encodings: SHA-256 against the FIPS 180-2 vectors, base32 and
 * base64 against the RFC 4648 vectors, the owner-id label shape, and Go's base64 decoding
 * rules.
 */
#include <stdlib.h>
#include <string.h>

#include "co/util/buf.h"
#include "co/util/digest.h"
#include "tests/support/test_support.h"

static void test_digest__sha256_known_vectors(void **state)
{
    (void)state;
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(hex, "", 0);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    co_sha256_hex(hex, "abc", 3);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    co_sha256_hex(hex, two, strlen(two));
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    unsigned char raw[CO_SHA256_LEN];
    co_sha256(raw, "abc", 3);
    assert_int_equal(raw[0], 0xba);
    assert_int_equal(raw[31], 0xad);
}

static void test_digest__incremental_equals_one_shot(void **state)
{
    (void)state;
    /* one million 'a': the long FIPS vector, fed in uneven pieces */
    co_sha256_ctx *ctx = co_sha256_new();
    char chunk[997];
    memset(chunk, 'a', sizeof(chunk));
    size_t left = 1000000;
    while (left > 0) {
        size_t n = left < sizeof(chunk) ? left : sizeof(chunk);
        co_sha256_update(ctx, chunk, n);
        left -= n;
    }
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_final_hex(ctx, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* the context is reusable after final */
    co_sha256_update(ctx, "ab", 2);
    co_sha256_update(ctx, "", 0);
    co_sha256_update(ctx, "c", 1);
    co_sha256_final_hex(ctx, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    co_sha256_free(ctx);
    co_sha256_free(NULL);

    co_buf b = CO_BUF_INIT(16);
    assert_co_pass(co_buf_puts(&b, "abc"));
    co_sha256_hex_buf(hex, &b);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    co_buf_dispose(&b);
    co_sha256_hex_buf(hex, &b);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_digest__hex(void **state)
{
    (void)state;
    char *h = co_hex_encode("\x00\x01\xab\xff", 4);
    assert_string_equal(h, "0001abff");
    free(h);
    h = co_hex_encode("", 0);
    assert_string_equal(h, "");
    free(h);
}

static void test_digest__base32_rfc4648_vectors(void **state)
{
    (void)state;
    /* RFC 4648 section 10, lower-cased and without padding */
    static const char *const vec[][2] = {
        {"", ""},
        {"f", "my"},
        {"fo", "mzxq"},
        {"foo", "mzxw6"},
        {"foob", "mzxw6yq"},
        {"fooba", "mzxw6ytb"},
        {"foobar", "mzxw6ytboi"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(vec); i++) {
        char *s = co_base32_lower(vec[i][0], strlen(vec[i][0]));
        assert_string_equal(s, vec[i][1]);
        free(s);
    }
}

static void test_digest__owner_id_label_shape(void **state)
{
    (void)state;
    /* the owner-id label: base32 of a sha256, 52 characters, valid as a label value */
    unsigned char md[CO_SHA256_LEN];
    const char *owner = "component-operator.cs.sap.com/ns1/comp1";
    co_sha256(md, owner, strlen(owner));
    char *label = co_base32_lower(md, sizeof(md));
    assert_int_equal(strlen(label), 52);
    for (const char *p = label; *p; p++) {
        assert_true((*p >= 'a' && *p <= 'z') || (*p >= '2' && *p <= '7'));
    }
    /* sha256("abc") encoded independently: bits 10111010 01111000 00010110 ... */
    co_sha256(md, "abc", 3);
    char *abc = co_base32_lower(md, sizeof(md));
    assert_int_equal(strncmp(abc, "xj4bn", 5), 0);
    free(abc);
    free(label);
}

static void test_digest__base64_rfc4648_vectors(void **state)
{
    (void)state;
    static const char *const vec[][3] = {
        /* input, padded, raw */
        {"", "", ""},
        {"f", "Zg==", "Zg"},
        {"fo", "Zm8=", "Zm8"},
        {"foo", "Zm9v", "Zm9v"},
        {"foob", "Zm9vYg==", "Zm9vYg"},
        {"fooba", "Zm9vYmE=", "Zm9vYmE"},
        {"foobar", "Zm9vYmFy", "Zm9vYmFy"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(vec); i++) {
        size_t len = strlen(vec[i][0]);
        char *s = co_base64_encode(vec[i][0], len, CO_BASE64_STD);
        assert_string_equal(s, vec[i][1]);
        free(s);
        s = co_base64_encode(vec[i][0], len, CO_BASE64_RAW);
        assert_string_equal(s, vec[i][2]);
        free(s);
        co_buf b = CO_BUF_INIT(64);
        assert_co_pass(co_base64_decode(&b, vec[i][1], strlen(vec[i][1]), CO_BASE64_STD));
        assert_int_equal(b.len, len);
        assert_memory_equal(co_buf_cstr(&b), vec[i][0], len);
        co_buf_reset(&b);
        assert_co_pass(co_base64_decode(&b, vec[i][2], strlen(vec[i][2]), CO_BASE64_RAW));
        assert_int_equal(b.len, len);
        co_buf_dispose(&b);
    }
}

static void test_digest__base64_url_alphabet(void **state)
{
    (void)state;
    const unsigned char bytes[] = {0xfb, 0xff, 0xbf, 0xfe};
    char *std = co_base64_encode(bytes, sizeof(bytes), CO_BASE64_STD);
    char *url = co_base64_encode(bytes, sizeof(bytes), CO_BASE64_URL);
    char *rawurl = co_base64_encode(bytes, sizeof(bytes), CO_BASE64_URL | CO_BASE64_RAW);
    assert_string_equal(std, "+/+//g==");
    assert_string_equal(url, "-_-__g==");
    assert_string_equal(rawurl, "-_-__g");
    co_buf b = CO_BUF_INIT(16);
    assert_co_pass(co_base64_decode(&b, rawurl, strlen(rawurl), CO_BASE64_URL | CO_BASE64_RAW));
    assert_memory_equal(b.ptr, bytes, sizeof(bytes));
    co_buf_reset(&b);
    assert_co_fail_with(CO_EINVALID, co_base64_decode(&b, std, strlen(std), CO_BASE64_URL));
    assert_co_fail_with(CO_EINVALID, co_base64_decode(&b, url, strlen(url), CO_BASE64_STD));
    co_buf_dispose(&b);
    free(std);
    free(url);
    free(rawurl);
}

static void test_digest__base64_decode_rules(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(64);
    /* newlines and carriage returns are skipped anywhere, as in Go; error offsets are Go's */
    assert_co_pass(co_base64_decode(&b, "Zm9v\r\nYmFy\n", 11, CO_BASE64_STD));
    assert_string_equal(co_buf_cstr(&b), "foobar");
    co_buf_reset(&b);
    assert_co_pass(co_base64_decode(&b, "Zg=\n=", 5, CO_BASE64_STD));
    assert_string_equal(co_buf_cstr(&b), "f");
    /* a failure leaves earlier content alone */
    co_buf_reset(&b);
    assert_co_pass(co_buf_puts(&b, "keep"));
    static const struct {
        const char *in;
        unsigned flags;
        const char *msg;
    } bad[] = {
        {"Zg", CO_BASE64_STD, "illegal base64 data at input byte 0"},
        {"Zg=", CO_BASE64_STD, "illegal base64 data at input byte 3"},
        {"Zg==", CO_BASE64_RAW, "illegal base64 data at input byte 2"},
        {"Z===", CO_BASE64_STD, "illegal base64 data at input byte 1"},
        {"Zm9v YmFy", CO_BASE64_STD, "illegal base64 data at input byte 4"},
        {"Zg==Zg==", CO_BASE64_STD, "illegal base64 data at input byte 4"},
        {"Z", CO_BASE64_RAW, "illegal base64 data at input byte 0"},
        {"Zm9v\xff", CO_BASE64_STD, "illegal base64 data at input byte 4"},
        /* Go counts a short last quantum back from the end, newlines included */
        {"Zm9vZg\n", CO_BASE64_STD, "illegal base64 data at input byte 5"},
        /* and reports a missing second '=' one byte early */
        {"Zg=A", CO_BASE64_STD, "illegal base64 data at input byte 2"},
        {"Zg==\nx", CO_BASE64_STD, "illegal base64 data at input byte 5"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(bad); i++) {
        co_error_clear();
        assert_int_equal(co_base64_decode(&b, bad[i].in, strlen(bad[i].in), bad[i].flags),
                         CO_EINVALID);
        assert_contains(co_error_last(), bad[i].msg);
        assert_string_equal(co_buf_cstr(&b), "keep");
    }
    co_buf_dispose(&b);
    /* the output buffer's cap bounds the decoded size */
    co_buf small = CO_BUF_INIT(4);
    assert_co_fail_with(CO_ETOOBIG, co_base64_decode(&small, "Zm9vYmFy", 8, CO_BASE64_STD));
    assert_null(small.ptr);
}

static void test_digest__base64_strict_refuses_unused_bits(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(64);
    /* 'h' leaves non-zero bits after the last byte: Go's lenient decoder drops them */
    assert_co_pass(co_base64_decode(&b, "Zh==", 4, CO_BASE64_STD));
    assert_string_equal(co_buf_cstr(&b), "f");
    co_buf_reset(&b);
    assert_co_fail_with(CO_EINVALID,
                        co_base64_decode(&b, "Zh==", 4, CO_BASE64_STD | CO_BASE64_STRICT));
    assert_contains(co_error_last(), "illegal base64 data at input byte 2");
    assert_co_fail_with(CO_EINVALID, co_base64_decode(&b, "Zm9=", 4, CO_BASE64_STRICT));
    assert_contains(co_error_last(), "illegal base64 data at input byte 3");
    assert_co_fail_with(CO_EINVALID,
                        co_base64_decode(&b, "Zh", 2, CO_BASE64_RAW | CO_BASE64_STRICT));
    assert_co_pass(co_base64_decode(&b, "Zg", 2, CO_BASE64_RAW | CO_BASE64_STRICT));
    assert_string_equal(co_buf_cstr(&b), "f");
    co_buf_dispose(&b);
}

static void test_digest__base64_no_newlines_refuses_them(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(64);
    assert_co_fail_with(CO_EINVALID, co_base64_decode(&b, "Zm9v\nYmFy", 9, CO_BASE64_NO_NEWLINES));
    assert_contains(co_error_last(), "illegal base64 data at input byte 4");
    assert_co_fail_with(CO_EINVALID, co_base64_decode(&b, "Zg=\r=", 5, CO_BASE64_NO_NEWLINES));
    assert_co_pass(co_base64_decode(&b, "Zm9vYmFy", 8, CO_BASE64_NO_NEWLINES));
    assert_string_equal(co_buf_cstr(&b), "foobar");
    co_buf_dispose(&b);
}

static void test_digest__base64_decode_alloc(void **state)
{
    (void)state;
    unsigned char *out = NULL;
    size_t len = 99;
    assert_co_pass(co_base64_decode_alloc(&out, &len, "Zm9v\nYg==", 9, CO_BASE64_STD));
    assert_int_equal(len, 4);
    assert_string_equal((const char *)out, "foob");
    free(out);
    out = NULL;
    assert_co_pass(co_base64_decode_alloc(&out, &len, "", 0, CO_BASE64_RAW));
    assert_int_equal(len, 0);
    assert_string_equal((const char *)out, "");
    free(out);
    /* out-parameters are written only on success */
    out = NULL;
    len = 99;
    assert_co_fail_with(CO_EINVALID, co_base64_decode_alloc(&out, &len, "Zg=", 3, CO_BASE64_STD));
    assert_contains(co_error_last(), "illegal base64 data at input byte 3");
    assert_null(out);
    assert_int_equal(len, 99);
}

static void test_digest__base64_encode_buf_appends_under_the_cap(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(12);
    assert_co_pass(co_buf_puts(&b, "x:"));
    assert_co_pass(co_base64_encode_buf(&b, "foob", 4, CO_BASE64_STD));
    assert_string_equal(co_buf_cstr(&b), "x:Zm9vYg==");
    assert_co_pass(co_base64_encode_buf(&b, "\xfb", 1, CO_BASE64_URL | CO_BASE64_RAW));
    assert_string_equal(co_buf_cstr(&b), "x:Zm9vYg==-w");
    assert_co_fail_with(CO_ETOOBIG, co_base64_encode_buf(&b, "f", 1, CO_BASE64_STD));
    assert_null(b.ptr);
}

static void test_digest__base64_round_trips_all_bytes(void **state)
{
    (void)state;
    unsigned char data[256];
    for (size_t i = 0; i < sizeof(data); i++) {
        data[i] = (unsigned char)i;
    }
    for (unsigned flags = 0; flags < 4; flags++) {
        for (size_t len = 0; len <= sizeof(data); len += 37) {
            char *enc = co_base64_encode(data, len, flags);
            co_buf b = CO_BUF_INIT(sizeof(data));
            assert_co_pass(co_base64_decode(&b, enc, strlen(enc), flags));
            assert_int_equal(b.len, len);
            if (len) {
                assert_memory_equal(b.ptr, data, len);
            }
            co_buf_dispose(&b);
            free(enc);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digest__sha256_known_vectors),
        cmocka_unit_test(test_digest__incremental_equals_one_shot),
        cmocka_unit_test(test_digest__hex),
        cmocka_unit_test(test_digest__base32_rfc4648_vectors),
        cmocka_unit_test(test_digest__owner_id_label_shape),
        cmocka_unit_test(test_digest__base64_rfc4648_vectors),
        cmocka_unit_test(test_digest__base64_url_alphabet),
        cmocka_unit_test(test_digest__base64_decode_rules),
        cmocka_unit_test(test_digest__base64_strict_refuses_unused_bits),
        cmocka_unit_test(test_digest__base64_no_newlines_refuses_them),
        cmocka_unit_test(test_digest__base64_decode_alloc),
        cmocka_unit_test(test_digest__base64_encode_buf_appends_under_the_cap),
        cmocka_unit_test(test_digest__base64_round_trips_all_bytes),
    };
    return cmocka_run_group_tests_name("digest", tests, NULL, NULL);
}
