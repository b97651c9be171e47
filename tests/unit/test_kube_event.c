/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the event recorder over the fake transport: the Event written, repeats
 * counted by patching instead of created again, expiry of the remembered Event, cluster-scoped
 * objects, and refused input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_event.h"
#include "co/util/time.h"
#include "shared/src/kube/kube_int.h"
#include "tests/support/fake_kube.h"
#include "tests/support/test_support.h"

static const char involved_json[] =
    "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"metadata\":{\"name\":"
    "\"comp\",\"namespace\":\"ns1\",\"uid\":\"u-1\",\"resourceVersion\":\"42\"}}";

typedef struct fixture {
    co_fake_kube *f;
    co_kube_client *c;
    co_kube_recorder *rec;
    struct json_object *involved;
} fixture;

static int setup(void **state)
{
    fixture *fx = co_xcalloc(1, sizeof(*fx));
    fx->f = co_fake_kube_new();
    co_fake_kube_discovery(fx->f);
    co_fake_kube_json(fx->f, "POST", "/api/v1/namespaces/", 201, "{\"kind\":\"Event\"}");
    co_fake_kube_json(fx->f, "PATCH", "/api/v1/namespaces/", 200, "{\"kind\":\"Event\"}");
    fx->c = co_fake_kube_client(fx->f);
    co_kube_recorder_options o = {.component = "component-controller", .instance = "pod-1"};
    assert_co_pass(co_kube_recorder_new(&fx->rec, fx->c, &o));
    fx->involved = json_tokener_parse(involved_json);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    co_kube_recorder_free(fx->rec);
    co_kube_client_free(fx->c);
    co_fake_kube_free(fx->f);
    json_object_put(fx->involved);
    free(fx);
    return 0;
}

static co_fake_call last_call(co_fake_kube *f)
{
    return co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
}

static void test_kube_event__creates_an_event(void **state)
{
    fixture *fx = *state;
    co_kube_event(fx->rec, fx->involved, "Warning", "ApplyFailed", "applying %d objects: %s", 3,
                  "denied");
    assert_co_pass(co_kube_recorder_flush(fx->rec, 30000));
    co_fake_call call = last_call(fx->f);
    assert_string_equal(call.method, "POST");
    assert_string_equal(call.path, "/api/v1/namespaces/ns1/events");
    struct json_object *ev = json_tokener_parse(call.body);
    assert_non_null(ev);
    assert_string_equal(co_json_str(ev, "kind", NULL), "Event");
    assert_string_equal(co_json_str(ev, "type", NULL), "Warning");
    assert_string_equal(co_json_str(ev, "reason", NULL), "ApplyFailed");
    assert_string_equal(co_json_str(ev, "message", NULL), "applying 3 objects: denied");
    assert_string_equal(co_json_meta_namespace(ev), "ns1");
    assert_true(strncmp(co_json_meta_name(ev), "comp.", 5) == 0);
    struct json_object *ref = co_kube__obj(ev, "involvedObject");
    assert_string_equal(co_json_str(ref, "kind", NULL), "Component");
    assert_string_equal(co_json_str(ref, "apiVersion", NULL), "core.cs.sap.com/v1alpha1");
    assert_string_equal(co_json_str(ref, "uid", NULL), "u-1");
    assert_string_equal(co_json_str(ref, "resourceVersion", NULL), "42");
    assert_string_equal(co_json_str(ev, "source", "component", NULL), "component-controller");
    assert_string_equal(co_json_str(ev, "source", "host", NULL), "pod-1");
    assert_string_equal(co_json_str(ev, "reportingComponent", NULL), "component-controller");
    int64_t t = 0;
    assert_co_pass(co_time_parse(&t, co_json_str(ev, "firstTimestamp", NULL)));
    json_object_put(ev);
    co_fake_call_dispose(&call);
    co_kube_recorder_stats st;
    co_kube_recorder_stats_get(&st, fx->rec);
    assert_int_equal(st.created, 1);
}

static void test_kube_event__annotations_are_written(void **state)
{
    fixture *fx = *state;
    const char *ann[] = {"core.cs.sap.com/revision", "v1", "core.cs.sap.com/token", "u-1:ab", NULL};
    co_kube_event_annotated(fx->rec, fx->involved, ann, "Normal", "Ready", "%s", "Ready");
    assert_co_pass(co_kube_recorder_flush(fx->rec, 30000));
    co_fake_call call = last_call(fx->f);
    assert_string_equal(call.method, "POST");
    struct json_object *ev = json_tokener_parse(call.body);
    assert_non_null(ev);
    struct json_object *a = co_kube__obj(co_kube__obj(ev, "metadata"), "annotations");
    assert_non_null(a);
    assert_int_equal(json_object_object_length(a), 2);
    assert_string_equal(co_json_str(a, "core.cs.sap.com/revision", NULL), "v1");
    assert_string_equal(co_json_str(a, "core.cs.sap.com/token", NULL), "u-1:ab");
    json_object_put(ev);
    co_fake_call_dispose(&call);
    /* without annotations there is no annotations member */
    co_kube_event(fx->rec, fx->involved, "Normal", "Other", "plain");
    assert_co_pass(co_kube_recorder_flush(fx->rec, 30000));
    call = last_call(fx->f);
    ev = json_tokener_parse(call.body);
    assert_null(co_kube__obj(co_kube__obj(ev, "metadata"), "annotations"));
    json_object_put(ev);
    co_fake_call_dispose(&call);
}

