/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the events forwarder (--events-address) against a loopback HTTP receiver: the
 * JSON payload of Flux's event/v1beta1 Event, the retry rules of Flux's recorder, the bounded
 * queue that never blocks the caller, and shutdown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/util/metrics.h"
#include "co/util/time.h"
#include "controller/ctl_notify.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_httpd.h"
#include "tests/support/test_support.h"

#define FLUSH_MS 30000L

typedef struct fixture {
    test_httpd *srv;
    char *url;
    co_metrics *reg;
    co_metric *results;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->srv = test_httpd_start();
    f->url = co_xasprintf("%s/hook/component", test_httpd_url(f->srv));
    test_httpd_route(f->srv, "/hook/component", 202, NULL, 0, NULL);
    f->reg = co_metrics_new();
    const char *labels[] = {"result"};
    f->results = co_metrics_counter(f->reg, "notifications_total", "", labels, 1);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    test_httpd_stop(f->srv);
    co_metrics_free(f->reg);
    free(f->url);
    free(f);
    return 0;
}

static ctl_notify *start(fixture *f, size_t queue_len, int retries)
{
    ctl_notify_options o = {0};
    o.address = f->url;
    o.reporting_controller = "component-operator.cs.sap.com";
    o.reporting_instance = "component-controller-7d9f";
    o.queue_len = queue_len;
    o.retries = retries;
    o.backoff_ms = 10;
    o.backoff_max_ms = 40;
    o.results = f->results;
    ctl_notify *n = NULL;
    assert_co_pass(ctl_notify_new(&n, &o));
    return n;
}

static struct json_object *component(void)
{
    return co_test_json(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\","
        "\"metadata\":{\"name\":\"app\",\"namespace\":\"team\",\"uid\":\"u-1\","
        "\"resourceVersion\":\"42\",\"annotations\":{\"event.toolkit.fluxcd.io/env\":\"prod\","
        "\"other.example/x\":\"y\"}},\"spec\":{}}");
}

static double result(fixture *f, const char *name)
{
    const char *lv[] = {name};
    return co_metric_value(f->results, lv);
}

static struct json_object *received(fixture *f, int i, char **content_type)
{
    char *body = test_httpd_body(f->srv, "/hook/component", i, content_type);
    assert_non_null(body);
    struct json_object *ev = NULL;
    assert_co_pass(co_json_parse(&ev, body, strlen(body)));
    free(body);
    return ev;
}

static const char *str(struct json_object *obj, const char *a, const char *b)
{
    struct json_object *v = b ? co_json_get(obj, a, b, NULL) : co_json_get(obj, a, NULL);
    return v ? json_object_get_string(v) : NULL;
}

static void test_ctl_notify__posts_a_flux_event(void **state)
{
    fixture *f = *state;
    ctl_notify *n = start(f, 0, 0);
    struct json_object *c = component();
    const char *md[] = {"core.cs.sap.com/revision", "v1.2.0", "core.cs.sap.com/token",
                        "u-1:0123abcd", NULL};
    int64_t before = co_time_now() / 1000000000 * 1000000000;
    ctl_notify_event(n, c, "Warning", "Error", "Error applying <objects> & more", md);
    ctl_notify_event(n, c, "Normal", "Ready", "Ready", NULL);
    assert_co_pass(ctl_notify_flush(n, FLUSH_MS));
    int64_t after = co_time_now();
    assert_int_equal(test_httpd_hits_method(f->srv, "/hook/component", "POST"), 2);

    char *ct = NULL;
    struct json_object *ev = received(f, 0, &ct);
    assert_string_equal(ct, "application/json");
    free(ct);
    struct json_object *ref = co_json_get(ev, "involvedObject", NULL);
    assert_int_equal(json_object_object_length(ref), 6);
    assert_string_equal(str(ref, "kind", NULL), "Component");
    assert_string_equal(str(ref, "apiVersion", NULL), "core.cs.sap.com/v1alpha1");
    assert_string_equal(str(ref, "namespace", NULL), "team");
    assert_string_equal(str(ref, "name", NULL), "app");
    assert_string_equal(str(ref, "uid", NULL), "u-1");
    assert_string_equal(str(ref, "resourceVersion", NULL), "42");
    assert_string_equal(str(ev, "severity", NULL), "error");
    assert_string_equal(str(ev, "reason", NULL), "Error");
    assert_string_equal(str(ev, "message", NULL), "Error applying <objects> & more");
    assert_string_equal(str(ev, "reportingController", NULL), "component-operator.cs.sap.com");
    assert_string_equal(str(ev, "reportingInstance", NULL), "component-controller-7d9f");
    /* metav1.Time: seconds, UTC */
    const char *ts = str(ev, "timestamp", NULL);
    assert_int_equal(strlen(ts), 20);
    assert_true(ts[19] == 'Z');
    int64_t t = 0;
    assert_co_pass(co_time_parse(&t, ts));
    assert_true(t >= before && t <= after);
    /* the caller's pairs and the object's annotations of Flux's event group, nothing else */
    struct json_object *meta = co_json_get(ev, "metadata", NULL);
    assert_int_equal(json_object_object_length(meta), 3);
    assert_string_equal(str(meta, "core.cs.sap.com/revision", NULL), "v1.2.0");
    assert_string_equal(str(meta, "core.cs.sap.com/token", NULL), "u-1:0123abcd");
    assert_string_equal(str(meta, "event.toolkit.fluxcd.io/env", NULL), "prod");
    assert_int_equal(json_object_object_length(ev), 8);
    json_object_put(ev);

    ev = received(f, 1, NULL);
    assert_string_equal(str(ev, "severity", NULL), "info");
    assert_string_equal(str(ev, "reason", NULL), "Ready");
    assert_int_equal(json_object_object_length(co_json_get(ev, "metadata", NULL)), 1);
    json_object_put(ev);

    /* without metadata of any kind, the member is left out (omitempty) */
    json_object_object_del(co_json_get(c, "metadata", NULL), "annotations");
    ctl_notify_event(n, c, "Normal", "Ready", "Ready", NULL);
    assert_co_pass(ctl_notify_flush(n, FLUSH_MS));
    ev = received(f, 2, NULL);
    assert_null(co_json_get(ev, "metadata", NULL));
    json_object_put(ev);

    ctl_notify_stats st;
    ctl_notify_stats_get(&st, n);
    assert_int_equal(st.sent, 3);
    assert_true(result(f, "sent") == 3.0);
    json_object_put(c);
    ctl_notify_free(n);
}

