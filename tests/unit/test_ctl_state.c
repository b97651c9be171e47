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

/* The Degraded condition lives beside Ready: ctl_state_set() keeps it (after Ready) and drops
 * any other; it keeps its lastTransitionTime while its value stays and goes when removed. */
static void test_ctl_state__degraded_condition_kept_beside_ready(void **state)
{
    (void)state;
    co_component *c = component("{\"status\":{\"conditions\":[{\"type\":\"Other\","
                                "\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"True\"}]}}");
    co_component_status *st = &c->status;
    ctl_condition_put(st, CTL_CONDITION_DEGRADED, "True", CTL_REASON_DEGRADED, "1 of 2", T0);
    ctl_state_set(st, CTL_STATE_WARNING, CTL_REASON_DEGRADED, "1 of 2", T0);
    assert_int_equal(st->n_conditions, 2);
    assert_string_equal(st->conditions[0].type, "Ready");
    assert_string_equal(st->conditions[0].status, "True");
    assert_string_equal(st->conditions[1].type, "Degraded");
    assert_string_equal(st->conditions[1].reason, "Degraded");
    assert_string_equal(st->state, "Warning");
    /* Down later: the value stays True, so does the transition time; the reason follows */
    ctl_condition_put(st, CTL_CONDITION_DEGRADED, "True", CTL_REASON_DOWN, "2 of 2",
                      T0 + 60 * CO_SECOND);
    const co_condition *d = ctl_condition_find(st, CTL_CONDITION_DEGRADED);
    assert_non_null(d);
    assert_string_equal(d->reason, "Down");
    assert_string_equal(d->message, "2 of 2");
    assert_string_equal(d->last_transition_time, "2023-11-14T22:13:20Z");
    ctl_state_set(st, CTL_STATE_ERROR, CTL_REASON_DOWN, "2 of 2", T0 + 60 * CO_SECOND);
    assert_string_equal(st->conditions[0].status, "False");
    assert_int_equal(st->n_conditions, 2);
    ctl_condition_remove(st, CTL_CONDITION_DEGRADED);
    ctl_condition_remove(st, CTL_CONDITION_DEGRADED);
    assert_null(ctl_condition_find(st, CTL_CONDITION_DEGRADED));
    ctl_state_set(st, CTL_STATE_READY, CTL_REASON_READY, CTL_MSG_READY, T0 + 120 * CO_SECOND);
    assert_int_equal(st->n_conditions, 1);
    assert_string_equal(ready(st)->last_transition_time, "2023-11-14T22:15:20Z");
    co_component_free(c);
}

/* docs/drift.md, "Reporting": the Drifted condition is kept beside Ready (and Degraded) in
 * the order it came; others still go. */
static void test_ctl_state__drifted_condition_kept_beside_ready(void **state)
{
    (void)state;
    co_component *c = component("{\"status\":{\"conditions\":[{\"type\":\"Other\","
                                "\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"True\"}]}}");
    co_component_status *st = &c->status;
    ctl_condition_put(st, CTL_CONDITION_DRIFTED, "True", CTL_REASON_DRIFTED,
                      "ConfigMap n/a: /data/k", T0);
    ctl_state_set(st, CTL_STATE_READY, CTL_REASON_READY, CTL_MSG_READY, T0);
    assert_int_equal(st->n_conditions, 2);
    assert_string_equal(st->conditions[0].type, "Ready");
    assert_string_equal(st->conditions[1].type, "Drifted");
    assert_string_equal(st->conditions[1].message, "ConfigMap n/a: /data/k");
    ctl_condition_put(st, CTL_CONDITION_DEGRADED, "True", CTL_REASON_DEGRADED, "1 of 2", T0);
    ctl_state_set(st, CTL_STATE_WARNING, CTL_REASON_DEGRADED, "1 of 2", T0);
    assert_int_equal(st->n_conditions, 3);
    assert_string_equal(st->conditions[1].type, "Drifted");
    assert_string_equal(st->conditions[2].type, "Degraded");
    ctl_condition_remove(st, CTL_CONDITION_DRIFTED);
    ctl_state_set(st, CTL_STATE_WARNING, CTL_REASON_DEGRADED, "1 of 2", T0);
    assert_int_equal(st->n_conditions, 2);
    assert_null(ctl_condition_find(st, CTL_CONDITION_DRIFTED));
    co_component_free(c);
}

