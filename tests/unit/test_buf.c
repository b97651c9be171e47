/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the capped buffer. */
#include <stdlib.h>
#include <string.h>

#include "co/util/buf.h"
#include "tests/support/test_support.h"

static void test_buf__empty_is_empty_string(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(16);
    assert_string_equal(co_buf_cstr(&b), "");
    assert_int_equal(b.len, 0);
    size_t len = 99;
    char *s = co_buf_take(&b, &len);
    assert_string_equal(s, "");
    assert_int_equal(len, 0);
    free(s);
    co_buf_dispose(&b);
    co_buf_dispose(NULL);
}

static void test_buf__appends_and_terminates(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_puts(&b, "abc"));
    assert_co_pass(co_buf_putc(&b, '-'));
    assert_co_pass(co_buf_printf(&b, "%d/%s", 42, "x"));
    assert_co_pass(co_buf_put(&b, "\0z", 2));
    assert_int_equal(b.len, 10);
    assert_memory_equal(b.ptr, "abc-42/x\0z", 10);
    assert_int_equal(b.ptr[b.len], '\0');
    co_buf_dispose(&b);
}

static void test_buf__cap_is_exact(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(8);
    assert_co_pass(co_buf_puts(&b, "12345678"));
    assert_int_equal(b.len, 8);
    assert_true(b.cap <= 9);
    assert_co_fail_with(CO_ETOOBIG, co_buf_putc(&b, '9'));
    /* the buffer was released, nothing left for the caller to free */
    assert_null(b.ptr);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.max, 8);
    assert_contains(co_error_last(), "limit of 8 bytes");
}

static void test_buf__printf_over_cap(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(4);
    assert_co_fail_with(CO_ETOOBIG, co_buf_printf(&b, "%s", "hello"));
    assert_null(b.ptr);
}

static void test_buf__huge_length_does_not_overflow(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_puts(&b, "a"));
    assert_co_fail_with(CO_ETOOBIG, co_buf_reserve(&b, SIZE_MAX));
    assert_co_fail_with(CO_ETOOBIG, co_buf_reserve(&b, SIZE_MAX - 1));
    assert_co_fail_with(CO_ETOOBIG, co_buf_reserve(&b, SIZE_MAX / 2 + 1));
}

static void test_buf__consume_truncate_reset(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(100);
    assert_co_pass(co_buf_puts(&b, "line1\nline2\npartial"));
    co_buf_consume(&b, 6);
    assert_string_equal(co_buf_cstr(&b), "line2\npartial");
    co_buf_truncate(&b, 5);
    assert_string_equal(co_buf_cstr(&b), "line2");
    co_buf_truncate(&b, 50);
    assert_string_equal(co_buf_cstr(&b), "line2");
    co_buf_consume(&b, 99);
    assert_string_equal(co_buf_cstr(&b), "");
    assert_co_pass(co_buf_puts(&b, "again"));
    co_buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(co_buf_cstr(&b), "");
    co_buf_dispose(&b);
}

static void test_buf__grows_through_many_appends(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(1 << 20);
    for (int i = 0; i < 100000; i++) {
        assert_co_pass(co_buf_putc(&b, (char)('a' + i % 26)));
    }
    assert_int_equal(b.len, 100000);
    assert_int_equal(b.ptr[99999], 'a' + 99999 % 26);
    size_t len = 0;
    char *s = co_buf_take(&b, &len);
    assert_int_equal(len, 100000);
    assert_null(b.ptr);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf__empty_is_empty_string),
        cmocka_unit_test(test_buf__appends_and_terminates),
        cmocka_unit_test(test_buf__cap_is_exact),
        cmocka_unit_test(test_buf__printf_over_cap),
        cmocka_unit_test(test_buf__huge_length_does_not_overflow),
        cmocka_unit_test(test_buf__consume_truncate_reset),
        cmocka_unit_test(test_buf__grows_through_many_appends),
    };
    return cmocka_run_group_tests_name("buf", tests, NULL, NULL);
}
