/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the allocation and string helpers of co/common.h. */
#include <stdlib.h>
#include <string.h>

#include "co/util/common.h"
#include "tests/support/test_support.h"

static void test_common__join_writes_what_asprintf_writes(void **state)
{
    (void)state;
    static const char *const parts[] = {"",
                                        "a",
                                        "team-a",
                                        "x/y",
                                        "\xc3\xa9t\xc3\xa9",
                                        "a-name-of-some-length-that-is-not-short-at-all"};
    static const char seps[] = {'/', '.', ' '};
    for (size_t i = 0; i < CO_ARRAY_SIZE(parts); i++) {
        for (size_t j = 0; j < CO_ARRAY_SIZE(parts); j++) {
            for (size_t k = 0; k < CO_ARRAY_SIZE(seps); k++) {
                char *want = co_xasprintf("%s%c%s", parts[i], seps[k], parts[j]);
                char *got = co_xjoin(parts[i], seps[k], parts[j]);
                assert_string_equal(got, want);
                free(got);
                free(want);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_common__join_writes_what_asprintf_writes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