static void test_kube_event__repeats_are_counted(void **state)
{
    fixture *fx = *state;
    co_kube_event(fx->rec, fx->involved, "Normal", "Reconciled", "all good");
    co_kube_event(fx->rec, fx->involved, "Normal", "Reconciled", "all good");
    co_kube_event(fx->rec, fx->involved, "Normal", "Reconciled", "all good");
    assert_co_pass(co_kube_recorder_flush(fx->rec, 30000));
    assert_int_equal(co_fake_kube_count(fx->f, "POST", "/events"), 1);
    assert_int_equal(co_fake_kube_count(fx->f, "PATCH", "/events/comp."), 2);
    co_fake_call call = last_call(fx->f);
    assert_contains(call.headers, "Content-Type: application/merge-patch+json");
    assert_contains(call.body, "\"count\":3");
    assert_contains(call.body, "\"lastTimestamp\"");
    co_fake_call_dispose(&call);
    /* a different message is a different event */
    co_kube_event(fx->rec, fx->involved, "Normal", "Reconciled", "all good again");
    assert_co_pass(co_kube_recorder_flush(fx->rec, 30000));
    assert_int_equal(co_fake_kube_count(fx->f, "POST", "/events"), 2);
    co_kube_recorder_stats st;
    co_kube_recorder_stats_get(&st, fx->rec);
    assert_int_equal(st.created, 2);
    assert_int_equal(st.counted, 2);
}

static void test_kube_event__expired_event_is_created_again(void **state)
{
    fixture *fx = *state;
    co_kube_event(fx->rec, fx->involved, "Normal", "Reconciled", "same");
    assert_co_pass(co_kube_recorder_flush(fx->rec, 30000));
    /* the API server dropped the Event (its TTL passed): the patch finds nothing */
    co_fake_answer gone = {.status = 404,
                           .body = "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}"};
    co_fake_kube_once(fx->f, "PATCH", "/api/v1/namespaces/ns1/events/", &gone);
    co_kube_event(fx->rec, fx->involved, "Normal", "Reconciled", "same");
    assert_co_pass(co_kube_recorder_flush(fx->rec, 30000));
    assert_int_equal(co_fake_kube_count(fx->f, "POST", "/events"), 2);
    co_kube_recorder_stats st;
    co_kube_recorder_stats_get(&st, fx->rec);
    assert_int_equal(st.failed, 0);
}

static void test_kube_event__cluster_scoped_objects_use_default(void **state)
{
    fixture *fx = *state;
    struct json_object *ns = json_tokener_parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team-a\"}}");
    co_kube_event(fx->rec, ns, "Normal", "Created", "namespace created");
    assert_co_pass(co_kube_recorder_flush(fx->rec, 30000));
    co_fake_call call = last_call(fx->f);
    assert_string_equal(call.path, "/api/v1/namespaces/default/events");
    co_fake_call_dispose(&call);
    json_object_put(ns);
}

static void test_kube_event__failures_are_counted(void **state)
{
    fixture *fx = *state;
    struct json_object *nameless = json_tokener_parse("{\"kind\":\"Thing\",\"metadata\":{}}");
    co_kube_event(fx->rec, nameless, "Normal", "X", "no name");
    json_object_put(nameless);
    co_fake_kube_json(fx->f, "POST", "/api/v1/namespaces/ns1/events", 403,
                      "{\"kind\":\"Status\",\"code\":403,\"reason\":\"Forbidden\"}");
    co_kube_event(fx->rec, fx->involved, "Normal", "X", "refused");
    assert_co_pass(co_kube_recorder_flush(fx->rec, 30000));
    co_kube_recorder_stats st;
    co_kube_recorder_stats_get(&st, fx->rec);
    assert_int_equal(st.failed, 2);
    assert_int_equal(st.created, 0);
    /* long messages are cut */
    char big[3000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    co_fake_kube_json(fx->f, "POST", "/api/v1/namespaces/ns1/events", 201, "{}");
    co_kube_event(fx->rec, fx->involved, "Normal", "Big", "%s", big);
    assert_co_pass(co_kube_recorder_flush(fx->rec, 30000));
    co_fake_call call = last_call(fx->f);
    struct json_object *ev = json_tokener_parse(call.body);
    assert_int_equal(strlen(co_json_str(ev, "message", NULL)), 1024);
    json_object_put(ev);
    co_fake_call_dispose(&call);
}

static void test_kube_event__options_are_checked(void **state)
{
    fixture *fx = *state;
    co_kube_recorder *rec = NULL;
    co_kube_recorder_options o = {0};
    assert_co_fail_with(CO_EINVALID, co_kube_recorder_new(&rec, fx->c, &o));
    assert_co_fail_with(CO_EINVALID, co_kube_recorder_new(&rec, fx->c, NULL));
    co_kube_recorder_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kube_event__creates_an_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_event__annotations_are_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_event__repeats_are_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_event__expired_event_is_created_again, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_event__cluster_scoped_objects_use_default, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_event__failures_are_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_event__options_are_checked, setup, teardown),
    };
    return cmocka_run_group_tests_name("kube_event", tests, NULL, NULL);
}
