/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for structured logging: formats, level checks, quoting and redaction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "co/util/log.h"
#include "tests/support/test_support.h"

/* Captures what the logger writes through a pipe. */
static char *capture(co_log_format format, co_log_level level, void (*fn)(void))
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    co_log_setup("tester", level, format);
    co_log_set_fd(fds[1]);
    fn();
    co_log_set_fd(2);
    close(fds[1]);
    char *out = co_xmalloc(1 << 16);
    size_t len = 0;
    ssize_t n;
    while ((n = read(fds[0], out + len, (1 << 16) - 1 - len)) > 0) {
        len += (size_t)n;
    }
    out[len] = '\0';
    close(fds[0]);
    return out;
}

static int evaluated;
static const char *side_effect(void)
{
    evaluated++;
    return "v";
}

static void log_basic(void)
{
    co_log(CO_LOG_INFO, "reconciled component", "namespace", "ns1", "name", "c", NULL);
    co_log(CO_LOG_DEBUG, "hidden", "k", side_effect(), NULL);
}

static void test_log__text_line_shape(void **state)
{
    (void)state;
    evaluated = 0;
    char *out = capture(CO_LOG_FORMAT_TEXT, CO_LOG_INFO, log_basic);
    /* 2026-01-02T03:04:05.678Z level=info ... */
    assert_true(strlen(out) > 25);
    assert_int_equal(out[4], '-');
    assert_int_equal(out[10], 'T');
    assert_int_equal(out[23], 'Z');
    assert_string_equal(out + 24, " level=info component=tester msg=\"reconciled component\" "
                                  "namespace=ns1 name=c\n");
    assert_int_equal(evaluated, 0); /* disabled level: arguments not evaluated */
    free(out);
}

static void log_json(void)
{
    co_log(CO_LOG_ERROR, "failed", "error", "quote \" and \\ and \n newline", NULL);
}

static void test_log__json_escapes(void **state)
{
    (void)state;
    char *out = capture(CO_LOG_FORMAT_JSON, CO_LOG_INFO, log_json);
    assert_memory_equal(out, "{\"ts\":\"", 7);
    assert_contains(out, "\",\"level\":\"error\",\"component\":\"tester\",\"msg\":\"failed\","
                         "\"error\":\"quote \\\" and \\\\ and \\n newline\"}\n");
    /* exactly one line */
    assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
    free(out);
}

static void log_forgery(void)
{
    co_log(CO_LOG_WARN, "x", "user", "a\nlevel=error msg=forged", "empty", "", NULL);
}

static void test_log__text_values_cannot_forge_lines(void **state)
{
    (void)state;
    char *out = capture(CO_LOG_FORMAT_TEXT, CO_LOG_TRACE, log_forgery);
    assert_contains(out, "user=\"a\\nlevel=error msg=forged\" empty=\"\"\n");
    assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
    free(out);
}

static void log_secret(void)
{
    co_log(CO_LOG_INFO, "auth", "bearerToken", "abc123", "Password", "hunter2", "user", "bob",
           NULL);
}

static void test_log__redacts_sensitive_keys(void **state)
{
    (void)state;
    char *out = capture(CO_LOG_FORMAT_TEXT, CO_LOG_INFO, log_secret);
    assert_null(strstr(out, "abc123"));
    assert_null(strstr(out, "hunter2"));
    assert_contains(out, "bearerToken=[redacted] Password=[redacted] user=bob");
    free(out);
}

static void log_long(void)
{
    size_t n = 200000;
    char *big = co_xmalloc(n + 1);
    memset(big, 'x', n);
    big[n] = '\0';
    char *ctl = co_xmalloc(n + 1);
    memset(ctl, 1, n);
    ctl[n] = '\0';
    co_log(CO_LOG_INFO, "big", "a", big, "b", ctl, "c", ctl, "d", ctl, "e", "small", NULL);
    free(big);
    free(ctl);
}

static void test_log__long_line_is_bounded_and_valid(void **state)
{
    (void)state;
    char *out = capture(CO_LOG_FORMAT_JSON, CO_LOG_INFO, log_long);
    size_t len = strlen(out);
    assert_true(len <= (size_t)64 * 1024);
    /* the first value is cut with an ellipsis inside its quotes */
    assert_contains(out, "xxx...\",");
    /* fields that did not fit are dropped whole and the line says so */
    assert_null(strstr(out, "\"e\":"));
    assert_memory_equal(out + len - 21, ",\"truncated\":\"true\"}\n", 21);
    free(out);
}

static void log_formatted(void)
{
    co_logf(CO_LOG_INFO, "%d workers on %s", 5, "queue");
}

static void test_log__formatted_message(void **state)
{
    (void)state;
    char *out = capture(CO_LOG_FORMAT_TEXT, CO_LOG_INFO, log_formatted);
    assert_contains(out, "msg=\"5 workers on queue\"\n");
    free(out);
}

static void test_log__parse_level_and_format(void **state)
{
    (void)state;
    co_log_level l;
    co_log_format f;
    assert_co_pass(co_log_level_parse(&l, "debug"));
    assert_int_equal(l, CO_LOG_DEBUG);
    assert_co_pass(co_log_level_parse(&l, "WARNING"));
    assert_int_equal(l, CO_LOG_WARN);
    assert_co_pass(co_log_level_parse(&l, "4"));
    assert_int_equal(l, CO_LOG_TRACE);
    assert_co_fail_with(CO_EINVALID, co_log_level_parse(&l, "verbose"));
    assert_contains(co_error_last(), "\"verbose\"");
    assert_co_pass(co_log_format_parse(&f, "json"));
    assert_int_equal(f, CO_LOG_FORMAT_JSON);
    assert_co_fail_with(CO_EINVALID, co_log_format_parse(&f, "xml"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log__text_line_shape),
        cmocka_unit_test(test_log__json_escapes),
        cmocka_unit_test(test_log__text_values_cannot_forge_lines),
        cmocka_unit_test(test_log__redacts_sensitive_keys),
        cmocka_unit_test(test_log__long_line_is_bounded_and_valid),
        cmocka_unit_test(test_log__formatted_message),
        cmocka_unit_test(test_log__parse_level_and_format),
    };
    return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
