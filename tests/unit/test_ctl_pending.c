/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the statuses a pass holds back (controller/ctl_pending.c). */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "controller/ctl_pending.h"
#include "tests/support/test_support.h"

/* A status with an inventory of @p n items, as a pass builds one. */
static struct json_object *status_of(int n)
{
    struct json_object *st = json_tokener_parse(
        "{\"state\":\"Processing\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","
        "\"reason\":\"Processing\"}],\"inventory\":[]}");
    assert_non_null(st);
    struct json_object *inv = co_json_get(st, "inventory", NULL);
    for (int i = 0; i < n; i++) {
        char item[256];
        snprintf(item, sizeof(item),
                 "{\"kind\":\"ConfigMap\",\"name\":\"cm-%d\",\"phase\":\"Creating\","
                 "\"digest\":\"%064d\"}",
                 i, i);
        json_object_array_add(inv, json_tokener_parse(item));
    }
    return st;
}

/* What is taken back is what was held, over the same resourceVersion, once. */
static void test_ctl_pending__held_status_taken_back_once(void **state)
{
    (void)state;
    ctl_pending *p = ctl_pending_new();
    struct json_object *st = status_of(500);
    assert_true(ctl_pending_put(p, "ns/a", "42", st));
    assert_int_equal(ctl_pending_len(p), 1);
    /* kept deflated, at its own size: a fraction of its text */
    size_t text_len = strlen(json_object_to_json_string_ext(st, JSON_C_TO_STRING_PLAIN));
    assert_true(ctl_pending_bytes(p) > 0);
    assert_true(ctl_pending_bytes(p) < text_len / 4);
    struct json_object *got = ctl_pending_take(p, "ns/a", "42");
    assert_non_null(got);
    assert_true(co_json_equal(got, st));
    json_object_put(got);
    assert_int_equal(ctl_pending_len(p), 0);
    assert_int_equal(ctl_pending_bytes(p), 0);
    assert_null(ctl_pending_take(p, "ns/a", "42"));
    json_object_put(st);
    ctl_pending_free(p);
}

/* A status held over another resourceVersion is stale: not returned, and dropped. */
static void test_ctl_pending__stale_status_dropped(void **state)
{
    (void)state;
    ctl_pending *p = ctl_pending_new();
    struct json_object *st = status_of(3);
    assert_true(ctl_pending_put(p, "ns/a", "42", st));
    assert_null(ctl_pending_take(p, "ns/a", "43"));
    assert_int_equal(ctl_pending_len(p), 0);
    assert_null(ctl_pending_take(p, "ns/a", "42"));
    /* no resourceVersion: nothing is held */
    assert_false(ctl_pending_put(p, "ns/b", NULL, st));
    assert_int_equal(ctl_pending_len(p), 0);
    assert_null(ctl_pending_take(p, "ns/b", NULL));
    json_object_put(st);
    ctl_pending_free(p);
}

/* A later status replaces the held one; keys are apart; drop forgets one key. */
static void test_ctl_pending__replace_and_drop(void **state)
{
    (void)state;
    ctl_pending *p = ctl_pending_new();
    struct json_object *one = status_of(1), *two = status_of(2);
    assert_true(ctl_pending_put(p, "ns/a", "1", one));
    assert_true(ctl_pending_put(p, "ns/a", "2", two));
    assert_true(ctl_pending_put(p, "ns/b", "1", one));
    assert_int_equal(ctl_pending_len(p), 2);
    ctl_pending_drop(p, "ns/b");
    assert_int_equal(ctl_pending_len(p), 1);
    assert_null(ctl_pending_take(p, "ns/b", "1"));
    struct json_object *got = ctl_pending_take(p, "ns/a", "2");
    assert_non_null(got);
    assert_true(co_json_equal(got, two));
    json_object_put(got);
    /* held statuses are released with the store */
    assert_true(ctl_pending_put(p, "ns/c", "1", one));
    json_object_put(one);
    json_object_put(two);
    ctl_pending_free(p);
    ctl_pending_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_pending__held_status_taken_back_once),
        cmocka_unit_test(test_ctl_pending__stale_status_dropped),
        cmocka_unit_test(test_ctl_pending__replace_and_drop),
    };
    return cmocka_run_group_tests_name("ctl_pending", tests, NULL, NULL);
}