/* Connection failures and 5xx are retried; the event then arrives once. */
static void test_ctl_notify__retries_server_errors(void **state)
{
    fixture *f = *state;
    ctl_notify *n = start(f, 0, 0);
    test_httpd_fail_next(f->srv, "/hook/component", 3); /* 503, 503, 503, then 202 */
    struct json_object *c = component();
    ctl_notify_event(n, c, "Normal", "Ready", "Ready", NULL);
    assert_co_pass(ctl_notify_flush(n, FLUSH_MS));
    assert_int_equal(test_httpd_hits(f->srv, "/hook/component"), 4);
    ctl_notify_stats st;
    ctl_notify_stats_get(&st, n);
    assert_int_equal(st.sent, 1);
    assert_int_equal(st.failed, 0);

    /* four retries at most: five attempts, then the event is given up */
    test_httpd_route(f->srv, "/hook/component", 500, NULL, 0, NULL);
    ctl_notify_event(n, c, "Normal", "Ready", "again", NULL);
    assert_co_pass(ctl_notify_flush(n, FLUSH_MS));
    assert_int_equal(test_httpd_hits(f->srv, "/hook/component"), 4 + 5);
    ctl_notify_stats_get(&st, n);
    assert_int_equal(st.failed, 1);
    assert_true(result(f, "failed") == 1.0);
    json_object_put(c);
    ctl_notify_free(n);

    /* nobody listening: retried, then failed */
    ctl_notify_options o = {0};
    o.address = "http://127.0.0.1:1/hook";
    o.reporting_controller = "c";
    o.retries = 2;
    o.backoff_ms = 5;
    ctl_notify *m = NULL;
    assert_co_pass(ctl_notify_new(&m, &o));
    c = component();
    ctl_notify_event(m, c, "Normal", "Ready", "Ready", NULL);
    assert_co_pass(ctl_notify_flush(m, FLUSH_MS));
    ctl_notify_stats_get(&st, m);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.sent, 0);
    json_object_put(c);
    ctl_notify_free(m);
}

/* 429 is the notification-controller's answer to a duplicate; it and other answers outside
 * 2xx and the retried 5xx end the delivery after one attempt. */
static void test_ctl_notify__duplicates_and_client_errors_are_not_retried(void **state)
{
    fixture *f = *state;
    ctl_notify *n = start(f, 0, 0);
    struct json_object *c = component();
    const int statuses[] = {429, 400, 404, 501, 302};
    for (size_t i = 0; i < CO_ARRAY_SIZE(statuses); i++) {
        test_httpd_route(f->srv, "/hook/component", statuses[i], NULL, 0,
                         statuses[i] == 302 ? "Location: /elsewhere" : NULL);
        ctl_notify_event(n, c, "Normal", "Ready", "Ready", NULL);
        assert_co_pass(ctl_notify_flush(n, FLUSH_MS));
        assert_int_equal(test_httpd_hits(f->srv, "/hook/component"), (int)i + 1);
    }
    assert_int_equal(test_httpd_hits(f->srv, "/elsewhere"), 0);
    ctl_notify_stats st;
    ctl_notify_stats_get(&st, n);
    assert_int_equal(st.rejected, CO_ARRAY_SIZE(statuses));
    assert_int_equal(st.sent + st.failed, 0);
    assert_true(result(f, "rejected") == (double)CO_ARRAY_SIZE(statuses));
    json_object_put(c);
    ctl_notify_free(n);
}

