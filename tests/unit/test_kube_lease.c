/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for Lease leader election over the fake transport: creating a missing Lease,
 * respecting a live holder, taking over an expired or released one, losing a race, releasing,
 * and the elector's start/renew/lose/stop cycle with its callbacks.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_lease.h"
#include "co/util/time.h"
#include "shared/src/kube/kube_int.h"
#include "tests/support/fake_kube.h"
#include "tests/support/test_support.h"

#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/ns1/leases"
#define LEASE(rv, holder_field, transitions)                                                       \
    "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":"        \
    "\"lock\",\"namespace\":\"ns1\",\"resourceVersion\":\"" rv "\"},\"spec\":{" holder_field       \
    "\"leaseDurationSeconds\":1,\"acquireTime\":\"2024-01-01T00:00:00.000000Z\","                  \
    "\"renewTime\":\"2024-01-01T00:00:00.000000Z\",\"leaseTransitions\":" transitions "}}"

typedef struct fixture {
    co_fake_kube *f;
    co_kube_client *c;
    co_kube_leader *le;
    pthread_mutex_t lock;
    int started, stopped;
    char new_leader[64];
} fixture;

static void started(void *payload)
{
    fixture *fx = payload;
    pthread_mutex_lock(&fx->lock);
    fx->started++;
    pthread_mutex_unlock(&fx->lock);
}

static void stopped(void *payload)
{
    fixture *fx = payload;
    pthread_mutex_lock(&fx->lock);
    fx->stopped++;
    pthread_mutex_unlock(&fx->lock);
}

static void new_leader(const char *identity, void *payload)
{
    fixture *fx = payload;
    pthread_mutex_lock(&fx->lock);
    snprintf(fx->new_leader, sizeof(fx->new_leader), "%s", identity);
    pthread_mutex_unlock(&fx->lock);
}

static int setup(void **state)
{
    fixture *fx = co_xcalloc(1, sizeof(*fx));
    pthread_mutex_init(&fx->lock, NULL);
    fx->f = co_fake_kube_new();
    co_fake_kube_discovery(fx->f);
    fx->c = co_fake_kube_client(fx->f);
    co_kube_leader_options o = {.namespace = "ns1",
                                .name = "lock",
                                .identity = "me",
                                .lease_duration_ms = 1000,
                                .renew_deadline_ms = 600,
                                .retry_period_ms = 100,
                                .on_started_leading = started,
                                .on_stopped_leading = stopped,
                                .on_new_leader = new_leader,
                                .payload = fx};
    assert_co_pass(co_kube_leader_new(&fx->le, fx->c, &o));
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    co_kube_leader_free(fx->le);
    co_kube_client_free(fx->c);
    co_fake_kube_free(fx->f);
    pthread_mutex_destroy(&fx->lock);
    free(fx);
    return 0;
}

static struct json_object *last_body(co_fake_kube *f, const char *method)
{
    for (size_t i = co_fake_kube_ncalls(f); i > 0; i--) {
        co_fake_call call = co_fake_kube_call(f, i - 1);
        if (strcmp(call.method, method) == 0) {
            struct json_object *o = json_tokener_parse(call.body);
            co_fake_call_dispose(&call);
            assert_non_null(o);
            return o;
        }
        co_fake_call_dispose(&call);
    }
    fail_msg("no %s request", method);
    return NULL;
}

static int spec_int(struct json_object *lease, const char *key)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(co_kube__obj(lease, "spec"), key, &v)) {
        return -1;
    }
    return json_object_get_int(v);
}

static const char *spec_str(struct json_object *lease, const char *key)
{
    return co_json_str(lease, "spec", key, NULL);
}

static void test_kube_lease__options_are_checked(void **state)
{
    fixture *fx = *state;
    co_kube_leader *le = NULL;
    co_kube_leader_options o = {.namespace = "ns1", .name = "lock"};
    assert_co_fail_with(CO_EINVALID, co_kube_leader_new(&le, fx->c, &o));
    o.identity = "x";
    o.lease_duration_ms = 1000;
    o.renew_deadline_ms = 1000;
    assert_co_fail_with(CO_EINVALID, co_kube_leader_new(&le, fx->c, &o));
    assert_contains(co_error_last(), "lease duration");
    o.renew_deadline_ms = 500;
    o.retry_period_ms = 450;
    assert_co_fail_with(CO_EINVALID, co_kube_leader_new(&le, fx->c, &o));
}

static void test_kube_lease__creates_a_missing_lease(void **state)
{
    fixture *fx = *state;
    co_fake_kube_json(fx->f, "POST", LEASE_PATH, 201,
                      LEASE("1", "\"holderIdentity\":\"me\",", "0"));
    int acquired = 0;
    assert_co_pass(co_kube_leader_try(&acquired, fx->le));
    assert_true(acquired);
    struct json_object *body = last_body(fx->f, "POST");
    assert_string_equal(spec_str(body, "holderIdentity"), "me");
    assert_int_equal(spec_int(body, "leaseDurationSeconds"), 1);
    assert_int_equal(spec_int(body, "leaseTransitions"), 0);
    int64_t us = 0;
    assert_co_pass(co_time_parse(&us, spec_str(body, "renewTime")));
    assert_co_pass(co_time_parse(&us, spec_str(body, "acquireTime")));
    json_object_put(body);
    assert_string_equal(co_kube_leader_holder(fx->le), "me");
    assert_string_equal(fx->new_leader, "me");
}

