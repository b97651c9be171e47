/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for Go durations. The main check walks tests/fixtures/duration/go_durations.tsv,
 * written by Go's own time package (tests/oracle/goduration), and requires the same value or
 * the same error message for every row; a second test rebuilds that program and checks the
 * committed table is exactly what Go produces.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/duration.h"
#include "tests/support/test_support.h"

static void test_duration__examples(void **state)
{
    (void)state;
    int64_t d = 0;
    assert_co_pass(co_duration_parse(&d, "1h30m"));
    assert_true(d == 90 * CO_MINUTE);
    assert_co_pass(co_duration_parse(&d, "1.5s"));
    assert_true(d == 1500 * CO_MILLISECOND);
    assert_co_pass(co_duration_parse(&d, "-300ms"));
    assert_true(d == -300 * CO_MILLISECOND);
    assert_co_pass(co_duration_parse(&d, "0"));
    assert_true(d == 0);
    assert_co_pass(co_duration_parse(&d, "2\xc2\xb5s"));
    assert_true(d == 2000);
    assert_co_fail_with(CO_EINVALID, co_duration_parse(&d, "10d"));
    assert_string_equal(co_error_last(), "time: unknown unit \"d\" in duration \"10d\"");
    assert_true(d == 2000); /* untouched on failure */
    assert_co_fail_with(CO_EINVALID, co_duration_parse(&d, "9223372036854775808ns"));
    assert_string_equal(co_error_last(), "time: invalid duration \"9223372036854775808ns\"");

    char buf[CO_DURATION_STR_MAX];
    assert_int_equal(co_duration_format(buf, 90 * CO_MINUTE), 7);
    assert_string_equal(buf, "1h30m0s");
    co_duration_format(buf, 0);
    assert_string_equal(buf, "0s");
    co_duration_format(buf, 1500 * CO_MICROSECOND);
    assert_string_equal(buf, "1.5ms");
    co_duration_format(buf, -2 * CO_MICROSECOND);
    assert_string_equal(buf, "-2\xc2\xb5s");
    co_duration_format(buf, INT64_MIN);
    assert_string_equal(buf, "-2562047h47m16.854775808s");
}

static size_t hex_decode(char *out, const char *hex)
{
    size_t n = 0;
    for (; hex[0] && hex[1]; hex += 2) {
        char pair[3] = {hex[0], hex[1], '\0'};
        out[n++] = (char)strtoul(pair, NULL, 16);
    }
    out[n] = '\0';
    return n;
}

static void test_duration__matches_go_table(void **state)
{
    (void)state;
    char *table = co_test_fixture("duration/go_durations.tsv", NULL);
    size_t parses = 0, formats = 0, errors = 0, failures = 0;
    char *save = NULL;
    for (char *line = strtok_r(table, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *fields[4] = {NULL, NULL, NULL, NULL};
        size_t nf = 0;
        char *rest = line;
        while (nf < 4 && rest) {
            fields[nf++] = strsep(&rest, "\t");
        }
        int is_parse = fields[0] && strcmp(fields[0], "P") == 0;
        if (rest || nf != (is_parse ? 4U : 3U) || !fields[0] || !fields[1] || !fields[2] ||
            (is_parse && !fields[3])) {
            fail_msg("malformed table row: %s", line);
            return;
        }
        if (is_parse) {
            char input[256];
            assert_true(strlen(fields[1]) / 2 < sizeof(input));
            hex_decode(input, fields[1]);
            int64_t d = 0;
            co_error_clear();
            int rc = co_duration_parse(&d, input);
            if (strcmp(fields[2], "ok") == 0) {
                long long want = strtoll(fields[3], NULL, 10);
                if (rc != 0 || d != want) {
                    print_message("# parse \"%s\": got %d/%lld (%s), Go: %lld\n", input, rc,
                                  (long long)d, co_error_last(), want);
                    failures++;
                }
            } else {
                errors++;
                if (rc != CO_EINVALID || strcmp(co_error_last(), fields[3]) != 0) {
                    print_message("# parse \"%s\": got %d (%s), Go: %s\n", input, rc,
                                  co_error_last(), fields[3]);
                    failures++;
                }
            }
            parses++;
        } else {
            assert_string_equal(fields[0], "F");
            char buf[CO_DURATION_STR_MAX];
            long long v = strtoll(fields[1], NULL, 10);
            size_t n = co_duration_format(buf, v);
            if (strcmp(buf, fields[2]) != 0 || n != strlen(fields[2])) {
                print_message("# format %lld: got %s, Go: %s\n", v, buf, fields[2]);
                failures++;
            }
            /* what Go writes, Go (and we) read back */
            int64_t back = 0;
            assert_co_pass(co_duration_parse(&back, buf));
            assert_true(back == v);
            formats++;
        }
    }
    print_message("# %zu parse rows (%zu errors), %zu format rows, %zu failures\n", parses, errors,
                  formats, failures);
    assert_int_equal(failures, 0);
    assert_true(parses > 400 && formats > 400 && errors > 40);
    free(table);
}

static void test_duration__table_is_what_go_writes(void **state)
{
    (void)state;
    char *cmd = co_xasprintf("\"$('%s/tests/oracle/build.sh' goduration)\"", CO_SOURCE_ROOT);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    co_buf out = CO_BUF_INIT(16 * CO_MIB);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        assert_co_pass(co_buf_put(&out, chunk, n));
    }
    assert_int_equal(pclose(f), 0);
    size_t len = 0;
    char *table = co_test_fixture("duration/go_durations.tsv", &len);
    assert_int_equal(out.len, len);
    assert_memory_equal(out.ptr, table, len);
    free(table);
    co_buf_dispose(&out);
    free(cmd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration__examples),
        cmocka_unit_test(test_duration__matches_go_table),
        cmocka_unit_test(test_duration__table_is_what_go_writes),
    };
    return cmocka_run_group_tests_name("duration", tests, NULL, NULL);
}
