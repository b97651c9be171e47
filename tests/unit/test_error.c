/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the thread-local last-error slot. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "tests/support/test_support.h"

static void test_error__set_returns_code_and_message(void **state)
{
    (void)state;
    assert_int_equal(co_error_set(CO_ENOTFOUND, "secret %s not found", "ns/x"), CO_ENOTFOUND);
    assert_string_equal(co_error_last(), "secret ns/x not found");
    assert_int_equal(co_error_last_code(), CO_ENOTFOUND);
    co_error_clear();
    assert_string_equal(co_error_last(), "");
    assert_int_equal(co_error_last_code(), CO_OK);
}

static void test_error__non_negative_code_becomes_generic(void **state)
{
    (void)state;
    assert_int_equal(co_error_set(5, "odd"), CO_ERROR);
    assert_int_equal(co_error_set(0, "zero"), CO_ERROR);
}

static void test_error__wrap_prefixes_and_keeps_code(void **state)
{
    (void)state;
    co_error_set(CO_EINVALID, "bad value");
    assert_int_equal(co_error_wrap("loading values from %s", "secret"), CO_EINVALID);
    assert_string_equal(co_error_last(), "loading values from secret: bad value");
    co_error_clear();
    assert_int_equal(co_error_wrap("context only"), CO_ERROR);
    assert_string_equal(co_error_last(), "context only");
}

static void test_error__os_appends_strerror(void **state)
{
    (void)state;
    errno = ENOENT;
    assert_int_equal(co_error_set_os(CO_ENOTFOUND, "open %s", "/x"), CO_ENOTFOUND);
    assert_string_equal(co_error_last(), "open /x: No such file or directory");
}

static void test_error__long_message_is_truncated_with_ellipsis(void **state)
{
    (void)state;
    size_t n = CO_MAX_ERROR_MESSAGE * 2;
    char *big = co_xmalloc(n + 1);
    memset(big, 'a', n);
    big[n] = '\0';
    co_error_set(CO_ERROR, "%s", big);
    size_t len = strlen(co_error_last());
    assert_int_equal(len, CO_MAX_ERROR_MESSAGE - 1);
    assert_string_equal(co_error_last() + len - 3, "...");
    /* wrapping a full message stays bounded too */
    co_error_wrap("ctx");
    assert_int_equal(strlen(co_error_last()), CO_MAX_ERROR_MESSAGE - 1);
    assert_memory_equal(co_error_last(), "ctx: aaa", 8);
    free(big);
}

static void *other_thread(void *arg)
{
    (void)arg;
    co_error_set(CO_ETIMEOUT, "other");
    return (void *)(intptr_t)co_error_last_code();
}

static void test_error__slot_is_per_thread(void **state)
{
    (void)state;
    co_error_set(CO_EGONE, "mine");
    pthread_t t;
    void *res = NULL;
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    assert_int_equal(pthread_join(t, &res), 0);
    assert_int_equal((int)(intptr_t)res, CO_ETIMEOUT);
    assert_string_equal(co_error_last(), "mine");
    assert_int_equal(co_error_last_code(), CO_EGONE);
}

static void test_error__names(void **state)
{
    (void)state;
    assert_string_equal(co_error_name(CO_ECONFLICT), "ECONFLICT");
    assert_string_equal(co_error_name(CO_EUNAVAILABLE), "EUNAVAILABLE");
    assert_string_equal(co_error_name(-999), "ERROR");
}

static void test_error__errno_text(void **state)
{
    (void)state;
    char buf[128];
    assert_string_equal(co_errno_text(ENOENT, buf, sizeof(buf)), "No such file or directory");
    assert_string_equal(co_errno_text(EAGAIN, buf, sizeof(buf)),
                        "Resource temporarily unavailable");
    /* an unknown value still gets a text */
    assert_contains(co_errno_text(123456, buf, sizeof(buf)), "123456");
    errno = ECONNREFUSED;
    assert_int_equal(co_error_set_os(CO_ERROR, "connect"), CO_ERROR);
    assert_string_equal(co_error_last(), "connect: Connection refused");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error__set_returns_code_and_message),
        cmocka_unit_test(test_error__non_negative_code_becomes_generic),
        cmocka_unit_test(test_error__wrap_prefixes_and_keeps_code),
        cmocka_unit_test(test_error__os_appends_strerror),
        cmocka_unit_test(test_error__long_message_is_truncated_with_ellipsis),
        cmocka_unit_test(test_error__slot_is_per_thread),
        cmocka_unit_test(test_error__names),
        cmocka_unit_test(test_error__errno_text),
    };
    return cmocka_run_group_tests_name("error", tests, NULL, NULL);
}