static void test_kube_lease__losing_the_create_race(void **state)
{
    fixture *fx = *state;
    co_fake_kube_json(fx->f, "POST", LEASE_PATH, 409,
                      "{\"kind\":\"Status\",\"code\":409,\"reason\":\"AlreadyExists\"}");
    int acquired = 1;
    assert_co_pass(co_kube_leader_try(&acquired, fx->le));
    assert_false(acquired);
}

static void test_kube_lease__respects_a_live_holder_then_takes_over(void **state)
{
    fixture *fx = *state;
    co_fake_kube_json(fx->f, "GET", LEASE_PATH "/lock", 200,
                      LEASE("7", "\"holderIdentity\":\"other\",", "3"));
    co_fake_kube_json(fx->f, "PUT", LEASE_PATH "/lock", 200,
                      LEASE("8", "\"holderIdentity\":\"me\",", "4"));
    int acquired = 1;
    assert_co_pass(co_kube_leader_try(&acquired, fx->le));
    assert_false(acquired);
    assert_int_equal(co_fake_kube_count(fx->f, "PUT", "leases"), 0);
    assert_string_equal(fx->new_leader, "other");
    /* the holder stops renewing: after a whole lease duration of no change it is taken */
    co_kube__sleep_ms(1100, NULL);
    assert_co_pass(co_kube_leader_try(&acquired, fx->le));
    assert_true(acquired);
    struct json_object *body = last_body(fx->f, "PUT");
    assert_string_equal(spec_str(body, "holderIdentity"), "me");
    assert_int_equal(spec_int(body, "leaseTransitions"), 4);
    assert_string_equal(co_json_str(body, "metadata", "resourceVersion", NULL), "7");
    assert_string_not_equal(spec_str(body, "acquireTime"), "2024-01-01T00:00:00.000000Z");
    json_object_put(body);
}

static void test_kube_lease__renews_own_and_takes_released(void **state)
{
    fixture *fx = *state;
    /* our own lease: renewed without a transition, acquireTime kept */
    co_fake_answer mine = {.status = 200, .body = LEASE("7", "\"holderIdentity\":\"me\",", "2")};
    co_fake_kube_once(fx->f, "GET", LEASE_PATH "/lock", &mine);
    co_fake_kube_json(fx->f, "PUT", LEASE_PATH "/lock", 200,
                      LEASE("8", "\"holderIdentity\":\"me\",", "2"));
    int acquired = 0;
    assert_co_pass(co_kube_leader_try(&acquired, fx->le));
    assert_true(acquired);
    struct json_object *body = last_body(fx->f, "PUT");
    assert_int_equal(spec_int(body, "leaseTransitions"), 2);
    assert_string_equal(spec_str(body, "acquireTime"), "2024-01-01T00:00:00.000000Z");
    assert_string_not_equal(spec_str(body, "renewTime"), "2024-01-01T00:00:00.000000Z");
    json_object_put(body);

    /* a released lease (no holder) is taken at once */
    co_fake_answer free_lease = {.status = 200, .body = LEASE("9", "", "5")};
    co_fake_kube_once(fx->f, "GET", LEASE_PATH "/lock", &free_lease);
    assert_co_pass(co_kube_leader_try(&acquired, fx->le));
    assert_true(acquired);
    body = last_body(fx->f, "PUT");
    assert_int_equal(spec_int(body, "leaseTransitions"), 6);
    json_object_put(body);

    /* losing the write race (409) is not an error, just not acquired */
    co_fake_answer again = {.status = 200, .body = LEASE("10", "", "6")};
    co_fake_kube_once(fx->f, "GET", LEASE_PATH "/lock", &again);
    co_fake_answer conflict = {.status = 409,
                               .body =
                                   "{\"kind\":\"Status\",\"code\":409,\"reason\":\"Conflict\"}"};
    co_fake_kube_once(fx->f, "PUT", LEASE_PATH "/lock", &conflict);
    assert_co_pass(co_kube_leader_try(&acquired, fx->le));
    assert_false(acquired);

    /* other failures are reported */
    co_fake_kube_json(fx->f, "GET", LEASE_PATH "/lock", 403,
                      "{\"kind\":\"Status\",\"code\":403,\"reason\":\"Forbidden\"}");
    assert_co_fail_with(CO_EAUTH, co_kube_leader_try(&acquired, fx->le));
}

