/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for semantic versions and constraints (Masterminds/semver v3.4 semantics). */
#include <stdlib.h>
#include <string.h>

#include "co/util/semver.h"
#include "tests/support/test_support.h"

static void expect_version(const char *text, const char *canonical)
{
    co_semver v;
    assert_co_pass(co_semver_parse(&v, text));
    char *s = co_semver_string(&v);
    assert_string_equal(s, canonical);
    assert_string_equal(v.original, text);
    free(s);
    co_semver_dispose(&v);
}

static void expect_bad_version(const char *text, const char *message)
{
    co_semver v;
    assert_co_fail_with(CO_EINVALID, co_semver_parse(&v, text));
    assert_string_equal(co_error_last(), message);
}

static void test_semver__parse_is_lenient(void **state)
{
    (void)state;
    expect_version("1.2.3", "1.2.3");
    expect_version("v1.2", "1.2.0");
    expect_version("1", "1.0.0");
    expect_version("01.02.03", "1.2.3");
    expect_version("1.2.3-beta.1+build.5", "1.2.3-beta.1+build.5");
    expect_version("1.2-rc1", "1.2.0-rc1");
    expect_version("1.2.3+meta-data", "1.2.3+meta-data");
}

static void test_semver__parse_errors_use_library_messages(void **state)
{
    (void)state;
    expect_bad_version("", "invalid semantic version");
    expect_bad_version("1.2.3.4", "invalid semantic version");
    expect_bad_version("1.2.beta", "invalid semantic version");
    expect_bad_version("v", "invalid semantic version");
    expect_bad_version("1.2.3-01", "version segment starts with 0");
    expect_bad_version("1.2.3-a..b", "invalid semantic version");
    expect_bad_version("99999999999999999999.0.0",
                       "error parsing version segment: strconv.ParseUint: parsing "
                       "\"99999999999999999999\": value out of range");
}

static void test_semver__strict_parse(void **state)
{
    (void)state;
    co_semver v;
    assert_co_pass(co_semver_parse_strict(&v, "1.2.3-rc.1+b"));
    assert_int_equal(v.major, 1);
    assert_int_equal(v.patch, 3);
    assert_string_equal(v.pre, "rc.1");
    assert_string_equal(v.metadata, "b");
    co_semver_dispose(&v);
    assert_co_fail_with(CO_EINVALID, co_semver_parse_strict(&v, "v1.2.3"));
    assert_string_equal(co_error_last(), "invalid characters in version");
    assert_co_fail_with(CO_EINVALID, co_semver_parse_strict(&v, "1.2"));
    assert_string_equal(co_error_last(), "invalid semantic version");
    assert_co_fail_with(CO_EINVALID, co_semver_parse_strict(&v, "1.02.3"));
    assert_string_equal(co_error_last(), "version segment starts with 0");
    assert_co_fail_with(CO_EINVALID, co_semver_parse_strict(&v, ""));
    assert_string_equal(co_error_last(), "version string empty");
}

static void test_semver__precedence_follows_the_spec(void **state)
{
    (void)state;
    const char *order[] = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
                           "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
                           "1.0.0-rc.1",  "1.0.0",         "1.0.1",
                           "1.1.0",       "2.0.0"};
    size_t n = sizeof(order) / sizeof(order[0]);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            co_semver a;
            co_semver b;
            assert_co_pass(co_semver_parse(&a, order[i]));
            assert_co_pass(co_semver_parse(&b, order[j]));
            int want = i < j ? -1 : i > j ? 1 : 0;
            if (co_semver_compare(&a, &b) != want) {
                fail_msg("compare(%s, %s) != %d", order[i], order[j], want);
            }
            co_semver_dispose(&a);
            co_semver_dispose(&b);
        }
    }
    co_semver a;
    co_semver b;
    assert_co_pass(co_semver_parse(&a, "1.2.3+one"));
    assert_co_pass(co_semver_parse(&b, "1.2.3+two"));
    assert_int_equal(co_semver_compare(&a, &b), 0);
    co_semver_dispose(&a);
    co_semver_dispose(&b);
}

static bool satisfies(const char *constraint, const char *version)
{
    co_semver_constraints *c = NULL;
    co_semver v;
    assert_co_pass(co_semver_constraints_parse(&c, constraint));
    assert_co_pass(co_semver_parse(&v, version));
    bool ok = co_semver_constraints_check(c, &v);
    char *why = NULL;
    bool ok2 = co_semver_constraints_validate(c, &v, &why);
    assert_int_equal(ok, ok2);
    assert_true(ok == (why == NULL));
    free(why);
    co_semver_dispose(&v);
    co_semver_constraints_free(c);
    return ok;
}

