/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The controller's binding of the apply engine (controller/ctl_engine.c) against the real
 * kube-apiserver: dependent events go to the controller's recorder, unless the Component carries
 * the annotation component-operator.cs.sap.com/disable-events: "true" (docs/behaviour.md,
 * "Create, update and delete"), for successes (Created) and errors (UpdateError) alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_event.h"
#include "controller/ctl_engine.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define MAX_PASSES         30
#define ANN_DISABLE_EVENTS "component-operator.cs.sap.com/disable-events"

static co_kube_client *admin;

static int group_setup(void **state)
{
    (void)state;
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    co_kube_client_free(admin);
    return 0;
}

/* Events in @p ns about object @p name with @p reason. */
static size_t events_of(const char *ns, const char *name, const char *reason)
{
    struct json_object *list = NULL;
    co_kube_list_options lo = {0};
    char *sel = co_xasprintf("involvedObject.name=%s,reason=%s", name, reason);
    lo.field_selector = sel;
    assert_co_pass(co_kube_list(&list, admin, &(co_kube_ref){"v1", "Event", ns, NULL}, &lo));
    free(sel);
    size_t n = json_object_array_length(co_json_get(list, "items", NULL));
    json_object_put(list);
    return n;
}

/* Applies an immutable ConfigMap @p name through the engine binding for @p component until
 * done, then a changed version of it that the API server refuses. */
static void create_then_fail_update(const ctl_apply_ops *ops,
                                    const char *ns,
                                    const char *name,
                                    struct json_object *component)
{
    char *owner = co_xasprintf("test-cluster/%s/%s", ns, name);
    ctl_apply_call c = {0};
    c.target = admin;
    c.component = component;
    c.owner_id = owner;
    c.component_digest = "c1";
    c.namespace = ns;
    struct json_object *inv = json_object_new_array();
    bool done = false, changed = false;
    for (int i = 0; i < MAX_PASSES && !done; i++) {
        struct json_object *o =
            co_test_json("[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                         "\"%s\"},\"immutable\":true,\"data\":{\"k\":\"1\"}}]",
                         name);
        assert_co_pass(ops->apply(ops->ctx, &c, inv, o, &done, &changed));
        json_object_put(o);
    }
    assert_true(done);
    struct json_object *o =
        co_test_json("[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                     "\"%s\"},\"immutable\":true,\"data\":{\"k\":\"2\"}}]",
                     name);
    co_error_clear();
    assert_co_fail_with(CO_EINVALID, ops->apply(ops->ctx, &c, inv, o, &done, &changed));
    assert_contains(co_error_last(), "immutable");
    json_object_put(o);
    json_object_put(inv);
    free(owner);
}

static void test_ctl_engine__disable_events_suppresses_dependent_events(void **state)
{
    (void)state;
    char *ns = co_test_kube_namespace(admin, "co-engine-");
    co_kube_recorder *rec = NULL;
    co_kube_recorder_options ro = {0};
    ro.component = "component-operator.cs.sap.com";
    assert_co_pass(co_kube_recorder_new(&rec, admin, &ro));
    ctl_engine eng = {.events = rec};
    ctl_apply_ops ops = ctl_engine_ops(&eng);

    struct json_object *loud = co_test_json("{\"metadata\":{\"name\":\"loud\"}}");
    struct json_object *quiet =
        co_test_json("{\"metadata\":{\"name\":\"quiet\",\"annotations\":{\"%s\":\"true\"}}}",
                     ANN_DISABLE_EVENTS);
    create_then_fail_update(&ops, ns, "loud", loud);
    create_then_fail_update(&ops, ns, "quiet", quiet);
    assert_co_pass(co_kube_recorder_flush(rec, 30000));

    assert_true(events_of(ns, "loud", "Created") >= 1);
    assert_true(events_of(ns, "loud", "UpdateError") >= 1);
    assert_int_equal(events_of(ns, "quiet", "Created"), 0);
    assert_int_equal(events_of(ns, "quiet", "UpdateError"), 0);
    co_kube_recorder_stats st;
    co_kube_recorder_stats_get(&st, rec);
    assert_int_equal(st.failed, 0);

    co_kube_recorder_free(rec);
    json_object_put(quiet);
    json_object_put(loud);
    free(ns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_engine__disable_events_suppresses_dependent_events),
    };
    return cmocka_run_group_tests_name("ctl_engine_integration", tests, group_setup,
                                       group_teardown);
}