static void test_kube_lease__release_clears_the_holder(void **state)
{
    fixture *fx = *state;
    co_fake_kube_json(fx->f, "GET", LEASE_PATH "/lock", 200,
                      LEASE("7", "\"holderIdentity\":\"me\",", "2"));
    co_fake_kube_json(fx->f, "PUT", LEASE_PATH "/lock", 200, LEASE("8", "", "2"));
    assert_co_pass(co_kube_leader_release(fx->le));
    struct json_object *body = last_body(fx->f, "PUT");
    assert_null(spec_str(body, "holderIdentity"));
    assert_int_equal(spec_int(body, "leaseDurationSeconds"), 1);
    assert_int_equal(spec_int(body, "leaseTransitions"), 2);
    json_object_put(body);
    /* someone else's lease is left alone */
    co_fake_kube_clear_calls(fx->f);
    co_fake_kube_json(fx->f, "GET", LEASE_PATH "/lock", 200,
                      LEASE("9", "\"holderIdentity\":\"other\",", "2"));
    assert_co_pass(co_kube_leader_release(fx->le));
    assert_int_equal(co_fake_kube_count(fx->f, "PUT", "leases"), 0);
}

static int count(fixture *fx, int *field)
{
    pthread_mutex_lock(&fx->lock);
    int v = *field;
    pthread_mutex_unlock(&fx->lock);
    return v;
}

static void test_kube_lease__elector_leads_and_releases_on_stop(void **state)
{
    fixture *fx = *state;
    co_fake_kube_json(fx->f, "POST", LEASE_PATH, 201,
                      LEASE("1", "\"holderIdentity\":\"me\",", "0"));
    co_fake_kube_json(fx->f, "GET", LEASE_PATH "/lock", 200,
                      LEASE("2", "\"holderIdentity\":\"me\",", "0"));
    co_fake_kube_json(fx->f, "PUT", LEASE_PATH "/lock", 200,
                      LEASE("3", "\"holderIdentity\":\"me\",", "0"));
    /* the first GET finds nothing, so the elector creates the Lease */
    co_fake_answer missing = {.status = 404,
                              .body = "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}"};
    co_fake_kube_once(fx->f, "GET", LEASE_PATH "/lock", &missing);
    assert_co_pass(co_kube_leader_start(fx->le));
    for (int i = 0; i < 3000 && !co_kube_leader_is_leader(fx->le); i++) {
        co_kube__sleep_ms(10, NULL);
    }
    assert_true(co_kube_leader_is_leader(fx->le));
    assert_int_equal(count(fx, &fx->started), 1);
    /* it keeps renewing */
    for (int i = 0; i < 3000 && co_fake_kube_count(fx->f, "PUT", "leases/lock") < 3; i++) {
        co_kube__sleep_ms(10, NULL);
    }
    assert_true(co_kube_leader_is_leader(fx->le));
    co_kube_leader_stop(fx->le);
    assert_false(co_kube_leader_is_leader(fx->le));
    assert_false(co_kube_leader_lost(fx->le));
    assert_int_equal(count(fx, &fx->stopped), 1);
    /* the last write released the Lease */
    struct json_object *body = last_body(fx->f, "PUT");
    assert_null(spec_str(body, "holderIdentity"));
    json_object_put(body);
}

static void test_kube_lease__elector_loses_when_renewals_fail(void **state)
{
    fixture *fx = *state;
    co_fake_kube_json(fx->f, "GET", LEASE_PATH "/lock", 200,
                      LEASE("2", "\"holderIdentity\":\"me\",", "0"));
    co_fake_kube_json(fx->f, "PUT", LEASE_PATH "/lock", 200,
                      LEASE("3", "\"holderIdentity\":\"me\",", "0"));
    assert_co_pass(co_kube_leader_start(fx->le));
    for (int i = 0; i < 3000 && !co_kube_leader_is_leader(fx->le); i++) {
        co_kube__sleep_ms(10, NULL);
    }
    assert_true(co_kube_leader_is_leader(fx->le));
    /* the API server becomes unreachable: the renew deadline passes and leadership is lost */
    co_fake_kube_fail_after(fx->f, 0, 1000000, CO_FAKE_REFUSED, 0);
    for (int i = 0; i < 3000 && !co_kube_leader_lost(fx->le); i++) {
        co_kube__sleep_ms(10, NULL);
    }
    assert_true(co_kube_leader_lost(fx->le));
    assert_false(co_kube_leader_is_leader(fx->le));
    assert_int_equal(count(fx, &fx->stopped), 1);
    co_kube_leader_stop(fx->le);
    assert_int_equal(count(fx, &fx->stopped), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kube_lease__options_are_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_lease__creates_a_missing_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_lease__losing_the_create_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_lease__respects_a_live_holder_then_takes_over,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_lease__renews_own_and_takes_released, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_lease__release_clears_the_holder, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_lease__elector_leads_and_releases_on_stop, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_lease__elector_loses_when_renewals_fail, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("kube_lease", tests, NULL, NULL);
}
