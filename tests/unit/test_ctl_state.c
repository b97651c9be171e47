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

/* The parsed Component of @p text (a v1alpha1 object without apiVersion and kind). */
static co_component *component(const char *text)
{
    char *full = co_xasprintf("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":"
                              "\"Component\"%s%s",
                              text[1] == '}' ? "" : ",", text + 1);
    struct json_object *o = parse(full);
    co_component *c = NULL;
    assert_co_pass(co_component_parse(&c, o));
    json_object_put(o);
    free(full);
    return c;
}

static const co_condition *ready(const co_component_status *st)
{
    assert_int_equal(st->n_conditions, 1);
    assert_string_equal(st->conditions[0].type, "Ready");
    return &st->conditions[0];
}

#define T0 ((int64_t)1700000000 * CO_SECOND)

static void test_ctl_state__condition_status_follows_state(void **state)
{
    (void)state;
    co_component *c = component("{}");
    co_component_status *st = &c->status;
    ctl_state_set(st, CTL_STATE_READY, CTL_REASON_READY, CTL_MSG_READY, T0);
    assert_string_equal(ready(st)->status, "True");
    assert_string_equal(st->state, "Ready");
    assert_string_equal(ready(st)->reason, "Ready");
    ctl_state_set(st, CTL_STATE_ERROR, CTL_REASON_ERROR, "boom", T0);
    assert_string_equal(ready(st)->status, "False");
    ctl_state_set(st, CTL_STATE_PENDING, CTL_REASON_RETRYING, "x", T0);
    assert_string_equal(ready(st)->status, "Unknown");
    assert_string_equal(ready(st)->message, "x");
    ctl_state_set(st, CTL_STATE_PENDING, CTL_REASON_RETRYING, NULL, T0);
    assert_string_equal(ready(st)->message, "");
    /* what the JSON readers see of it */
    c->has_status = 1;
    struct json_object *o = NULL;
    assert_co_pass(co_component_to_json(&o, c));
    assert_string_equal(ctl_state_get(co_json_get(o, "status", NULL)), "Pending");
    assert_string_equal(ctl_state_reason(co_json_get(o, "status", NULL)), "Retrying");
    json_object_put(o);
    co_component_free(c);
}

static void test_ctl_state__transition_time_only_on_status_change(void **state)
{
    (void)state;
    co_component *c = component("{\"status\":{\"inventory\":[{\"name\":\"keep\"}],"
                                "\"conditions\":[{\"type\":\"Other\",\"status\":\"True\"},"
                                "{\"type\":\"Ready\",\"status\":\"Unknown\","
                                "\"lastTransitionTime\":\"2020-01-01T00:00:00Z\"}]}}");
    co_component_status *st = &c->status;
    ctl_state_set(st, CTL_STATE_PROCESSING, CTL_REASON_PROCESSING, CTL_MSG_PROCESSING, T0);
    assert_string_equal(ready(st)->last_transition_time, "2020-01-01T00:00:00Z");
    ctl_state_set(st, CTL_STATE_READY, CTL_REASON_READY, CTL_MSG_READY, T0);
    assert_string_equal(ready(st)->last_transition_time, "2023-11-14T22:13:20Z");
    /* fields of others survive */
    assert_int_equal(st->n_inventory, 1);
    co_component_free(c);
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

    co_component *t = component("{\"metadata\":{\"generation\":3},\"status\":"
                                "{\"observedGeneration\":3,\"state\":\"Ready\"}}");
    assert_true(ctl_state_ready(t));
    t->generation = 4;
    assert_false(ctl_state_ready(t));
    co_component_free(t);
    t = component("{\"metadata\":{\"generation\":3},\"status\":"
                  "{\"observedGeneration\":3,\"state\":\"Processing\"}}");
    assert_false(ctl_state_ready(t));
    co_component_free(t);
    t = component("{\"metadata\":{\"generation\":3}}");
    assert_false(ctl_state_ready(t));
    co_component_free(t);
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
