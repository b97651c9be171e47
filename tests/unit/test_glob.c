/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of glob matching and gitignore-style ignore sets. */
#include <stdlib.h>
#include <string.h>

#include "co/util/glob.h"
#include "tests/support/test_support.h"

static void test_glob__star_stays_in_segment(void **state)
{
    (void)state;
    assert_true(co_glob_match("*.yaml", "a.yaml", 0));
    assert_false(co_glob_match("*.yaml", "dir/a.yaml", 0));
    assert_true(co_glob_match("dir/*.yaml", "dir/a.yaml", 0));
    assert_true(co_glob_match("d?r/a*", "dir/abc", 0));
    assert_false(co_glob_match("d?r", "d/r", 0));
    assert_true(co_glob_match("*", "", 0));
    assert_false(co_glob_match("a", "ab", 0));
}

static void test_glob__classes_and_escapes(void **state)
{
    (void)state;
    assert_true(co_glob_match("[abc].txt", "b.txt", 0));
    assert_false(co_glob_match("[!abc].txt", "b.txt", 0));
    assert_true(co_glob_match("[^abc].txt", "x.txt", 0));
    assert_true(co_glob_match("v[0-9]", "v7", 0));
    assert_false(co_glob_match("v[0-9]", "vx", 0));
    assert_true(co_glob_match("\\*", "*", 0));
    assert_false(co_glob_match("\\*", "a", 0));
    assert_true(co_glob_match("[", "[", 0));
}

static void test_glob__doublestar(void **state)
{
    (void)state;
    assert_true(co_glob_match("**/*.yaml", "a.yaml", CO_GLOB_DOUBLESTAR));
    assert_true(co_glob_match("**/*.yaml", "x/y/a.yaml", CO_GLOB_DOUBLESTAR));
    assert_true(co_glob_match("a/**", "a/b/c", CO_GLOB_DOUBLESTAR));
    assert_true(co_glob_match("a/**/z", "a/z", CO_GLOB_DOUBLESTAR));
    assert_true(co_glob_match("a/**/z", "a/b/c/z", CO_GLOB_DOUBLESTAR));
    assert_false(co_glob_match("a/**/z", "b/z", CO_GLOB_DOUBLESTAR));
    assert_false(co_glob_match("**/*.yaml", "x/y/a.yml", CO_GLOB_DOUBLESTAR));
    /* without the flag "**" is just two stars */
    assert_false(co_glob_match("**/*.yaml", "x/y/a.yaml", 0));
}

static co_ignore *parse(const char *text)
{
    co_ignore *ig = NULL;
    assert_co_pass(co_ignore_parse(&ig, text, strlen(text)));
    return ig;
}

static void test_glob__ignore_basename_anywhere(void **state)
{
    (void)state;
    co_ignore *ig = parse("# comment\n\n*.tmp\nsecret.txt\n");
    assert_true(co_ignore_match(ig, "a.tmp", 0));
    assert_true(co_ignore_match(ig, "deep/dir/a.tmp", 0));
    assert_true(co_ignore_match(ig, "x/secret.txt", 0));
    assert_false(co_ignore_match(ig, "a.yaml", 0));
    assert_false(co_ignore_match(ig, "# comment", 0));
    co_ignore_free(ig);
}

static void test_glob__ignore_anchored_and_dirs(void **state)
{
    (void)state;
    co_ignore *ig = parse("/top.yaml\ndocs/\nsub/inner.yaml\n");
    assert_true(co_ignore_match(ig, "top.yaml", 0));
    assert_false(co_ignore_match(ig, "x/top.yaml", 0));
    assert_true(co_ignore_match(ig, "docs/readme.md", 0));
    assert_true(co_ignore_match(ig, "a/docs/readme.md", 0));
    assert_false(co_ignore_match(ig, "docs", 0)); /* a file named docs */
    assert_true(co_ignore_match(ig, "sub/inner.yaml", 0));
    assert_false(co_ignore_match(ig, "x/sub/inner.yaml", 0));
    co_ignore_free(ig);
}

static void test_glob__ignore_negation_last_wins(void **state)
{
    (void)state;
    co_ignore *ig = parse("*.yaml\n!keep.yaml\nbuild/\n!build/x.yaml\n\\#literal\n");
    assert_true(co_ignore_match(ig, "a.yaml", 0));
    assert_false(co_ignore_match(ig, "keep.yaml", 0));
    assert_false(co_ignore_match(ig, "d/keep.yaml", 0));
    /* a file below an ignored directory cannot be re-included */
    assert_true(co_ignore_match(ig, "build/x.yaml", 0));
    assert_true(co_ignore_match(ig, "#literal", 0));
    co_ignore_free(ig);
}

static void test_glob__ignore_doublestar_and_spaces(void **state)
{
    (void)state;
    co_ignore *ig = parse("**/gen/**\nlogs/**/*.log\ntrail   \nesc\\ \n");
    assert_true(co_ignore_match(ig, "gen/a", 0));
    assert_true(co_ignore_match(ig, "x/gen/y/z", 0));
    assert_true(co_ignore_match(ig, "logs/a/b/c.log", 0));
    assert_true(co_ignore_match(ig, "logs/c.log", 0));
    assert_true(co_ignore_match(ig, "trail", 0));
    assert_true(co_ignore_match(ig, "esc ", 0));
    assert_false(co_ignore_match(ig, "esc", 0));
    assert_false(co_ignore_match(NULL, "anything", 0));
    co_ignore_free(ig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glob__star_stays_in_segment),
        cmocka_unit_test(test_glob__classes_and_escapes),
        cmocka_unit_test(test_glob__doublestar),
        cmocka_unit_test(test_glob__ignore_basename_anywhere),
        cmocka_unit_test(test_glob__ignore_anchored_and_dirs),
        cmocka_unit_test(test_glob__ignore_negation_last_wins),
        cmocka_unit_test(test_glob__ignore_doublestar_and_spaces),
    };
    return cmocka_run_group_tests_name("glob", tests, NULL, NULL);
}
