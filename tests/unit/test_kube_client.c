/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the Kubernetes client over the fake transport: Status decoding into typed
 * errors, retries and what is never retried, authentication and impersonation headers,
 * token re-reading after a 401, discovery caching and refetching, request paths and query
 * parameters of every operation, and countdown fault injection over whole operations.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/util/caps.h"
#include "co/kube/kube_client.h"
#include "shared/src/kube/kube_int.h"
#include "tests/support/fake_kube.h"
#include "tests/support/test_support.h"

static const co_kube_ref cm_x = {"v1", "ConfigMap", "ns1", "x"};

static struct json_object *parse(const char *text)
{
    struct json_object *o = json_tokener_parse(text);
    assert_non_null(o);
    return o;
}

static char *status_body(int code, const char *reason, const char *message, const char *details)
{
    return co_xasprintf("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                        "\"status\":\"Failure\",\"message\":\"%s\",\"reason\":\"%s\",%s%s"
                        "\"code\":%d}",
                        message, reason, details ? "\"details\":" : "", details ? details : "",
                        code);
}

/* Answers GET of cm_x with @p code/@p reason and checks the mapped error. */
static void check_status(int http, const char *reason, int expect)
{
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    char *body =
        status_body(http, reason, "it failed", "{\"name\":\"x\",\"kind\":\"configmaps\"},");
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/configmaps/x", http, body);
    co_kube_client *c = co_fake_kube_client(f);
    struct json_object *out = NULL;
    assert_co_fail_with(expect, co_kube_get(&out, c, &cm_x, NULL));
    assert_null(out);
    const co_kube_status *st = co_kube_status_last();
    assert_int_equal(st->code, http);
    assert_string_equal(st->reason, reason);
    assert_string_equal(st->message, "it failed");
    assert_contains(st->details, "\"name\":\"x\"");
    assert_contains(co_error_last(), "GET /api/v1/namespaces/ns1/configmaps/x");
    assert_contains(co_error_last(), "it failed");
    free(body);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_kube_client__status_maps_to_typed_errors(void **state)
{
    (void)state;
    check_status(404, "NotFound", CO_ENOTFOUND);
    check_status(409, "AlreadyExists", CO_EEXISTS);
    check_status(409, "Conflict", CO_ECONFLICT);
    check_status(410, "Expired", CO_EGONE);
    check_status(410, "Gone", CO_EGONE);
    check_status(422, "Invalid", CO_EINVALID);
    check_status(400, "BadRequest", CO_EINVALID);
    check_status(401, "Unauthorized", CO_EAUTH);
    check_status(403, "Forbidden", CO_EAUTH);
    check_status(504, "Timeout", CO_ETIMEOUT);
    check_status(413, "RequestEntityTooLarge", CO_ETOOBIG);
}

static void test_kube_client__non_status_body_is_reported(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/configmaps/x", 502,
                      "<html>bad\ngateway</html>");
    co_kube_client *c = co_fake_kube_client(f);
    struct json_object *out = NULL;
    assert_co_fail_with(CO_EUNAVAILABLE, co_kube_get(&out, c, &cm_x, NULL));
    assert_int_equal(co_kube_status_last()->code, 502);
    assert_contains(co_kube_status_last()->message, "<html>bad gateway</html>");
    /* a GET is idempotent: 1 + 3 retries */
    assert_int_equal(co_fake_kube_count(f, "GET", "configmaps/x"), 4);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_kube_client__get_decodes_object(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/configmaps/x", 200,
                      "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\","
                      "\"namespace\":\"ns1\",\"resourceVersion\":\"7\"},\"data\":{\"a\":\"b\"}}");
    co_kube_client *c = co_fake_kube_client(f);
    struct json_object *out = NULL;
    co_kube_get_options go = {.resource_version = "0"};
    assert_co_pass(co_kube_get(&out, c, &cm_x, &go));
    assert_string_equal(co_json_str(out, "metadata", "resourceVersion", NULL), "7");
    json_object_put(out);
    co_fake_call call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_string_equal(call.path, "/api/v1/namespaces/ns1/configmaps/x?resourceVersion=0");
    assert_contains(call.headers, "Authorization: Bearer fake-token\n");
    assert_contains(call.headers, "User-Agent: component-operator/");
    assert_contains(call.headers, "Accept: application/json\n");
    co_fake_call_dispose(&call);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_kube_client__retries_what_is_safe(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_fake_kube_json(
        f, "POST", "/api/v1/namespaces/ns1/configmaps", 201,
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}}");
    co_kube_client *c = co_fake_kube_client(f);
    struct json_object *obj =
        parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\","
              "\"namespace\":\"ns1\"}}");
    struct json_object *out = NULL;
    /* warm the discovery cache so that the fault counts below concern the POST only */
    co_kube_mapping m;
    assert_co_pass(co_kube_client_mapping(&m, c, "v1", "ConfigMap"));
    co_kube_mapping_dispose(&m);

    /* refused: never reached the server, so even a POST is retried */
    co_fake_kube_clear_calls(f);
    co_fake_kube_fail_after(f, 0, 2, CO_FAKE_REFUSED, 0);
    assert_co_pass(co_kube_create(&out, c, obj, NULL));
    assert_int_equal(co_fake_kube_count(f, "POST", "configmaps"), 3);
    json_object_put(out);

    /* 429: rejected before processing; retried */
    co_fake_kube_clear_calls(f);
    co_fake_kube_fail_after(f, 0, 1, CO_FAKE_HTTP, 429);
    assert_co_pass(co_kube_create(NULL, c, obj, NULL));
    assert_int_equal(co_fake_kube_count(f, "POST", "configmaps"), 2);

    /* 500 and a dropped connection may have had an effect: a POST is not retried */
    co_fake_kube_clear_calls(f);
    co_fake_kube_fail_after(f, 0, 1, CO_FAKE_HTTP, 500);
    assert_co_fail_with(CO_EUNAVAILABLE, co_kube_create(NULL, c, obj, NULL));
    assert_int_equal(co_fake_kube_count(f, "POST", "configmaps"), 1);
    co_fake_kube_clear_calls(f);
    co_fake_kube_fail_after(f, 0, 1, CO_FAKE_TRUNCATED, 0);
    assert_co_fail_with(CO_EUNAVAILABLE, co_kube_create(NULL, c, obj, NULL));
    assert_int_equal(co_fake_kube_count(f, "POST", "configmaps"), 1);

    /* retries are bounded */
    co_fake_kube_clear_calls(f);
    co_fake_kube_fail_after(f, 0, 100, CO_FAKE_REFUSED, 0);
    assert_co_fail_with(CO_EUNAVAILABLE, co_kube_create(NULL, c, obj, NULL));
    assert_contains(co_error_last(), "Connection refused");
    assert_int_equal(co_fake_kube_count(f, "POST", "configmaps"), 4);
    assert_int_equal(co_kube_status_last()->code, 0);

    json_object_put(obj);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

/* Answers every PATCH of cm_x with @p http and the Status @p reason/@p message, applies, and
 * returns the number of PATCH requests sent; the error is left for the caller to check. */
static size_t apply_against(int http, const char *reason, const char *message, int expect)
{
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    char *body = status_body(http, reason, message, NULL);
    co_fake_kube_json(f, "PATCH", "/api/v1/namespaces/ns1/configmaps/x", http, body);
    co_kube_client *c = co_fake_kube_client(f);
    struct json_object *obj =
        parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\","
              "\"namespace\":\"ns1\"}}");
    co_kube_write_options ao = {.field_manager = "mgr", .force = 1};
    assert_co_fail_with(expect, co_kube_apply(NULL, c, obj, &ao));
    assert_int_equal(co_kube_status_last()->code, http);
    size_t n = co_fake_kube_count(f, "PATCH", "configmaps/x");
    json_object_put(obj);
    free(body);
    co_kube_client_free(c);
    co_fake_kube_free(f);
    return n;
}

