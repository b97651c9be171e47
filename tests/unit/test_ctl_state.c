/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the pure parts of the Component state machine: the Ready condition, jitter,
 * capitalisation and the internal backoff ramp. */
#include <json-c/json.h>

#include "co/util/duration.h"
#include "co/json/json.h"
#include "controller/ctl_state.h"
#include "tests/support/test_support.h"

static struct json_object *parse(const char *text)
{
    struct json_object *o = NULL;
    assert_co_pass(co_json_parse(&o, text, strlen(text)));
    return o;
}

static const char *cond_field(struct json_object *status, const char *field)
{
    struct json_object *conds = co_json_get(status, "conditions", NULL);
    assert_non_null(conds);
    assert_int_equal(json_object_array_length(conds), 1);
    struct json_object *v = co_json_get(json_object_array_get_idx(conds, 0), field, NULL);
    return v ? json_object_get_string(v) : NULL;
}

#define T0 ((int64_t)1700000000 * CO_SECOND)

static void test_ctl_state__condition_status_follows_state(void **state)
{
    (void)state;
    struct json_object *st = json_object_new_object();
    ctl_state_set(st, CTL_STATE_READY, CTL_REASON_READY, CTL_MSG_READY, T0);
    assert_string_equal(cond_field(st, "status"), "True");
    assert_string_equal(ctl_state_get(st), "Ready");
    assert_string_equal(ctl_state_reason(st), "Ready");
    ctl_state_set(st, CTL_STATE_ERROR, CTL_REASON_ERROR, "boom", T0);
    assert_string_equal(cond_field(st, "status"), "False");
    ctl_state_set(st, CTL_STATE_PENDING, CTL_REASON_RETRYING, "x", T0);
    assert_string_equal(cond_field(st, "status"), "Unknown");
    assert_string_equal(cond_field(st, "message"), "x");
    json_object_put(st);
}

static void test_ctl_state__transition_time_only_on_status_change(void **state)
{
    (void)state;
    struct json_object *st = parse("{\"inventory\":[{\"name\":\"keep\"}],\"conditions\":"
                                   "[{\"type\":\"Ready\",\"status\":\"Unknown\","
                                   "\"lastTransitionTime\":\"2020-01-01T00:00:00Z\"},"
                                   "{\"type\":\"Other\",\"status\":\"True\"}]}");
    ctl_state_set(st, CTL_STATE_PROCESSING, CTL_REASON_PROCESSING, CTL_MSG_PROCESSING, T0);
    assert_string_equal(cond_field(st, "lastTransitionTime"), "2020-01-01T00:00:00Z");
    ctl_state_set(st, CTL_STATE_READY, CTL_REASON_READY, CTL_MSG_READY, T0);
    assert_string_equal(cond_field(st, "lastTransitionTime"), "2023-11-14T22:13:20Z");
    /* fields of others survive */
    assert_non_null(co_json_get(st, "inventory", NULL));
    json_object_put(st);
}

static void test_ctl_state__capitalise(void **state)
{
    (void)state;
    char *s = ctl_capitalise("error running pre-reconcile hook");
    assert_string_equal(s, "Error running pre-reconcile hook");
    free(s);
    s = ctl_capitalise("");
    assert_string_equal(s, "");
    free(s);
    s = ctl_capitalise(NULL);
    assert_string_equal(s, "");
    free(s);
}

static void test_ctl_state__jitter_between_one_and_five_percent(void **state)
{
    (void)state;
    int64_t d = 10 * CO_SECOND;
    for (uint64_t r = 0; r < 2000; r += 7) {
        int64_t j = ctl_jitter(d, r);
        assert_true(j >= d + d / 100);
        assert_true(j <= d + d / 20);
    }
    assert_int_equal(ctl_jitter(0, 5), 0);
}

static void test_ctl_state__backoff_ramp(void **state)
{
    (void)state;
    assert_int_equal(ctl_backoff_delay(1), 50 * CO_MILLISECOND);
    assert_int_equal(ctl_backoff_delay(5), 800 * CO_MILLISECOND);
    assert_int_equal(ctl_backoff_delay(6), CO_SECOND);
    assert_int_equal(ctl_backoff_delay(20), CO_SECOND);
    assert_int_equal(ctl_backoff_delay(21), 2 * CO_SECOND);
    assert_int_equal(ctl_backoff_delay(51), 10 * CO_SECOND);
    assert_int_equal(ctl_backoff_delay(100000), 10 * CO_SECOND);
}

static void test_ctl_state__backoff_resets_on_activity_change_and_forget(void **state)
{
    (void)state;
    ctl_backoff *b = ctl_backoff_new();
    assert_int_equal(ctl_backoff_next(b, "ns/a", "Processing"), 50 * CO_MILLISECOND);
    assert_int_equal(ctl_backoff_next(b, "ns/a", "Processing"), 100 * CO_MILLISECOND);
    assert_int_equal(ctl_backoff_next(b, "ns/b", "Processing"), 50 * CO_MILLISECOND);
    assert_int_equal(ctl_backoff_next(b, "ns/a", "Processing"), 200 * CO_MILLISECOND);
    assert_int_equal(ctl_backoff_next(b, "ns/a", "Suspended"), 50 * CO_MILLISECOND);
    assert_int_equal(ctl_backoff_next(b, "ns/a", "Suspended"), 100 * CO_MILLISECOND);
    ctl_backoff_forget(b, "ns/a");
    ctl_backoff_forget(b, "ns/unknown");
    assert_int_equal(ctl_backoff_next(b, "ns/a", "Suspended"), 50 * CO_MILLISECOND);
    assert_int_equal(ctl_backoff_next(b, "ns/b", "Processing"), 100 * CO_MILLISECOND);
    ctl_backoff_free(b);
    ctl_backoff_free(NULL);
}

static void test_ctl_state__component_ready(void **state)
{
    (void)state;
    struct json_object *c = parse("{\"metadata\":{\"generation\":3},\"status\":"
                                  "{\"observedGeneration\":3,\"state\":\"Ready\"}}");
    assert_true(ctl_state_component_ready(c));
    json_object_put(c);
    c = parse("{\"metadata\":{\"generation\":4},\"status\":"
              "{\"observedGeneration\":3,\"state\":\"Ready\"}}");
    assert_false(ctl_state_component_ready(c));
    json_object_put(c);
    c = parse("{\"metadata\":{\"generation\":3},\"status\":"
              "{\"observedGeneration\":3,\"state\":\"Processing\"}}");
    assert_false(ctl_state_component_ready(c));
    json_object_put(c);
    c = parse("{\"metadata\":{\"generation\":3}}");
    assert_false(ctl_state_component_ready(c));
    json_object_put(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_state__condition_status_follows_state),
        cmocka_unit_test(test_ctl_state__transition_time_only_on_status_change),
        cmocka_unit_test(test_ctl_state__capitalise),
        cmocka_unit_test(test_ctl_state__jitter_between_one_and_five_percent),
        cmocka_unit_test(test_ctl_state__backoff_ramp),
        cmocka_unit_test(test_ctl_state__backoff_resets_on_activity_change_and_forget),
        cmocka_unit_test(test_ctl_state__component_ready),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