static void test_semver__constraints(void **state)
{
    (void)state;
    static const struct {
        const char *c;
        const char *v;
        bool ok;
    } cases[] = {
        {">= 1.2.3", "1.2.3", true},
        {">1.2.3", "1.2.3", false},
        {"<1.2.3", "1.2.2", true},
        {"<=1.2.3", "1.2.4", false},
        {"=1.2.3", "1.2.3", true},
        {"1.2.3", "1.2.4", false},
        {"!=1.2.3", "1.2.4", true},
        {"!=1.2.3", "1.2.3", false},
        {"^1.2.3", "1.9.0", true},
        {"^1.2.3", "2.0.0", false},
        {"^0.2.3", "0.2.9", true},
        {"^0.2.3", "0.3.0", false},
        {"^0.0.3", "0.0.3", true},
        {"^0.0.3", "0.0.4", false},
        {"^1.x", "1.5.0", true},
        {"~1.2.3", "1.2.9", true},
        {"~1.2.3", "1.3.0", false},
        {"~1", "1.9.0", true},
        {"~>1.2", "1.2.7", true},
        {"~1.2", "1.3.0", false},
        {"1.2.x", "1.2.7", true},
        {"1.2.x", "1.3.0", false},
        {"1.x", "1.99.0", true},
        {"*", "1.2.3", true},
        {"x", "0.0.1", true},
        {"*", "1.0.0-alpha", false},
        {"1.2 - 1.4.5", "1.4.5", true},
        {"1.2 - 1.4.5", "1.4.6", false},
        {"1.2 - 1.4.5", "1.1.9", false},
        {">1.0 <2.0", "1.5.0", true},
        {">=1.0, <2.0", "2.0.0", false},
        {"<1.0 || >=2.0", "2.1.0", true},
        {"<1.0 || >=2.0", "1.5.0", false},
        {">=1.2.3", "1.3.0-beta", false},
        {">=1.2.3-0", "1.3.0-beta", true},
        {">=1.2.3-alpha, <2", "1.5.0-rc.1", true},
        {">1.x", "2.0.0", true},
        {">1.x", "1.9.9", false},
        {">1.2.x", "1.3.0", true},
        {"<=1.2.x", "1.2.9", true},
        {"<=1.x", "1.99.0", true},
        {"!=1.x", "2.0.0", true},
        {"!=1.2.x", "1.2.9", false},
        {"v1.2.3", "1.2.3", true},
        {"=>1.0", "1.0.0", true},
        {"=<1.0", "1.0.1", true}, /* a missing patch is a wildcard */
        {"<1.0", "1.0.1", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (satisfies(cases[i].c, cases[i].v) != cases[i].ok) {
            fail_msg("%s against %s: expected %d", cases[i].c, cases[i].v, cases[i].ok);
        }
    }
}

static void test_semver__constraint_errors(void **state)
{
    (void)state;
    co_semver_constraints *c = NULL;
    assert_co_fail_with(CO_EINVALID, co_semver_constraints_parse(&c, "foo"));
    assert_string_equal(co_error_last(), "improper constraint: foo");
    assert_co_fail_with(CO_EINVALID, co_semver_constraints_parse(&c, ">= 1.2.3 || bar"));
    assert_string_equal(co_error_last(), "improper constraint:  bar");
    assert_co_fail_with(CO_EINVALID, co_semver_constraints_parse(&c, "1x"));
    assert_string_equal(co_error_last(), "constraint parser error");
    assert_null(c);
}

static void test_semver__validate_explains(void **state)
{
    (void)state;
    co_semver_constraints *c = NULL;
    co_semver v;
    char *why = NULL;
    assert_co_pass(co_semver_constraints_parse(&c, "^1.2"));
    assert_co_pass(co_semver_parse(&v, "2.0.0"));
    assert_false(co_semver_constraints_validate(c, &v, &why));
    assert_string_equal(why, "2.0.0 does not have same major version as 1.2");
    free(why);
    co_semver_dispose(&v);
    assert_co_pass(co_semver_parse(&v, "1.5.0-beta"));
    assert_false(co_semver_constraints_validate(c, &v, &why));
    assert_string_equal(why, "1.5.0-beta is a prerelease version and the constraint is only "
                             "looking for release versions");
    free(why);
    co_semver_dispose(&v);
    co_semver_constraints_free(c);
}

static void test_semver__constraint_string_and_increment(void **state)
{
    (void)state;
    co_semver_constraints *c = NULL;
    assert_co_pass(co_semver_constraints_parse(&c, "1.2 - 1.4.5 || ^2,  !=2.1"));
    char *s = co_semver_constraints_string(c);
    assert_string_equal(s, ">=1.2 <=1.4.5 || ^2 !=2.1");
    free(s);
    co_semver_constraints_free(c);

    co_semver v;
    co_semver n;
    assert_co_pass(co_semver_parse(&v, "v1.2.3-rc.1+b"));
    co_semver_increment(&n, &v, 'p');
    assert_string_equal(n.original, "v1.2.3");
    co_semver_dispose(&n);
    co_semver_increment(&n, &v, 'm');
    assert_string_equal(n.original, "v1.3.0");
    co_semver_dispose(&n);
    co_semver_increment(&n, &v, 'M');
    assert_string_equal(n.original, "v2.0.0");
    co_semver_dispose(&n);
    co_semver_dispose(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_semver__parse_is_lenient),
        cmocka_unit_test(test_semver__parse_errors_use_library_messages),
        cmocka_unit_test(test_semver__strict_parse),
        cmocka_unit_test(test_semver__precedence_follows_the_spec),
        cmocka_unit_test(test_semver__constraints),
        cmocka_unit_test(test_semver__constraint_errors),
        cmocka_unit_test(test_semver__validate_explains),
        cmocka_unit_test(test_semver__constraint_string_and_increment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