/* kube-apiserver 1.20 answers a server-side apply it cannot merge with a 500: that fails at
 * once with the server's message, while a 500 or 503 that is server trouble is retried. */
static void test_kube_client__permanent_5xx_fails_fast(void **state)
{
    (void)state;
    /* the field manager's structured merge: no reason, a 500 */
    const char *typed = "failed to create typed patch object: .spec.ports: element 0: "
                        "associative list with keys has an element that omits key field "
                        "\\\"protocol\\\"";
    assert_int_equal(apply_against(500, "", typed, CO_EINVALID), 1);
    assert_contains(co_error_last(), "failed to create typed patch object: .spec.ports");
    assert_contains(co_error_last(), "PATCH /api/v1/namespaces/ns1/configmaps/x");
    assert_int_equal(
        apply_against(500, "InternalError",
                      "Internal error occurred: failed to convert live object (v1, Kind="
                      "ConfigMap) to smd typed: .data: duplicate entries for key a",
                      CO_EINVALID),
        1);
    assert_contains(co_error_last(), "to smd typed");
    /* a reason that is no server trouble, whatever the code */
    assert_int_equal(apply_against(500, "Invalid", "spec.x: Invalid value", CO_EINVALID), 1);
    assert_int_equal(apply_against(503, "Conflict", "apply conflict", CO_ECONFLICT), 1);

    /* real server trouble stays retriable: 1 + 3 retries, then CO_EUNAVAILABLE */
    assert_int_equal(apply_against(500, "InternalError",
                                   "Internal error occurred: etcdserver: request timed out",
                                   CO_EUNAVAILABLE),
                     4);
    assert_int_equal(apply_against(500, "", "etcdserver: leader changed", CO_EUNAVAILABLE), 4);
    assert_int_equal(
        apply_against(503, "ServiceUnavailable", "the server is shutting down", CO_EUNAVAILABLE),
        4);

    /* the merge messages are only final for patches: the same text on a GET is retried */
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    char *body = status_body(500, "", "failed to create typed patch object", NULL);
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/configmaps/x", 500, body);
    co_kube_client *c = co_fake_kube_client(f);
    assert_co_fail_with(CO_EUNAVAILABLE, co_kube_get(NULL, c, &cm_x, NULL));
    assert_int_equal(co_fake_kube_count(f, "GET", "configmaps/x"), 4);
    free(body);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static int64_t observed_delays[16];
static size_t nobserved;

static void observe_delay(int64_t ms)
{
    if (nobserved < CO_ARRAY_SIZE(observed_delays)) {
        observed_delays[nobserved++] = ms;
    }
}

static void test_kube_client__retry_after_is_honoured(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_fake_answer busy = {.status = 503, .retry_after_s = 1, .body = "{}"};
    co_fake_kube_once(f, "GET", "/api/v1/namespaces/ns1/configmaps/x", &busy);
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/configmaps/x", 200,
                      "{\"kind\":\"ConfigMap\"}");
    co_kube_client *c = co_fake_kube_client(f);
    nobserved = 0;
    co_kube__delay_observer = observe_delay;
    assert_co_pass(co_kube_get(NULL, c, &cm_x, NULL));
    co_kube__delay_observer = NULL;
    /* the fake's backoff base is 2 ms: the one wait is the server's Retry-After */
    assert_int_equal(nobserved, 1);
    assert_true(observed_delays[0] == 1000);
    assert_int_equal(co_fake_kube_count(f, "GET", "configmaps/x"), 2);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_kube_client__impersonation_headers(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/configmaps/x", 200, "{}");
    co_kube_client *c = co_fake_kube_client(f);
    const char *groups[] = {"g1", "system:authenticated"};
    co_kube_client *imp = NULL;
    assert_co_fail_with(CO_EINVALID, co_kube_client_new_impersonating(&imp, c, "", NULL, 0));
    assert_co_pass(
        co_kube_client_new_impersonating(&imp, c, "system:serviceaccount:a:b", groups, 2));
    assert_co_pass(co_kube_get(NULL, imp, &cm_x, NULL));
    co_fake_call call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_contains(call.headers, "Impersonate-User: system:serviceaccount:a:b\n");
    assert_contains(call.headers, "Impersonate-Group: g1\nImpersonate-Group: "
                                  "system:authenticated\n");
    assert_contains(call.headers, "Authorization: Bearer fake-token");
    co_fake_call_dispose(&call);
    /* the parent is unaffected, and the discovery cache is shared (one fetch of /api/v1) */
    assert_co_pass(co_kube_get(NULL, c, &cm_x, NULL));
    call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_null(strstr(call.headers, "Impersonate"));
    co_fake_call_dispose(&call);
    assert_int_equal(co_fake_kube_count(f, "GET", "/api/v1"), 3);
    co_kube_client_free(imp);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_kube_client__token_file_reread_after_401(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    char *token_path = co_xasprintf("%s/token", dir);
    co_test_write_file(token_path, "first\n", 6);
    char *doc = co_xasprintf(
        "{\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"https://h:1\"}}],"
        "\"users\":[{\"name\":\"u\",\"user\":{\"tokenFile\":\"%s\"}}],"
        "\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\",\"user\":\"u\"}}],"
        "\"current-context\":\"x\"}",
        token_path);
    struct json_object *obj = parse(doc);
    co_kube_config *cfg = NULL;
    assert_co_pass(co_kube_config_from_json(&cfg, obj, NULL, NULL));
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_kube_client_options opts = {.qps = -1, .max_retries = -1};
    co_kube_client *c = NULL;
    assert_co_pass(co_kube_client_new_with_transport(&c, cfg, co_fake_kube_transport(f), &opts));
    const co_kube_ref ns_ref = {"v1", "ConfigMap", "default", "x"};

    co_fake_kube_json(f, "GET", "/api/v1/namespaces/default/configmaps/x", 200, "{}");
    assert_co_pass(co_kube_get(NULL, c, &ns_ref, NULL));
    co_fake_call call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_contains(call.headers, "Authorization: Bearer first\n");
    co_fake_call_dispose(&call);

    /* rotate the token; the server refuses the old one once */
    co_test_write_file(token_path, "second", 6);
    co_fake_answer unauth = {.status = 401,
                             .body = "{\"kind\":\"Status\",\"code\":401,"
                                     "\"reason\":\"Unauthorized\"}"};
    co_fake_kube_once(f, "GET", "/api/v1/namespaces/default/configmaps/x", &unauth);
    assert_co_pass(co_kube_get(NULL, c, &ns_ref, NULL));
    call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_contains(call.headers, "Authorization: Bearer second\n");
    co_fake_call_dispose(&call);

    /* a second 401 in a row is final */
    co_fake_kube_once(f, "GET", "/api/v1/namespaces/default/configmaps/x", &unauth);
    co_fake_kube_once(f, "GET", "/api/v1/namespaces/default/configmaps/x", &unauth);
    assert_co_fail_with(CO_EAUTH, co_kube_get(NULL, c, &ns_ref, NULL));

    co_kube_client_free(c);
    co_fake_kube_free(f);
    co_kube_config_free(cfg);
    json_object_put(obj);
    free(doc);
    co_test_rmtree(dir);
    free(token_path);
    free(dir);
}

static void test_kube_client__discovery_caches_and_refetches(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_kube_client *c = co_fake_kube_client(f);
    co_kube_mapping m;
    assert_co_pass(co_kube_client_mapping(&m, c, "apps/v1", "Deployment"));
    assert_string_equal(m.group, "apps");
    assert_string_equal(m.version, "v1");
    assert_string_equal(m.resource, "deployments");
    assert_true(m.namespaced);
    co_kube_mapping_dispose(&m);
    assert_co_pass(co_kube_client_mapping(&m, c, "v1", "Namespace"));
    assert_string_equal(m.resource, "namespaces");
    assert_false(m.namespaced);
    co_kube_mapping_dispose(&m);
    for (int i = 0; i < 5; i++) {
        assert_co_pass(co_kube_client_mapping(&m, c, "apps/v1", "Deployment"));
        co_kube_mapping_dispose(&m);
    }
    assert_int_equal(co_fake_kube_count(f, "GET", "/apis/apps/v1"), 1);

    /* an unknown kind: ENOMATCH; a second miss within a second does not refetch */
    assert_co_fail_with(CO_ENOMATCH, co_kube_client_mapping(&m, c, "apps/v1", "Widget"));
    assert_contains(co_error_last(), "Widget");
    assert_co_fail_with(CO_ENOMATCH, co_kube_client_mapping(&m, c, "apps/v1", "Widget"));
    assert_int_equal(co_fake_kube_count(f, "GET", "/apis/apps/v1"), 1);

    /* a new kind appears (a CRD was created): a miss after a second refetches and finds it */
    co_fake_kube_json(f, "GET", "/apis/apps/v1$", 200,
                      "{\"resources\":[{\"name\":\"deployments\",\"namespaced\":true,\"kind\":"
                      "\"Deployment\"},{\"name\":\"widgets\",\"namespaced\":false,\"kind\":"
                      "\"Widget\"},{\"name\":\"widgets/status\",\"namespaced\":false,\"kind\":"
                      "\"Widget\"}]}");
    co_kube__sleep_ms(1100, NULL);
    assert_co_pass(co_kube_client_mapping(&m, c, "apps/v1", "Widget"));
    assert_string_equal(m.resource, "widgets");
    assert_false(m.namespaced);
    co_kube_mapping_dispose(&m);

    /* a group the server does not serve */
    assert_co_fail_with(CO_ENOMATCH, co_kube_client_mapping(&m, c, "nope.io/v1", "Thing"));
    /* an aggregated group whose server is down fails alone */
    co_fake_kube_json(f, "GET", "/apis/metrics.k8s.io/v1beta1$", 503,
                      "{\"kind\":\"Status\",\"code\":503,\"reason\":\"ServiceUnavailable\","
                      "\"message\":\"service unavailable\"}");
    assert_co_fail_with(CO_EUNAVAILABLE,
                        co_kube_client_mapping(&m, c, "metrics.k8s.io/v1beta1", "PodMetrics"));
    assert_contains(co_error_last(), "discovery of metrics.k8s.io/v1beta1");
    assert_co_pass(co_kube_client_mapping(&m, c, "v1", "ConfigMap"));
    co_kube_mapping_dispose(&m);

    assert_co_fail_with(CO_EINVALID, co_kube_client_mapping(&m, c, "a/b/c", "X"));
    assert_co_fail_with(CO_EINVALID, co_kube_client_mapping(&m, c, "", "X"));
    assert_co_fail_with(CO_EINVALID, co_kube_client_mapping(&m, c, "v1", ""));

    co_kube_client_invalidate_discovery(c);
    assert_co_pass(co_kube_client_mapping(&m, c, "apps/v1", "Deployment"));
    co_kube_mapping_dispose(&m);
    assert_int_equal(co_fake_kube_count(f, "GET", "/apis/apps/v1"), 3);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

/* The group/versions of a listing, comma-joined. */
static char *listed(struct json_object *lists)
{
    co_buf b = CO_BUF_INIT(4096);
    for (size_t i = 0; i < json_object_array_length(lists); i++) {
        struct json_object *gv = NULL;
        assert_true(
            json_object_object_get_ex(json_object_array_get_idx(lists, i), "groupVersion", &gv));
        assert_co_pass(co_buf_printf(&b, "%s%s", i ? "," : "", json_object_get_string(gv)));
    }
    char *s = co_xstrdup(co_buf_cstr(&b));
    co_buf_dispose(&b);
    return s;
}

static void expect_listing(co_kube_client *c, int64_t max_age_ms, const char *want)
{
    struct json_object *lists = NULL;
    assert_co_pass(co_kube_client_api_resources(&lists, c, max_age_ms));
    char *got = listed(lists);
    assert_string_equal(got, want);
    free(got);
    json_object_put(lists);
}

#define APIS_2                                                                                     \
    "{\"kind\":\"APIGroupList\",\"groups\":[{\"name\":\"apps\",\"versions\":[{\"groupVersion\":"   \
    "\"apps/v1\",\"version\":\"v1\"}]},{\"name\":\"metrics.k8s.io\",\"versions\":[{"               \
    "\"groupVersion\":\"metrics.k8s.io/v1beta1\",\"version\":\"v1beta1\"}]}"

/* A fake serving the core group, apps/v1, and metrics.k8s.io/v1beta1 of an aggregated API server
 * that is down (left out of listings, the rest is listed). */
static co_fake_kube *fake_two_groups(void)
{
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_fake_kube_json(f, "GET", "/api$", 200, "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}");
    co_fake_kube_json(f, "GET", "/apis$", 200, APIS_2 "]}");
    co_fake_kube_json(f, "GET", "/apis/metrics.k8s.io/v1beta1$", 503,
                      "{\"kind\":\"Status\",\"code\":503,\"reason\":\"ServiceUnavailable\"}");
    return f;
}

static void test_kube_client__api_resources_listing_is_cached_and_refreshed(void **state)
{
    (void)state;
    co_fake_kube *f = fake_two_groups();
    co_kube_client *c = co_fake_kube_client(f);
    expect_listing(c, 60000, "v1,apps/v1");
    assert_int_equal(co_fake_kube_count(f, "GET", "/apis/apps/v1"), 1);
    /* the listing filled the mapping cache: no request for a kind it holds */
    co_kube_mapping m;
    size_t before = co_fake_kube_ncalls(f);
    assert_co_pass(co_kube_client_mapping(&m, c, "apps/v1", "Deployment"));
    co_kube_mapping_dispose(&m);
    assert_int_equal(co_fake_kube_ncalls(f) - before, 0);

    /* reused while young: no request at all */
    before = co_fake_kube_ncalls(f);
    expect_listing(c, 60000, "v1,apps/v1");
    assert_int_equal(co_fake_kube_ncalls(f) - before, 0);
    assert_int_equal(co_fake_kube_count(f, "GET", "/apis/apps/v1"), 1);
    /* no reuse at age 0 */
    expect_listing(c, 0, "v1,apps/v1");
    assert_int_equal(co_fake_kube_count(f, "GET", "/apis/apps/v1"), 2);

    /* a CRD of a new group: not seen while the listing is young, at once when it is expired
     * (as the apply engine does when it writes a CRD) */
    co_fake_kube_json(f, "GET", "/apis$", 200,
                      APIS_2 ",{\"name\":\"example.com\",\"versions\":[{\"groupVersion\":"
                             "\"example.com/v1\",\"version\":\"v1\"}]}]}");
    co_fake_kube_json(f, "GET", "/apis/example.com/v1$", 200,
                      "{\"kind\":\"APIResourceList\",\"groupVersion\":\"example.com/v1\","
                      "\"resources\":[{\"name\":\"widgets\",\"namespaced\":true,\"kind\":"
                      "\"Widget\"}]}");
    expect_listing(c, 60000, "v1,apps/v1");
    co_kube_client_expire_api_resources(c);
    expect_listing(c, 60000, "v1,apps/v1,example.com/v1");
    /* or once /api and /apis are read again, CO_KUBE_GV_RECHECK_MS later */
    co_fake_kube_json(f, "GET", "/apis$", 200, APIS_2 "]}");
    expect_listing(c, 60000, "v1,apps/v1,example.com/v1");
    co_kube__sleep_ms(CO_KUBE_GV_RECHECK_MS + 100, NULL);
    expect_listing(c, 60000, "v1,apps/v1");
    co_fake_kube_json(f, "GET", "/apis$", 200,
                      APIS_2 ",{\"name\":\"example.com\",\"versions\":[{\"groupVersion\":"
                             "\"example.com/v1\",\"version\":\"v1\"}]}]}");
    co_kube_client_expire_api_resources(c);
    expect_listing(c, 60000, "v1,apps/v1,example.com/v1");
    assert_int_equal(co_fake_kube_count(f, "GET", "/apis/apps/v1"), 5);

    /* a new kind of a known group/version that mapping had to fetch drops the listing */
    co_fake_kube_json(f, "GET", "/apis/example.com/v1$", 200,
                      "{\"kind\":\"APIResourceList\",\"groupVersion\":\"example.com/v1\","
                      "\"resources\":[{\"name\":\"widgets\",\"namespaced\":true,\"kind\":"
                      "\"Widget\"},{\"name\":\"gadgets\",\"namespaced\":true,\"kind\":"
                      "\"Gadget\"}]}");
    co_kube__sleep_ms(1100, NULL);
    assert_co_pass(co_kube_client_mapping(&m, c, "example.com/v1", "Gadget"));
    co_kube_mapping_dispose(&m);
    struct json_object *lists = NULL;
    assert_co_pass(co_kube_client_api_resources(&lists, c, 60000));
    assert_int_equal(co_fake_kube_count(f, "GET", "/apis/apps/v1"), 6);
    struct json_object *res = NULL;
    assert_true(json_object_object_get_ex(json_object_array_get_idx(lists, 2), "resources", &res));
    assert_int_equal(json_object_array_length(res), 2);
    json_object_put(lists);

    /* and so does an invalidation */
    co_kube_client_invalidate_discovery(c);
    expect_listing(c, 60000, "v1,apps/v1,example.com/v1");
    assert_int_equal(co_fake_kube_count(f, "GET", "/apis/apps/v1"), 7);

    /* a group/version that is no path segment is refused, not requested */
    co_fake_kube_json(f, "GET", "/apis$", 200,
                      "{\"groups\":[{\"name\":\"x\",\"versions\":[{\"groupVersion\":"
                      "\"x/../../api/v1/secrets\"}]}]}");
    lists = NULL;
    co_kube_client_expire_api_resources(c);
    assert_co_fail_with(CO_EINVALID, co_kube_client_api_resources(&lists, c, 60000));
    assert_null(lists);
    assert_contains(co_error_last(), "invalid group/version");
    assert_int_equal(co_fake_kube_count(f, "GET", "secrets"), 0);
    /* /apis failing fails the listing */
    co_fake_kube_json(f, "GET", "/apis$", 403, "{\"kind\":\"Status\",\"code\":403}");
    assert_co_fail_with(CO_EAUTH, co_kube_client_api_resources(&lists, c, 60000));
    assert_contains(co_error_last(), "discovery of the served API versions");
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

/* A derivation of a listing (co_kube_api_listing_memo()): made once per listing, shared by its
 * readers, freed with it; a second kind of derivation is refused, not mixed up with the first. */
static int memo_made, memo_disposed;

static void *memo_count_lists(const struct json_object *lists)
{
    memo_made++;
    size_t *n = malloc(sizeof(*n));
    assert_non_null(n);
    *n = json_object_array_length(lists);
    return n;
}

static void *memo_other(const struct json_object *lists)
{
    (void)lists;
    fail_msg("a second derivation of one listing was made");
    return NULL;
}

static void memo_dispose(void *p)
{
    memo_disposed++;
    free(p);
}

static void test_kube_client__api_listing_memo_is_made_once_and_freed_with_it(void **state)
{
    (void)state;
    memo_made = memo_disposed = 0;
    co_fake_kube *f = fake_two_groups();
    co_kube_client *c = co_fake_kube_client(f);
    co_kube_api_listing *a = NULL, *b = NULL, *fresh = NULL;
    assert_co_pass(co_kube_client_api_listing(&a, c, 60000));
    assert_co_pass(co_kube_client_api_listing(&b, c, 60000));
    size_t *na = co_kube_api_listing_memo(a, memo_count_lists, memo_dispose);
    size_t *nb = co_kube_api_listing_memo(b, memo_count_lists, memo_dispose);
    assert_non_null(na);
    assert_ptr_equal(na, nb);
    assert_int_equal(*na, 2);
    assert_int_equal(memo_made, 1);
    assert_null(co_kube_api_listing_memo(a, memo_other, memo_dispose));

    /* a new listing derives its own; the old one's goes with its last holder */
    co_kube_client_expire_api_resources(c);
    assert_co_pass(co_kube_client_api_listing(&fresh, c, 60000));
    assert_ptr_not_equal(fresh, a);
    assert_int_equal(*(size_t *)co_kube_api_listing_memo(fresh, memo_count_lists, memo_dispose), 2);
    assert_int_equal(memo_made, 2);
    co_kube_api_listing_release(b);
    assert_int_equal(memo_disposed, 0);
    co_kube_api_listing_release(a);
    assert_int_equal(memo_disposed, 1);
    co_kube_api_listing_release(fresh);
    co_kube_client_free(c);
    assert_int_equal(memo_disposed, 2);
    co_fake_kube_free(f);
}

/* Once the listing is due for its recheck of /api and /apis, one thread makes it: a reader
 * arriving meanwhile waits for that answer instead of asking too, and takes the listing it
 * confirmed. */
typedef struct listing_reader {
    co_kube_client *c;
    co_kube_api_listing *got;
    int rc;
    atomic_int done;
} listing_reader;

static void *read_listing(void *arg)
{
    listing_reader *r = arg;
    r->rc = co_kube_client_api_listing(&r->got, r->c, 60000);
    atomic_store(&r->done, 1);
    return NULL;
}

static void test_kube_client__listing_recheck_is_made_by_one_reader(void **state)
{
    (void)state;
    co_fake_kube *f = fake_two_groups();
    co_kube_client *c = co_fake_kube_client(f);
    co_kube_core *core = c->core;
    expect_listing(c, 60000, "v1,apps/v1");
    co_kube__sleep_ms(CO_KUBE_GV_RECHECK_MS + 100, NULL);

    /* another reader is rechecking: this one waits, asking nothing */
    pthread_mutex_lock(&core->disc_lock);
    core->listing_rechecking = 1;
    pthread_mutex_unlock(&core->disc_lock);
    size_t before = co_fake_kube_ncalls(f);
    listing_reader r = {c, NULL, -1, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, read_listing, &r), 0);
    co_kube__sleep_ms(200, NULL);
    assert_int_equal(atomic_load(&r.done), 0);
    /* the other reader's answer: the listing holds */
    pthread_mutex_lock(&core->disc_lock);
    core->listing_checked_ms = co_kube__now_ms();
    core->listing_rechecking = 0;
    pthread_cond_broadcast(&core->listing_rechecked);
    pthread_mutex_unlock(&core->disc_lock);
    pthread_join(t, NULL);
    assert_co_pass(r.rc);
    char *got = listed((struct json_object *)co_kube_api_listing_lists(r.got));
    assert_string_equal(got, "v1,apps/v1");
    free(got);
    co_kube_api_listing_release(r.got);
    assert_int_equal(co_fake_kube_ncalls(f) - before, 0);
    co_kube__sleep_ms(CO_KUBE_GV_RECHECK_MS + 100, NULL);

    /* with no recheck under way, the first reader past the second makes it (/api and /apis,
     * the listing unchanged), and the listing is young again */
    before = co_fake_kube_ncalls(f);
    expect_listing(c, 60000, "v1,apps/v1");
    assert_int_equal(co_fake_kube_ncalls(f) - before, 2);
    expect_listing(c, 60000, "v1,apps/v1");
    assert_int_equal(co_fake_kube_ncalls(f) - before, 2);
    assert_int_equal(core->listing_rechecking, 0);

    /* a recheck that fails leaves no claim behind: the next reader asks again */
    co_kube__sleep_ms(CO_KUBE_GV_RECHECK_MS + 100, NULL);
    co_fake_kube_json(f, "GET", "/apis$", 403, "{\"kind\":\"Status\",\"code\":403}");
    struct json_object *lists = NULL;
    assert_co_fail_with(CO_EAUTH, co_kube_client_api_resources(&lists, c, 60000));
    assert_int_equal(core->listing_rechecking, 0);
    co_fake_kube_json(f, "GET", "/apis$", 200, APIS_2 "]}");
    before = co_fake_kube_ncalls(f);
    expect_listing(c, 60000, "v1,apps/v1");
    assert_int_equal(co_fake_kube_ncalls(f) - before, 2);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

/* The shared listing: readers of a young listing share one copy, which outlives its expiry
 * for whoever holds it, and the next reader after an expiry gets the new one. */
static void test_kube_client__api_listing_is_shared_and_outlives_expiry(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_fake_kube_json(f, "GET", "/api$", 200, "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}");
    co_fake_kube_json(f, "GET", "/apis$", 200, "{\"kind\":\"APIGroupList\",\"groups\":[]}");
    co_kube_client *c = co_fake_kube_client(f);
    co_kube_api_listing *a = NULL, *b = NULL, *fresh = NULL;
    assert_co_pass(co_kube_client_api_listing(&a, c, 60000));
    assert_co_pass(co_kube_client_api_listing(&b, c, 60000));
    assert_ptr_equal(a, b);
    assert_ptr_equal(co_kube_api_listing_lists(a), co_kube_api_listing_lists(b));
    co_kube_api_listing_release(b);

    co_fake_kube_json(f, "GET", "/apis$", 200, APIS_2 "]}");
    co_fake_kube_json(f, "GET", "/apis/metrics.k8s.io/v1beta1$", 503,
                      "{\"kind\":\"Status\",\"code\":503}");
    co_kube_client_expire_api_resources(c);
    assert_co_pass(co_kube_client_api_listing(&fresh, c, 60000));
    assert_ptr_not_equal(fresh, a);
    char *got = listed((struct json_object *)co_kube_api_listing_lists(fresh));
    assert_string_equal(got, "v1,apps/v1");
    free(got);
    /* the old one is still whole for its holder */
    got = listed((struct json_object *)co_kube_api_listing_lists(a));
    assert_string_equal(got, "v1");
    free(got);
    co_kube_api_listing_release(a);
    co_kube_api_listing_release(fresh);
    co_kube_api_listing_release(NULL);
    /* a copy is the caller's own */
    struct json_object *lists = NULL;
    assert_co_pass(co_kube_client_api_resources(&lists, c, 60000));
    assert_int_equal(json_object_array_length(lists), 2);
    json_object_array_del_idx(lists, 0, 1);
    json_object_put(lists);
    expect_listing(c, 60000, "v1,apps/v1");
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_kube_client__server_version_is_cached(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_json(f, "GET", "/version$", 200, "{\"gitVersion\":\"v1.30.1\"}");
    co_kube_client *c = co_fake_kube_client(f);
    for (int i = 0; i < 3; i++) {
        struct json_object *v = NULL;
        assert_co_pass(co_kube_client_server_version(&v, c, 60000));
        assert_string_equal(co_json_str(v, "gitVersion", NULL), "v1.30.1");
        json_object_put(v);
    }
    assert_int_equal(co_fake_kube_count(f, "GET", "/version"), 1);
    struct json_object *v = NULL;
    assert_co_pass(co_kube_client_server_version(&v, c, 0)); /* no reuse at age 0 */
    json_object_put(v);
    assert_int_equal(co_fake_kube_count(f, "GET", "/version"), 2);
    co_fake_kube_json(f, "GET", "/version$", 500, "{\"kind\":\"Status\",\"code\":500}");
    v = NULL;
    assert_true(co_kube_client_server_version(&v, c, 0) < 0);
    assert_null(v);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_kube_client__paths(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_kube_client *c = co_fake_kube_client(f);
    co_buf b = CO_BUF_INIT(4096);
    assert_co_pass(
        co_kube_client_path(&b, c, &(co_kube_ref){"apps/v1", "Deployment", "n", "d"}, "status"));
    assert_string_equal(co_buf_cstr(&b), "/apis/apps/v1/namespaces/n/deployments/d/status");
    co_buf_reset(&b);
    assert_co_pass(
        co_kube_client_path(&b, c, &(co_kube_ref){"v1", "Namespace", "ignored", "n"}, NULL));
    assert_string_equal(co_buf_cstr(&b), "/api/v1/namespaces/n");
    co_buf_reset(&b);
    assert_co_pass(co_kube_client_path(&b, c, &(co_kube_ref){"v1", "ConfigMap", NULL, NULL}, NULL));
    assert_string_equal(co_buf_cstr(&b), "/api/v1/configmaps");
    co_buf_reset(&b);
    assert_co_fail_with(
        CO_EINVALID,
        co_kube_client_path(&b, c, &(co_kube_ref){"v1", "ConfigMap", NULL, "x"}, NULL));
    assert_contains(co_error_last(), "namespace");
    co_buf_reset(&b);
    assert_co_fail_with(
        CO_EINVALID,
        co_kube_client_path(&b, c, &(co_kube_ref){"v1", "ConfigMap", "n", "a/b"}, NULL));
    co_buf_reset(&b);
    assert_co_fail_with(
        CO_EINVALID,
        co_kube_client_path(&b, c, &(co_kube_ref){"v1", "ConfigMap", "..", "a"}, NULL));
    co_buf_dispose(&b);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

/* A fake API server that answers GETs of @p path with @p body, and a client of it. */
static co_kube_client *list_client(co_fake_kube **f, const char *path, const char *body)
{
    *f = co_fake_kube_new();
    co_fake_kube_discovery(*f);
    co_fake_kube_json(*f, "GET", path, 200, body);
    return co_fake_kube_client(*f);
}

static int has_managed_fields(struct json_object *item, void *payload)
{
    int *n = payload;
    struct json_object *meta = co_kube__obj(item, "metadata");
    *n += meta && json_object_object_get_ex(meta, "managedFields", NULL);
    return 0;
}

/* With skip_managed_fields the items arrive without metadata.managedFields, and nothing else is
 * lost; without it they keep them. */
static void test_kube_client__list_can_leave_out_managed_fields(void **state)
{
    (void)state;
    co_fake_kube *f = NULL;
    co_kube_client *c =
        list_client(&f, "/api/v1/namespaces/ns1/configmaps?limit",
                    "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"10\"},"
                    "\"items\":[{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":"
                    "\"m\",\"fieldsV1\":{\"f:data\":{}}}]},\"data\":{\"k\":\"v\"}},"
                    "{\"metadata\":{\"name\":\"b\",\"managedFields\":[]}}]}");
    co_kube_ref ref = {"v1", "ConfigMap", "ns1", NULL};
    int with = 0, without = 0;
    co_kube_list_options lo = {0};
    assert_co_pass(co_kube_list_each(NULL, c, &ref, &lo, has_managed_fields, &with));
    assert_int_equal(with, 2);
    lo.skip_managed_fields = 1;
    assert_co_pass(co_kube_list_each(NULL, c, &ref, &lo, has_managed_fields, &without));
    assert_int_equal(without, 0);
    struct json_object *all = NULL;
    assert_co_pass(co_kube_list_all(&all, c, &ref, &lo));
    struct json_object *items = NULL;
    assert_true(json_object_object_get_ex(all, "items", &items));
    assert_int_equal(json_object_array_length(items), 2);
    struct json_object *a = json_object_array_get_idx(items, 0);
    assert_string_equal(co_json_meta_name(a), "a");
    assert_string_equal(co_json_str(a, "data", "k", NULL), "v");
    assert_null(json_object_object_get(co_kube__obj(a, "metadata"), "managedFields"));
    json_object_put(all);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static int check_item_type(struct json_object *item, void *payload)
{
    int *n = payload;
    const char *name = co_json_meta_name(item);
    bool own = name && strcmp(name, "b") == 0;
    assert_string_equal(co_json_str(item, "apiVersion", NULL), own ? "x/v9" : "apps/v1");
    assert_string_equal(co_json_str(item, "kind", NULL), own ? "Other" : "Deployment");
    (*n)++;
    return 0;
}

/* The API server leaves apiVersion and kind out of a built-in type's list items: every way of
 * listing gives them the listed type, keeps an item's own, and gives a metadata-only list's
 * items PartialObjectMetadata's. */
static void test_kube_client__listed_items_carry_their_type(void **state)
{
    (void)state;
    co_fake_kube *f = NULL;
    co_kube_client *c =
        list_client(&f, "/apis/apps/v1/namespaces/ns1/deployments",
                    "{\"kind\":\"DeploymentList\",\"metadata\":{\"resourceVersion\":\"7\"},"
                    "\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"apiVersion\":\"x/v9\","
                    "\"kind\":\"Other\",\"metadata\":{\"name\":\"b\"}},"
                    "{\"metadata\":{\"name\":\"c\"},\"kind\":\"\"}]}");
    co_kube_ref ref = {"apps/v1", "Deployment", "ns1", NULL};
    int n = 0;
    assert_co_pass(co_kube_list_each(NULL, c, &ref, NULL, check_item_type, &n));
    assert_int_equal(n, 3);
    /* a single page and the whole collection as one List */
    for (int whole = 0; whole < 2; whole++) {
        struct json_object *list = NULL;
        assert_co_pass(whole ? co_kube_list_all(&list, c, &ref, NULL)
                             : co_kube_list(&list, c, &ref, NULL));
        struct json_object *items = co_json_get(list, "items", NULL);
        assert_int_equal(json_object_array_length(items), 3);
        for (size_t i = 0; i < 3; i++) {
            check_item_type(json_object_array_get_idx(items, i), &n);
        }
        json_object_put(list);
    }
    assert_int_equal(n, 9);
    struct json_object *list = NULL;
    co_kube_list_options meta = {.metadata_only = 1};
    assert_co_pass(co_kube_list(&list, c, &ref, &meta));
    struct json_object *a = json_object_array_get_idx(co_json_get(list, "items", NULL), 0);
    assert_string_equal(co_json_str(a, "apiVersion", NULL), "meta.k8s.io/v1");
    assert_string_equal(co_json_str(a, "kind", NULL), "PartialObjectMetadata");
    json_object_put(list);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_kube_client__list_pages_and_selectors(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/configmaps?labelSelector", 200,
                      "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"10\","
                      "\"continue\":\"tok 1\"},\"items\":[{\"metadata\":{\"name\":\"a\"}},"
                      "{\"metadata\":{\"name\":\"b\"}}]}");
    co_fake_kube_json(f, "GET",
                      "/api/v1/namespaces/ns1/configmaps?labelSelector=app%3Dx%2Ctier%21%3Ddb&"
                      "fieldSelector=metadata.name%21%3Dz&limit=2&continue=tok%201",
                      200,
                      "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"10\"},"
                      "\"items\":[{\"metadata\":{\"name\":\"c\"}}]}");
    co_kube_client *c = co_fake_kube_client(f);
    co_kube_list_options lo = {.label_selector = "app=x,tier!=db",
                               .field_selector = "metadata.name!=z",
                               .limit = 2};
    struct json_object *all = NULL;
    assert_co_pass(co_kube_list_all(&all, c, &(co_kube_ref){"v1", "ConfigMap", "ns1", NULL}, &lo));
    struct json_object *items = NULL;
    assert_true(json_object_object_get_ex(all, "items", &items));
    assert_int_equal(json_object_array_length(items), 3);
    assert_string_equal(co_json_meta_name(json_object_array_get_idx(items, 2)), "c");
    assert_string_equal(co_json_str(all, "metadata", "resourceVersion", NULL), "10");
    assert_string_equal(co_json_str(all, "kind", NULL), "ConfigMapList");
    json_object_put(all);
    all = NULL;
    co_fake_call first = co_fake_kube_call(f, 1);
    assert_string_equal(first.path, "/api/v1/namespaces/ns1/configmaps?labelSelector=app%3Dx%2C"
                                    "tier%21%3Ddb&fieldSelector=metadata.name%21%3Dz&limit=2");
    co_fake_call_dispose(&first);

    /* an expired continue token surfaces as CO_EGONE */
    co_fake_kube_json(f, "GET",
                      "/api/v1/namespaces/ns1/configmaps?labelSelector=app%3Dx%2Ctier%21%3Ddb&"
                      "fieldSelector=metadata.name%21%3Dz&limit=2&continue=tok%201",
                      410,
                      "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":"
                      "\"The provided continue parameter is too old\"}");
    assert_co_fail_with(
        CO_EGONE, co_kube_list_all(&all, c, &(co_kube_ref){"v1", "ConfigMap", "ns1", NULL}, &lo));
    assert_null(all);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_kube_client__write_operations(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_fake_kube_json(f, NULL, "/api/v1/namespaces/ns1/configmaps", 200,
                      "{\"kind\":\"ConfigMap\"}");
    co_kube_client *c = co_fake_kube_client(f);
    struct json_object *obj =
        parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\","
              "\"namespace\":\"ns1\",\"resourceVersion\":\"5\"},\"data\":{\"k\":\"v\"}}");
    co_kube_write_options wo = {.dry_run = 1, .field_manager = "co test"};
    co_fake_call call;

    assert_co_pass(co_kube_create(NULL, c, obj, &wo));
    call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_string_equal(call.method, "POST");
    assert_string_equal(call.path,
                        "/api/v1/namespaces/ns1/configmaps?dryRun=All&fieldManager=co%20test");
    assert_contains(call.body, "\"data\":{\"k\":\"v\"}");
    assert_contains(call.headers, "Content-Type: application/json\n");
    co_fake_call_dispose(&call);

    assert_co_pass(co_kube_update(NULL, c, obj, NULL));
    call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_string_equal(call.method, "PUT");
    assert_string_equal(call.path, "/api/v1/namespaces/ns1/configmaps/x");
    assert_contains(call.body, "\"resourceVersion\":\"5\"");
    co_fake_call_dispose(&call);

    assert_co_pass(co_kube_update_status(NULL, c, obj, NULL));
    call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_string_equal(call.path, "/api/v1/namespaces/ns1/configmaps/x/status");
    co_fake_call_dispose(&call);

    static const struct {
        co_kube_patch_type type;
        const char *patch;
        const char *ct;
    } patches[] = {
        {CO_KUBE_PATCH_JSON, "[{\"op\":\"add\",\"path\":\"/data/a\",\"value\":\"b\"}]",
         "application/json-patch+json"},
        {CO_KUBE_PATCH_MERGE, "{\"data\":{\"a\":null}}", "application/merge-patch+json"},
        {CO_KUBE_PATCH_STRATEGIC, "{\"data\":{\"a\":\"c\"}}",
         "application/strategic-merge-patch+json"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(patches); i++) {
        struct json_object *p = parse(patches[i].patch);
        assert_co_pass(co_kube_patch(NULL, c, &cm_x, patches[i].type, p, NULL));
        call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
        assert_string_equal(call.method, "PATCH");
        assert_string_equal(call.path, "/api/v1/namespaces/ns1/configmaps/x");
        char *want = co_xasprintf("Content-Type: %s\n", patches[i].ct);
        assert_contains(call.headers, want);
        free(want);
        co_fake_call_dispose(&call);
        json_object_put(p);
    }
    /* patch documents of the wrong shape are refused before sending */
    struct json_object *arr = parse("[]");
    assert_co_fail_with(CO_EINVALID, co_kube_patch(NULL, c, &cm_x, CO_KUBE_PATCH_MERGE, arr, NULL));
    json_object_put(arr);

    /* server-side apply needs a field manager; force is passed on */
    assert_co_fail_with(CO_EINVALID, co_kube_apply(NULL, c, obj, NULL));
    assert_contains(co_error_last(), "field manager");
    co_kube_write_options ao = {.field_manager = "mgr", .force = 1};
    assert_co_pass(co_kube_apply(NULL, c, obj, &ao));
    call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_string_equal(call.path,
                        "/api/v1/namespaces/ns1/configmaps/x?fieldManager=mgr&force=true");
    assert_contains(call.headers, "Content-Type: application/apply-patch+yaml\n");
    co_fake_call_dispose(&call);

    co_kube_delete_options dopt = CO_KUBE_DELETE_OPTIONS_INIT;
    dopt.propagation_policy = "Foreground";
    dopt.precondition_uid = "u-1";
    dopt.precondition_rv = "5";
    dopt.dry_run = 1;
    dopt.grace_period_s = 0;
    assert_co_pass(co_kube_delete(NULL, c, &cm_x, &dopt));
    call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_string_equal(call.method, "DELETE");
    struct json_object *body = parse(call.body);
    assert_string_equal(co_json_str(body, "kind", NULL), "DeleteOptions");
    assert_string_equal(co_json_str(body, "propagationPolicy", NULL), "Foreground");
    struct json_object *pre = co_kube__obj(body, "preconditions");
    assert_string_equal(co_json_str(pre, "uid", NULL), "u-1");
    assert_string_equal(co_json_str(pre, "resourceVersion", NULL), "5");
    assert_contains(call.body, "\"dryRun\":[\"All\"]");
    assert_contains(call.body, "\"gracePeriodSeconds\":0");
    json_object_put(body);
    co_fake_call_dispose(&call);

    /* objects without what a path needs */
    struct json_object *bad = parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                                    "{\"name\":\"x\"}}");
    assert_co_fail_with(CO_EINVALID, co_kube_create(NULL, c, bad, NULL));
    assert_contains(co_error_last(), "metadata.namespace");
    json_object_put(bad);
    bad = parse("{\"kind\":\"ConfigMap\"}");
    assert_co_fail_with(CO_EINVALID, co_kube_update(NULL, c, bad, NULL));
    assert_contains(co_error_last(), "apiVersion");
    json_object_put(bad);

    json_object_put(obj);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

/* Countdown fault injection: for every fault kind and every call position N, run a
 * paginated list and check that the operation either succeeds (the fault was absorbed by a
 * retry, or came too late) or fails with exactly the code that fault must produce. */
static void test_kube_client__fault_injection_over_paged_list(void **state)
{
    (void)state;
    static const struct {
        co_fake_fault fault;
        int http;
        int expect; /* for a GET: retried faults end in success */
    } faults[] = {
        {CO_FAKE_REFUSED, 0, 0},       {CO_FAKE_TRUNCATED, 0, 0},
        {CO_FAKE_TIMEOUT, 0, 0},       {CO_FAKE_HTTP, 500, 0},
        {CO_FAKE_HTTP, 429, 0},        {CO_FAKE_HTTP, 409, CO_ECONFLICT},
        {CO_FAKE_HTTP, 410, CO_EGONE}, {CO_FAKE_HTTP, 404, CO_ENOTFOUND},
    };
    for (size_t k = 0; k < CO_ARRAY_SIZE(faults); k++) {
        for (int n = 0;; n++) {
            co_fake_kube *f = co_fake_kube_new();
            co_fake_kube_discovery(f);
            co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/configmaps?limit=1", 200,
                              "{\"metadata\":{\"resourceVersion\":\"3\",\"continue\":\"p2\"},"
                              "\"items\":[{\"metadata\":{\"name\":\"a\"}}]}");
            co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/configmaps?limit=1&continue=p2",
                              200,
                              "{\"metadata\":{\"resourceVersion\":\"3\",\"continue\":\"p3\"},"
                              "\"items\":[{\"metadata\":{\"name\":\"b\"}}]}");
            co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/configmaps?limit=1&continue=p3",
                              200,
                              "{\"metadata\":{\"resourceVersion\":\"3\"},"
                              "\"items\":[{\"metadata\":{\"name\":\"c\"}}]}");
            co_kube_client *c = co_fake_kube_client(f);
            co_fake_kube_fail_after(f, n, 1, faults[k].fault, faults[k].http);
            struct json_object *all = NULL;
            co_kube_list_options lo = {.limit = 1};
            co_error_clear();
            int rc = co_kube_list_all(&all, c, &(co_kube_ref){"v1", "ConfigMap", "ns1", NULL}, &lo);
            int fired = co_fake_kube_nfaults(f);
            if (rc == 0) {
                struct json_object *items = NULL;
                assert_true(json_object_object_get_ex(all, "items", &items));
                assert_int_equal(json_object_array_length(items), 3);
                json_object_put(all);
            } else if (n == 0 && faults[k].http == 404) {
                /* a 404 on the discovery document means the group is not served */
                assert_int_equal(rc, CO_ENOMATCH);
            } else {
                assert_null(all);
                if (rc != faults[k].expect) {
                    fail_msg("fault %zu at call %d: got %s (%s), want %s", k, n + 1,
                             co_error_name(rc), co_error_last(), co_error_name(faults[k].expect));
                }
            }
            if (fired == 0) {
                assert_int_equal(rc, 0);
            } else if (faults[k].expect == 0) {
                assert_int_equal(rc, 0);
            }
            co_kube_client_free(c);
            co_fake_kube_free(f);
            if (fired == 0) {
                assert_true(n >= 4); /* discovery + three pages were all reached */
                break;
            }
        }
    }
}

/* The same over a create: a POST is retried only when it never reached the server. */
static void test_kube_client__fault_injection_over_create(void **state)
{
    (void)state;
    static const struct {
        co_fake_fault fault;
        int http;
        int expect_on_post;
    } faults[] = {
        {CO_FAKE_REFUSED, 0, 0},
        {CO_FAKE_TRUNCATED, 0, CO_EUNAVAILABLE},
        {CO_FAKE_TIMEOUT, 0, CO_ETIMEOUT},
        {CO_FAKE_HTTP, 500, CO_EUNAVAILABLE},
        {CO_FAKE_HTTP, 429, 0},
        {CO_FAKE_HTTP, 409, CO_ECONFLICT},
        {CO_FAKE_HTTP, 410, CO_EGONE},
    };
    struct json_object *obj = parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                                    "{\"name\":\"x\",\"namespace\":\"ns1\"}}");
    for (size_t k = 0; k < CO_ARRAY_SIZE(faults); k++) {
        for (int n = 0;; n++) {
            co_fake_kube *f = co_fake_kube_new();
            co_fake_kube_discovery(f);
            co_fake_kube_json(f, "POST", "/api/v1/namespaces/ns1/configmaps", 201,
                              "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}}");
            co_kube_client *c = co_fake_kube_client(f);
            co_fake_kube_fail_after(f, n, 1, faults[k].fault, faults[k].http);
            struct json_object *out = NULL;
            int rc = co_kube_create(&out, c, obj, NULL);
            int fired = co_fake_kube_nfaults(f);
            /* the fault hit call n + 1: was that the POST? */
            co_fake_call hit = co_fake_kube_call(f, (size_t)n);
            int on_post = fired && hit.method && strcmp(hit.method, "POST") == 0;
            co_fake_call_dispose(&hit);
            if (rc == 0) {
                assert_non_null(out);
                json_object_put(out);
            } else {
                assert_null(out);
            }
            if (!fired) {
                assert_int_equal(rc, 0);
            } else if (on_post) {
                if (rc != faults[k].expect_on_post) {
                    fail_msg("fault %zu on the POST: got %s (%s)", k, co_error_name(rc),
                             co_error_last());
                }
            }
            co_kube_client_free(c);
            co_fake_kube_free(f);
            if (!fired) {
                break;
            }
        }
    }
    json_object_put(obj);
}

static void test_kube_client__request_body_is_capped(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_kube_client *c = co_fake_kube_client(f);
    size_t len = CO_MAX_API_REQUEST + 1;
    char *big = co_xmalloc(len);
    memset(big, 'a', len);
    co_buf out = CO_BUF_INIT(16);
    assert_co_fail_with(CO_ETOOBIG,
                        co_kube_request_raw(&out, c, "POST", "/x", "text/plain", big, len));
    assert_int_equal(co_fake_kube_ncalls(f), 0);
    free(big);
    /* and responses: the caller's cap applies */
    co_fake_kube_json(f, "GET", "/version", 200, "{\"gitVersion\":\"v1.20.2-and-more-text\"}");
    assert_co_fail_with(CO_ETOOBIG, co_kube_request_raw(&out, c, "GET", "/version", NULL, NULL, 0));
    co_buf_dispose(&out);
    co_buf big_out = CO_BUF_INIT(4096);
    assert_co_pass(co_kube_request_raw(&big_out, c, "GET", "/version", NULL, NULL, 0));
    assert_contains(co_buf_cstr(&big_out), "v1.20.2");
    co_buf_dispose(&big_out);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_kube_client__token_bucket(void **state)
{
    (void)state;
    co_kube_bucket b;
    co_kube_bucket_init(&b, 10.0, 3, 1000);
    /* the burst is available at once */
    assert_int_equal(co_kube_bucket_reserve(&b, 1000), 0);
    assert_int_equal(co_kube_bucket_reserve(&b, 1000), 0);
    assert_int_equal(co_kube_bucket_reserve(&b, 1000), 0);
    /* then one token per 100 ms, queued waiters in order */
    assert_int_equal(co_kube_bucket_reserve(&b, 1000), 100);
    assert_int_equal(co_kube_bucket_reserve(&b, 1000), 200);
    /* 250 ms later: 2.5 tokens earned, 2 owed: the next caller waits 50 ms */
    assert_int_equal(co_kube_bucket_reserve(&b, 1250), 50);
    /* a long pause refills to the burst, not beyond */
    assert_int_equal(co_kube_bucket_reserve(&b, 100000), 0);
    assert_int_equal(co_kube_bucket_reserve(&b, 100000), 0);
    assert_int_equal(co_kube_bucket_reserve(&b, 100000), 0);
    assert_true(co_kube_bucket_reserve(&b, 100000) > 0);
    co_kube_bucket_dispose(&b);
    co_kube_bucket_init(&b, -1, 1, 0);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(co_kube_bucket_reserve(&b, 0), 0);
    }
    co_kube_bucket_dispose(&b);
}

static void test_kube_client__backoff_is_bounded_and_jittered(void **state)
{
    (void)state;
    assert_int_equal(co_kube_backoff_ms(0, 200, 10000, 0.0), 100);
    assert_int_equal(co_kube_backoff_ms(0, 200, 10000, 0.999999), 199);
    assert_int_equal(co_kube_backoff_ms(3, 200, 10000, 0.0), 800);
    assert_int_equal(co_kube_backoff_ms(30, 200, 10000, 0.0), 5000);
    assert_true(co_kube_backoff_ms(30, 200, 10000, 0.999999) <= 10000);
    assert_true(co_kube_backoff_ms(1000, 200, 10000, 0.5) <= 10000);
}

typedef struct counted {
    int seen;
    int stop_at; /* return stop_rc at this item (1-based), 0: never */
    int stop_rc;
} counted;

static int count_until(struct json_object *item, void *payload)
{
    (void)item;
    counted *n = payload;
    if (++n->seen == n->stop_at) {
        return n->stop_rc < 0 ? co_error_set(n->stop_rc, "the caller stopped") : n->stop_rc;
    }
    return 0;
}

/* Items reach the callback as the page is parsed: it can stop the listing, its error is
 * returned as it is, and a page that turns out malformed fails the call after the items before
 * the fault; "items" that is not a list is refused. */
static void test_kube_client__list_each_streams_a_page(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/configmaps?limit", 200,
                      "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"10\"},"
                      "\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"}},"
                      "{\"metadata\":{\"name\":\"c\"}}]}");
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns2/configmaps?limit", 200,
                      "{\"kind\":\"ConfigMapList\",\"items\":[{\"metadata\":{\"name\":\"a\"}},"
                      "{\"metadata\":{\"name\":}}]}");
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns3/configmaps?limit", 200,
                      "{\"kind\":\"ConfigMapList\",\"items\":{\"a\":1}}");
    co_kube_client *c = co_fake_kube_client(f);
    co_kube_ref ref = {"v1", "ConfigMap", "ns1", NULL};
    co_kube_list_options lo = {.skip_managed_fields = 1};
    char *rv = NULL;
    counted n = {0, 0, 0};
    assert_co_pass(co_kube_list_each(&rv, c, &ref, &lo, count_until, &n));
    assert_int_equal(n.seen, 3);
    assert_string_equal(rv, "10");
    free(rv);
    n = (counted){0, 2, 1};
    assert_co_pass(co_kube_list_each(NULL, c, &ref, &lo, count_until, &n));
    assert_int_equal(n.seen, 2);
    n = (counted){0, 1, CO_ECANCELED};
    assert_co_fail_with(CO_ECANCELED, co_kube_list_each(NULL, c, &ref, &lo, count_until, &n));
    assert_string_equal(co_error_last(), "the caller stopped");
    assert_int_equal(n.seen, 1);
    ref.namespace = "ns2";
    n = (counted){0, 0, 0};
    assert_co_fail_with(CO_EINVALID, co_kube_list_each(NULL, c, &ref, &lo, count_until, &n));
    assert_contains(co_error_last(), "answer");
    assert_int_equal(n.seen, 1);
    ref.namespace = "ns3";
    n = (counted){0, 0, 0};
    assert_co_fail_with(CO_EINVALID, co_kube_list_each(NULL, c, &ref, &lo, count_until, &n));
    assert_contains(co_error_last(), "items is not a list");
    assert_int_equal(n.seen, 0);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_client__status_maps_to_typed_errors),
        cmocka_unit_test(test_kube_client__non_status_body_is_reported),
        cmocka_unit_test(test_kube_client__get_decodes_object),
        cmocka_unit_test(test_kube_client__retries_what_is_safe),
        cmocka_unit_test(test_kube_client__permanent_5xx_fails_fast),
        cmocka_unit_test(test_kube_client__retry_after_is_honoured),
        cmocka_unit_test(test_kube_client__impersonation_headers),
        cmocka_unit_test(test_kube_client__token_file_reread_after_401),
        cmocka_unit_test(test_kube_client__discovery_caches_and_refetches),
        cmocka_unit_test(test_kube_client__server_version_is_cached),
        cmocka_unit_test(test_kube_client__paths),
        cmocka_unit_test(test_kube_client__list_pages_and_selectors),
        cmocka_unit_test(test_kube_client__list_can_leave_out_managed_fields),
        cmocka_unit_test(test_kube_client__list_each_streams_a_page),
        cmocka_unit_test(test_kube_client__listed_items_carry_their_type),
        cmocka_unit_test(test_kube_client__write_operations),
        cmocka_unit_test(test_kube_client__fault_injection_over_paged_list),
        cmocka_unit_test(test_kube_client__fault_injection_over_create),
        cmocka_unit_test(test_kube_client__request_body_is_capped),
        cmocka_unit_test(test_kube_client__token_bucket),
        cmocka_unit_test(test_kube_client__backoff_is_bounded_and_jittered),
        cmocka_unit_test(test_kube_client__api_resources_listing_is_cached_and_refreshed),
        cmocka_unit_test(test_kube_client__api_listing_is_shared_and_outlives_expiry),
        cmocka_unit_test(test_kube_client__listing_recheck_is_made_by_one_reader),
        cmocka_unit_test(test_kube_client__api_listing_memo_is_made_once_and_freed_with_it),
    };
    return cmocka_run_group_tests_name("kube_client", tests, NULL, NULL);
}
