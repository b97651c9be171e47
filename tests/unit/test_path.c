/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of path.Clean, against the cases of Go's own path package tests. */
#include <stdlib.h>
#include <string.h>

#include "co/util/common.h"
#include "co/util/path.h"
#include "tests/support/test_support.h"

static void assert_clean(const char *in, const char *want)
{
    char *got = co_path_clean(in);
    assert_string_equal(got, want);
    /* cleaning is idempotent */
    char *again = co_path_clean(got);
    assert_string_equal(again, want);
    free(again);
    free(got);
}

static void test_path__clean_go_cases(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"", "."},
        {"abc", "abc"},
        {"abc/def", "abc/def"},
        {"a/b/c", "a/b/c"},
        {".", "."},
        {"..", ".."},
        {"../..", "../.."},
        {"../../abc", "../../abc"},
        {"/abc", "/abc"},
        {"/", "/"},
        {"abc/", "abc"},
        {"abc/def/", "abc/def"},
        {"/abc/", "/abc"},
        {"abc//def//ghi", "abc/def/ghi"},
        {"//abc", "/abc"},
        {"///abc", "/abc"},
        {"//abc//", "/abc"},
        {"abc//", "abc"},
        {"abc/./def", "abc/def"},
        {"/./abc/def", "/abc/def"},
        {"abc/.", "abc"},
        {"abc/def/ghi/../jkl", "abc/def/jkl"},
        {"abc/def/../ghi/../jkl", "abc/jkl"},
        {"abc/def/..", "abc"},
        {"abc/def/../..", "."},
        {"/abc/def/../..", "/"},
        {"abc/def/../../..", ".."},
        {"/abc/def/../../..", "/"},
        {"abc/def/../../../ghi/jkl/../../../mno", "../../mno"},
        {"abc/./../def", "def"},
        {"abc//./../def", "def"},
        {"abc/../../././../def", "../../def"},
        {"..a/b", "..a/b"},
        {"a/.../b", "a/.../b"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        assert_clean(cases[i][0], cases[i][1]);
    }
}

static void test_path__clean_into_takes_a_length(void **state)
{
    (void)state;
    /* the input is a counted string: bytes past @p len are not read */
    char out[CO_PATH_CLEAN_SIZE(6)];
    assert_int_equal(co_path_clean_into(out, "a/./b/../../..", 6), 3);
    assert_string_equal(out, "a/b");
    assert_int_equal(co_path_clean_into(out, "..", 1), 1);
    assert_string_equal(out, ".");
    assert_int_equal(co_path_clean_into(out, "x", 0), 1);
    assert_string_equal(out, ".");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path__clean_go_cases),
        cmocka_unit_test(test_path__clean_into_takes_a_length),
    };
    return cmocka_run_group_tests_name("path", tests, NULL, NULL);
}
