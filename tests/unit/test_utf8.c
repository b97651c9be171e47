/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the UTF-8 decoder and encoder against Go's unicode/utf8 answers. */
#include <stdint.h>
#include <string.h>

#include "co/util/common.h"
#include "co/util/utf8.h"
#include "tests/support/test_support.h"

static void test_utf8__decode_valid_sequences(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t len;
        uint32_t cp;
    } cases[] = {
        {"A", 1, 'A'},
        {"\x7f", 1, 0x7f},
        {"\xc2\x80", 2, 0x80},
        {"\xdf\xbf", 2, 0x7ff},
        {"\xe0\xa0\x80", 3, 0x800},
        {"\xe2\x82\xac", 3, 0x20ac},
        {"\xed\x9f\xbf", 3, 0xd7ff},
        {"\xee\x80\x80", 3, 0xe000},
        {"\xef\xbf\xbd", 3, 0xfffd},
        {"\xf0\x90\x80\x80", 4, 0x10000},
        {"\xf4\x8f\xbf\xbf", 4, 0x10ffff},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        uint32_t cp = 0;
        assert_int_equal(co_utf8_decode(cases[i].in, strlen(cases[i].in), &cp), cases[i].len);
        assert_int_equal(cp, cases[i].cp);
        size_t w = 0;
        assert_int_equal(co_utf8_decode_rune(cases[i].in, strlen(cases[i].in), &w), cases[i].cp);
        assert_int_equal(w, cases[i].len);
        /* and back */
        char out[CO_UTF8_MAX];
        assert_int_equal(co_utf8_encode(out, (int32_t)cases[i].cp), cases[i].len);
        assert_memory_equal(out, cases[i].in, cases[i].len);
    }
}

static void test_utf8__invalid_is_rune_error_of_width_one(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\x80",             /* a continuation byte alone */
        "\xc0\x80",         /* overlong NUL */
        "\xc1\xbf",         /* overlong */
        "\xe0\x9f\xbf",     /* overlong three bytes */
        "\xed\xa0\x80",     /* surrogate U+D800 */
        "\xed\xbf\xbf",     /* surrogate U+DFFF */
        "\xf0\x8f\xbf\xbf", /* overlong four bytes */
        "\xf4\x90\x80\x80", /* past U+10FFFF */
        "\xf5\x80\x80\x80", /* no such lead byte */
        "\xff",
        "\xe2\x82",     /* truncated */
        "\xe2\x28\xa1", /* bad continuation */
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(bad); i++) {
        uint32_t cp = 42;
        assert_int_equal(co_utf8_decode(bad[i], strlen(bad[i]), &cp), 0);
        assert_int_equal(cp, 42);
        size_t w = 9;
        assert_int_equal(co_utf8_decode_rune(bad[i], strlen(bad[i]), &w), CO_UTF8_RUNE_ERROR);
        assert_int_equal(w, 1);
        assert_false(co_utf8_valid(bad[i], strlen(bad[i])));
    }
    /* the length bounds the read */
    uint32_t cp = 0;
    assert_int_equal(co_utf8_decode("\xe2\x82\xac", 2, &cp), 0);
    size_t w = 9;
    assert_int_equal(co_utf8_decode_rune("", 0, &w), CO_UTF8_RUNE_ERROR);
    assert_int_equal(w, 0);
}

static void test_utf8__encode_replaces_invalid_code_points(void **state)
{
    (void)state;
    char out[CO_UTF8_MAX];
    const int32_t bad[] = {-1, 0xd800, 0xdfff, 0x110000, INT32_MAX};
    for (size_t i = 0; i < CO_ARRAY_SIZE(bad); i++) {
        assert_int_equal(co_utf8_encode(out, bad[i]), 3);
        assert_memory_equal(out, "\xef\xbf\xbd", 3);
    }
    assert_int_equal(co_utf8_encode(out, 0), 1);
    assert_int_equal(out[0], 0);
}

static void test_utf8__valid_and_count(void **state)
{
    (void)state;
    const char s[] = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80";
    assert_true(co_utf8_valid(s, strlen(s)));
    assert_int_equal(co_utf8_count(s, strlen(s)), 9);
    assert_true(co_utf8_valid("", 0));
    assert_true(co_utf8_valid("a\0b", 3)); /* NUL is a code point */
    /* RuneCount: each invalid byte counts one */
    assert_int_equal(co_utf8_count("\xe2\x82", 2), 2);
    assert_int_equal(co_utf8_count("a\xffz", 3), 3);
    assert_false(co_utf8_valid("ok\xc3", 3));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8__decode_valid_sequences),
        cmocka_unit_test(test_utf8__invalid_is_rune_error_of_width_one),
        cmocka_unit_test(test_utf8__encode_replaces_invalid_code_points),
        cmocka_unit_test(test_utf8__valid_and_count),
    };
    return cmocka_run_group_tests_name("utf8", tests, NULL, NULL);
}