/* docs/lifecycle.md, "One reason, chosen by priority". */
static void test_ctl_state__reason_priority_table(void **state)
{
    (void)state;
    const char *failure[] = {"Error",      "Timeout",  "Retrying",        "DeletionRetrying",
                             "Down",       "Degraded", "DependencyCycle", "PolicyViolation",
                             "InvalidSpec"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(failure); i++) {
        assert_int_equal(ctl_reason_priority(failure[i]), CTL_TIER_FAILURE);
    }
    assert_int_equal(ctl_reason_priority("Suspended"), CTL_TIER_SUSPENSION);
    assert_int_equal(ctl_reason_priority("PendingSuspension"), CTL_TIER_SUSPENSION);
    assert_int_equal(ctl_reason_priority("Suspending"), CTL_TIER_SUSPENSION);
    assert_int_equal(ctl_reason_priority("Disabled"), CTL_TIER_DISABLED);
    assert_int_equal(ctl_reason_priority("Unmanaged"), CTL_TIER_DISABLED);
    assert_int_equal(ctl_reason_priority("Blocked"), CTL_TIER_PRECONDITION);
    assert_int_equal(ctl_reason_priority("PrerequisiteNotMet"), CTL_TIER_PRECONDITION);
    assert_int_equal(ctl_reason_priority("Processing"), CTL_TIER_PROGRESS);
    assert_int_equal(ctl_reason_priority("FirstSeen"), CTL_TIER_PROGRESS);
    assert_int_equal(ctl_reason_priority("DeletionProcessing"), CTL_TIER_PROGRESS);
    assert_int_equal(ctl_reason_priority("SomethingNew"), CTL_TIER_PROGRESS);
    assert_int_equal(ctl_reason_priority(NULL), CTL_TIER_PROGRESS);
    assert_int_equal(ctl_reason_priority("PolicyWarning"), CTL_TIER_ATTENTION);
    assert_int_equal(ctl_reason_priority("AuxiliaryUnready"), CTL_TIER_ATTENTION);
    assert_int_equal(ctl_reason_priority("Ready"), CTL_TIER_READY);
    /* case matters: reasons are identifiers */
    assert_int_equal(ctl_reason_priority("ready"), CTL_TIER_PROGRESS);
}

static void test_ctl_state__candidate_pick(void **state)
{
    (void)state;
    /* Degraded over suspension */
    ctl_candidate a[] = {{"Pending", "Suspended", "s"}, {"Warning", "Degraded", "d"}};
    assert_int_equal(ctl_candidate_pick(a, 2), 1);
    /* suspension over Disabled over PrerequisiteNotMet over Processing over warnings over Ready */
    ctl_candidate b[] = {{"Ready", "Ready", ""},           {"Warning", "PolicyWarning", ""},
                         {"Processing", "Processing", ""}, {"Pending", "PrerequisiteNotMet", ""},
                         {"Ready", "Disabled", ""},        {"Pending", "Suspended", ""}};
    assert_int_equal(ctl_candidate_pick(b, 6), 5);
    assert_int_equal(ctl_candidate_pick(b, 5), 4);
    assert_int_equal(ctl_candidate_pick(b, 4), 3);
    assert_int_equal(ctl_candidate_pick(b, 3), 2);
    assert_int_equal(ctl_candidate_pick(b, 2), 1);
    assert_int_equal(ctl_candidate_pick(b, 1), 0);
    /* equal tiers: the first (the pass's own outcome) wins */
    ctl_candidate c[] = {{"Pending", "Retrying", "r"}, {"Error", "Down", "d"}};
    assert_int_equal(ctl_candidate_pick(c, 2), 0);
    ctl_candidate d[] = {{"Error", "Down", "d"}, {"Pending", "Retrying", "r"}};
    assert_int_equal(ctl_candidate_pick(d, 2), 0);
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
        cmocka_unit_test(test_ctl_state__degraded_condition_kept_beside_ready),
        cmocka_unit_test(test_ctl_state__drifted_condition_kept_beside_ready),
        cmocka_unit_test(test_ctl_state__reason_priority_table),
        cmocka_unit_test(test_ctl_state__candidate_pick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
