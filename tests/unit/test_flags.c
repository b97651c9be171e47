/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for command-line flag parsing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/flags.h"
#include "tests/support/test_support.h"

typedef struct opts {
    int verbose;
    const char *addr;
    long long n;
    co_flag_list sets;
} opts;

static int parse(opts *o, int *next, int argc, const char **argv)
{
    const co_flag flags[] = {
        {"verbose", CO_FLAG_BOOL, &o->verbose, NULL, "be loud"},
        {"addr", CO_FLAG_STRING, &o->addr, "ADDR", "address"},
        {"n", CO_FLAG_INT, &o->n, "N", "count"},
        {"set", CO_FLAG_LIST, &o->sets, "K=V", "repeatable"},
    };
    return co_flags_parse(next, flags, CO_ARRAY_SIZE(flags), argc, (char **)argv);
}

static void test_flags__all_forms(void **state)
{
    (void)state;
    opts o = {0};
    int next = 0;
    const char *argv[] = {"prog", "--verbose", "--addr=:8080", "-n",     "12", "--set",
                          "a=1",  "-set=b=2",  "rest",         "--addr", "x"};
    assert_co_pass(parse(&o, &next, (int)CO_ARRAY_SIZE(argv), argv));
    assert_int_equal(o.verbose, 1);
    assert_string_equal(o.addr, ":8080");
    assert_int_equal(o.n, 12);
    assert_int_equal(o.sets.len, 2);
    assert_string_equal(o.sets.items[0], "a=1");
    assert_string_equal(o.sets.items[1], "b=2");
    assert_int_equal(next, 8);
    co_flag_list_dispose(&o.sets);
}

static void test_flags__bool_values_and_double_dash(void **state)
{
    (void)state;
    opts o = {.verbose = 1};
    int next = 0;
    const char *argv[] = {"prog", "--verbose=false", "--", "--addr"};
    assert_co_pass(parse(&o, &next, 4, argv));
    assert_int_equal(o.verbose, 0);
    assert_int_equal(next, 3);
    const char *bad[] = {"prog", "--verbose=maybe"};
    assert_co_fail_with(CO_EINVALID, parse(&o, &next, 2, bad));
    assert_contains(co_error_last(), "--verbose");
}

static void test_flags__errors_name_the_flag(void **state)
{
    (void)state;
    opts o = {0};
    int next = 0;
    const char *unknown[] = {"prog", "--nope=1"};
    assert_co_fail_with(CO_EINVALID, parse(&o, &next, 2, unknown));
    assert_string_equal(co_error_last(), "unknown flag: --nope");
    const char *missing[] = {"prog", "--addr"};
    assert_co_fail_with(CO_EINVALID, parse(&o, &next, 2, missing));
    assert_string_equal(co_error_last(), "flag --addr needs a value");
    const char *badint[] = {"prog", "--n=12x"};
    assert_co_fail_with(CO_EINVALID, parse(&o, &next, 2, badint));
    assert_string_equal(co_error_last(), "flag --n: invalid integer \"12x\"");
    const char *overflow[] = {"prog", "--n=99999999999999999999"};
    assert_co_fail_with(CO_EINVALID, parse(&o, &next, 2, overflow));
}

static void test_flags__usage_lists_every_flag(void **state)
{
    (void)state;
    int v = 0;
    const char *out = NULL;
    const co_flag flags[] = {
        {"verbose", CO_FLAG_BOOL, &v, NULL, "be loud"},
        {"o", CO_FLAG_STRING, &out, "FORMAT", "output format"},
        {"addr", CO_FLAG_STRING, &out, NULL, "address"},
    };
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    co_flags_usage(f, flags, CO_ARRAY_SIZE(flags));
    assert_int_equal(fclose(f), 0);
    assert_string_equal(text, "  --verbose\n"
                              "        be loud\n"
                              "  -o FORMAT\n"
                              "        output format\n"
                              "  --addr VALUE\n"
                              "        address\n");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flags__all_forms),
        cmocka_unit_test(test_flags__bool_values_and_double_dash),
        cmocka_unit_test(test_flags__errors_name_the_flag),
        cmocka_unit_test(test_flags__usage_lists_every_flag),
    };
    return cmocka_run_group_tests_name("flags", tests, NULL, NULL);
}
