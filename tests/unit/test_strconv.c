/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of Go's strconv integer parsing, against cases of Go's own strconv tests. */
#include <stdint.h>
#include <string.h>

#include "co/util/common.h"
#include "co/util/error.h"
#include "co/util/strconv.h"
#include "tests/support/test_support.h"

typedef struct int_case {
    const char *in;
    int rc;
    int64_t want;
} int_case;

/* Parses every case in @p base; out-parameters must be written only on success. */
static void check_int_cases(const int_case *cases, size_t n, int base)
{
    for (size_t i = 0; i < n; i++) {
        int64_t v = 42;
        int rc = co_strconv_parse_int(&v, cases[i].in, strlen(cases[i].in), base, 0);
        assert_int_equal(rc, cases[i].rc);
        assert_true(v == (rc == 0 ? cases[i].want : 42));
    }
}

static int puint(uint64_t *out, const char *s, int base)
{
    return co_strconv_parse_uint(out, s, strlen(s), base, 0);
}

static void test_strconv__parse_int_base10(void **state)
{
    (void)state;
    static const int_case cases[] = {
        {"0", 0, 0},
        {"-0", 0, 0},
        {"+0", 0, 0},
        {"1", 0, 1},
        {"-1", 0, -1},
        {"12345", 0, 12345},
        {"012345", 0, 12345},
        {"9223372036854775807", 0, INT64_MAX},
        {"-9223372036854775808", 0, INT64_MIN},
        {"9223372036854775808", CO_ETOOBIG, 0},
        {"-9223372036854775809", CO_ETOOBIG, 0},
        {"18446744073709551616", CO_ETOOBIG, 0},
        {"", CO_EINVALID, 0},
        {"-", CO_EINVALID, 0},
        {"+", CO_EINVALID, 0},
        {"12345x", CO_EINVALID, 0},
        {"1_000", CO_EINVALID, 0}, /* underscores need base 0 */
        {"0x10", CO_EINVALID, 0},
        {" 1", CO_EINVALID, 0},
        /* Go reports the overflow as soon as it happens, before the bad byte after it */
        {"99999999999999999999x", CO_ETOOBIG, 0},
    };
    check_int_cases(cases, CO_ARRAY_SIZE(cases), 10);
}

static void test_strconv__base0_prefixes_and_underscores(void **state)
{
    (void)state;
    static const int_case cases[] = {
        {"0x10", 0, 16},
        {"0X1f", 0, 31},
        {"-0x10", 0, -16},
        {"0o17", 0, 15},
        {"017", 0, 15},
        {"0b101", 0, 5},
        {"0B1", 0, 1},
        {"0", 0, 0},
        {"08", CO_EINVALID, 0},
        {"0x", CO_EINVALID, 0},
        {"0b", CO_EINVALID, 0},
        {"1_000", 0, 1000},
        {"0x_1f", 0, 31},
        {"0_17", 0, 15},
        {"-1_2_3", 0, -123},
        {"_1", CO_EINVALID, 0},
        {"1_", CO_EINVALID, 0},
        {"1__0", CO_EINVALID, 0},
        {"0x_", CO_EINVALID, 0},
        {"0x8000000000000000", CO_ETOOBIG, 0},
        {"-0x8000000000000000", 0, INT64_MIN},
    };
    check_int_cases(cases, CO_ARRAY_SIZE(cases), 0);
    /* callers that strip the underscores their syntax allows refuse the rest */
    int64_t v = 0;
    assert_int_equal(co_strconv_parse_int(&v, "1_000", 5, 0, CO_STRCONV_NO_UNDERSCORES),
                     CO_EINVALID);
    assert_co_pass(co_strconv_parse_int(&v, "0x1f", 4, 0, CO_STRCONV_NO_UNDERSCORES));
    assert_true(v == 31);
}

static void test_strconv__parse_uint(void **state)
{
    (void)state;
    uint64_t u = 0;
    assert_co_pass(puint(&u, "18446744073709551615", 10));
    assert_true(u == UINT64_MAX);
    assert_int_equal(puint(&u, "18446744073709551616", 10), CO_ETOOBIG);
    assert_co_pass(puint(&u, "0xFFFFFFFFFFFFFFFF", 0));
    assert_true(u == UINT64_MAX);
    assert_int_equal(puint(&u, "+1", 10), CO_EINVALID); /* no sign */
    assert_int_equal(puint(&u, "-1", 0), CO_EINVALID);
    assert_int_equal(puint(&u, "", 10), CO_EINVALID);
    assert_co_pass(puint(&u, "zz", 36));
    assert_true(u == 35 * 36 + 35);
    assert_co_pass(puint(&u, "777", 8));
    assert_true(u == 511);
    assert_int_equal(puint(&u, "8", 8), CO_EINVALID);
    assert_int_equal(puint(&u, "1", 1), CO_EINVALID); /* no such base */
    assert_int_equal(puint(&u, "1", 37), CO_EINVALID);
}

static void test_strconv__counted_strings(void **state)
{
    (void)state;
    /* the length bounds the parse: what follows is not read */
    int64_t v = 0;
    assert_co_pass(co_strconv_parse_int(&v, "123abc", 3, 10, 0));
    assert_true(v == 123);
    assert_int_equal(co_strconv_parse_int(&v, "123", 0, 10, 0), CO_EINVALID);
}

static void test_strconv__underscores_ok(void **state)
{
    (void)state;
    assert_true(co_strconv_underscores_ok("1_000", 5));
    assert_true(co_strconv_underscores_ok("0x_ff", 5));
    assert_true(co_strconv_underscores_ok("-1_0.5_0", 8));
    assert_false(co_strconv_underscores_ok("1__0", 4));
    assert_false(co_strconv_underscores_ok("_1", 2));
    assert_false(co_strconv_underscores_ok("1_.5", 4));
    assert_false(co_strconv_underscores_ok("0_x1", 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strconv__parse_int_base10),
        cmocka_unit_test(test_strconv__base0_prefixes_and_underscores),
        cmocka_unit_test(test_strconv__parse_uint),
        cmocka_unit_test(test_strconv__counted_strings),
        cmocka_unit_test(test_strconv__underscores_ok),
    };
    return cmocka_run_group_tests_name("strconv", tests, NULL, NULL);
}
