/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the string-keyed hash table. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/strmap.h"
#include "tests/support/test_support.h"

static void test_strmap__put_remove_walk_and_churn(void **state)
{
    (void)state;
    co_strmap m = CO_STRMAP_INIT;
    char keys[200][16];
    for (int i = 0; i < 200; i++) {
        snprintf(keys[i], sizeof(keys[i]), "k%d", i);
        assert_null(co_strmap_put(&m, keys[i], keys[i]));
    }
    assert_int_equal(m.len, 200);
    for (int i = 0; i < 200; i += 2) {
        assert_ptr_equal(co_strmap_remove(&m, keys[i]), keys[i]);
    }
    assert_int_equal(m.len, 100);
    for (int i = 0; i < 200; i++) {
        assert_ptr_equal(co_strmap_get(&m, keys[i]), i % 2 ? keys[i] : NULL);
    }
    /* replacing during a walk is allowed and visits every key once */
    size_t seen = 0;
    const char *k;
    void *v;
    for (size_t it = 0; co_strmap_next(&m, &it, &k, &v);) {
        co_strmap_put(&m, k, NULL);
        seen++;
    }
    assert_int_equal(seen, 100);
    /* churn through tombstones without growing forever */
    for (int r = 0; r < 50; r++) {
        for (int i = 0; i < 200; i += 2) {
            co_strmap_put(&m, keys[i], keys[i]);
            co_strmap_remove(&m, keys[i]);
        }
    }
    assert_int_equal(m.len, 100);
    assert_true(m.cap <= 512);
    co_strmap_dispose(&m);
}

static void test_strmap__find_tells_null_values_from_absent_keys(void **state)
{
    (void)state;
    co_strmap m = CO_STRMAP_INIT;
    void *v = (void *)1;
    assert_false(co_strmap_find(&m, "a", &v));
    assert_ptr_equal(v, (void *)1);
    assert_null(co_strmap_put(&m, "a", NULL));
    assert_true(co_strmap_find(&m, "a", &v));
    assert_null(v);
    assert_true(co_strmap_find(&m, "a", NULL));
    assert_int_equal(co_strmap_len(&m), 1);
    /* the key is copied */
    char key[] = "b";
    assert_null(co_strmap_put(&m, key, (void *)2));
    key[0] = 'c';
    assert_ptr_equal(co_strmap_get(&m, "b"), (void *)2);
    assert_false(co_strmap_find(&m, "c", NULL));
    assert_ptr_equal(co_strmap_put(&m, "b", (void *)3), (void *)2);
    assert_int_equal(co_strmap_len(&m), 2);
    co_strmap_dispose(&m);
    assert_int_equal(co_strmap_len(&m), 0);
    /* disposed maps are reusable */
    assert_null(co_strmap_put(&m, "a", (void *)4));
    assert_ptr_equal(co_strmap_get(&m, "a"), (void *)4);
    co_strmap_dispose(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strmap__put_remove_walk_and_churn),
        cmocka_unit_test(test_strmap__find_tells_null_values_from_absent_keys),
    };
    return cmocka_run_group_tests_name("strmap", tests, NULL, NULL);
}