/* A slow receiver never holds up the caller: what does not fit the queue is dropped. */
static void test_ctl_notify__full_queue_drops_instead_of_blocking(void **state)
{
    fixture *f = *state;
    test_httpd_delay(f->srv, "/hook/component", 1000);
    ctl_notify *n = start(f, 2, 0);
    struct json_object *c = component();
    for (int i = 0; i < 10; i++) {
        ctl_notify_event(n, c, "Normal", "Ready", "Ready", NULL);
    }
    ctl_notify_stats st;
    ctl_notify_stats_get(&st, n);
    /* at most one in flight and two queued */
    assert_true(st.dropped >= 7);
    assert_co_pass(ctl_notify_flush(n, FLUSH_MS));
    ctl_notify_stats_get(&st, n);
    assert_int_equal(st.sent + st.dropped, 10);
    assert_int_equal(test_httpd_hits(f->srv, "/hook/component"), (int)st.sent);
    assert_true(result(f, "dropped") == (double)st.dropped);
    json_object_put(c);
    ctl_notify_free(n);
}

/* Shutdown does not wait out a backoff: the event in flight is given up. */
static void test_ctl_notify__free_stops_a_retrying_sender(void **state)
{
    fixture *f = *state;
    test_httpd_route(f->srv, "/hook/component", 503, NULL, 0, NULL);
    ctl_notify_options o = {0};
    o.address = f->url;
    o.reporting_controller = "c";
    o.backoff_ms = 3600L * 1000;
    o.backoff_max_ms = 3600L * 1000;
    o.results = f->results;
    ctl_notify *n = NULL;
    assert_co_pass(ctl_notify_new(&n, &o));
    struct json_object *c = component();
    ctl_notify_event(n, c, "Normal", "Ready", "Ready", NULL);
    ctl_notify_event(n, c, "Normal", "Ready", "queued behind it", NULL);
    assert_co_fail_with(CO_ETIMEOUT, ctl_notify_flush(n, 200));
    ctl_notify_free(n);
    assert_true(result(f, "failed") == 1.0);
    assert_true(result(f, "dropped") == 1.0);
    assert_int_equal(test_httpd_hits(f->srv, "/hook/component"), 1);
    json_object_put(c);
}

static void test_ctl_notify__bad_addresses_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {"", "ftp://host/x", "http://", "notification-controller", "http://a b/"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(bad); i++) {
        ctl_notify_options o = {0};
        o.address = bad[i];
        o.reporting_controller = "c";
        ctl_notify *n = NULL;
        assert_co_fail_with(CO_EINVALID, ctl_notify_new(&n, &o));
        assert_contains(co_error_last(), "events address");
        assert_null(n);
    }
}

/* Long messages are cut to the 39000 bytes Flux's Event accepts, never inside a character;
 * objects that cannot be referenced completely are not sent. */
static void test_ctl_notify__long_messages_and_incomplete_objects(void **state)
{
    fixture *f = *state;
    ctl_notify *n = start(f, 0, 0);
    struct json_object *c = component();
    char *msg = co_xmalloc(40000 + 1);
    memset(msg, 'a', 38999);
    static const char tail[] = "\xc3\xa9 tail"; /* an e-acute across the limit */
    memcpy(msg + 38999, tail, sizeof(tail));
    ctl_notify_event(n, c, "Warning", "Error", msg, NULL);
    free(msg);
    struct json_object *anon =
        co_test_json("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\","
                     "\"kind\":\"Component\",\"metadata\":{\"name\":\"x\"}}");
    ctl_notify_event(n, anon, "Normal", "Ready", "Ready", NULL);
    assert_co_pass(ctl_notify_flush(n, FLUSH_MS));
    struct json_object *ev = received(f, 0, NULL);
    const char *m = str(ev, "message", NULL);
    assert_int_equal(strlen(m), 38999);
    json_object_put(ev);
    assert_int_equal(test_httpd_hits(f->srv, "/hook/component"), 1);
    ctl_notify_stats st;
    ctl_notify_stats_get(&st, n);
    assert_int_equal(st.failed, 1);
    json_object_put(anon);
    json_object_put(c);
    ctl_notify_free(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ctl_notify__posts_a_flux_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ctl_notify__retries_server_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_ctl_notify__duplicates_and_client_errors_are_not_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ctl_notify__full_queue_drops_instead_of_blocking,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_ctl_notify__free_stops_a_retrying_sender, setup,
                                        teardown),
        cmocka_unit_test(test_ctl_notify__bad_addresses_are_refused),
        cmocka_unit_test_setup_teardown(test_ctl_notify__long_messages_and_incomplete_objects,
                                        setup, teardown),
    };
    return cmocka_run_group_tests_name("ctl_notify", tests, NULL, NULL);
}
