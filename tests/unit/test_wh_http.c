/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The webhook's protocol layer without sockets: transport errors are precise 4xx answers with a
 * metav1.Status body, well-formed reviews are answered with HTTP 200 in the envelope version
 * they came in, with the uid echoed and the decision shaped as the API server checks it.
 * The decisions themselves come from fake handlers here; test_wh_admission covers the real ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include "co/util/digest.h"

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/common.h"
#include "co/util/error.h"
#include "co/json/jdoc.h"
#include "co/json/json.h"
#include "tests/support/test_support.h"
#include "webhook/wh_http.h"
#include "webhook/wh_memory.h"
#include "webhook/wh_metrics.h"

/* --- fake handlers ------------------------------------------------------------------------ */

typedef enum fake_mode {
    FAKE_ALLOW,
    FAKE_DENY,
    FAKE_WARN_AUDIT,
    FAKE_PATCH,
    FAKE_EMPTY_PATCH,
    FAKE_FAIL,
} fake_mode;

static fake_mode mode;
static int admit_calls;
static char seen_uid[128];
static char seen_operation[32];
static int seen_dry_run;

static int fake_admit(wh_decision *d, void *ctx, wh_route route, const wh_admission_request *req)
{
    (void)ctx;
    (void)route;
    admit_calls++;
    snprintf(seen_uid, sizeof(seen_uid), "%s", req->uid);
    snprintf(seen_operation, sizeof(seen_operation), "%s", req->operation);
    seen_dry_run = req->dry_run;
    switch (mode) {
    case FAKE_ALLOW:
        break;
    case FAKE_DENY:
        wh_decision_deny(d, 403, "Forbidden", "spec.updatePolicy: Unsupported value: \"Foo\"");
        wh_decision_cause(d, "FieldValueNotSupported", "spec.updatePolicy",
                          "Unsupported value: \"Foo\"");
        break;
    case FAKE_WARN_AUDIT:
        wh_decision_warn(d, "policy %s: %s", "p1", "requeueInterval below 1m");
        wh_decision_warn(d, "policy %s: %s", "p1", "requeueInterval below 1m");
        wh_decision_audit(d, "policy-violation", "p2: httpRepository is not allowed");
        break;
    case FAKE_PATCH:
    case FAKE_EMPTY_PATCH: {
        struct json_object *ops = json_object_new_array();
        if (mode == FAKE_PATCH) {
            struct json_object *op = json_object_new_object();
            json_object_object_add(op, "op", json_object_new_string("add"));
            json_object_object_add(op, "path", json_object_new_string("/spec/deletePolicy"));
            json_object_object_add(op, "value", json_object_new_string("Delete"));
            json_object_array_add(ops, op);
        }
        wh_decision_set_patch(d, ops);
        break;
    }
    case FAKE_FAIL:
        return co_error_set(CO_ERROR, "cache is gone");
    }
    return 0;
}

static int
fake_convert(struct json_object **out, void *ctx, struct json_object *obj, const char *desired)
{
    (void)ctx;
    struct json_object *n = co_json_get(obj, "metadata", "name", NULL);
    const char *name = json_object_is_type(n, json_type_string) ? json_object_get_string(n) : NULL;
    if (name && !strcmp(name, "bad")) {
        return co_error_set(CO_EINVALID, "spec.sourceRef: Required value");
    }
    struct json_object *copy = NULL;
    json_object_deep_copy(obj, &copy, NULL);
    json_object_object_add(copy, "apiVersion", json_object_new_string(desired));
    *out = copy;
    return 0;
}

static const wh_handlers handlers = {fake_admit, fake_convert, NULL};

/* --- helpers -------------------------------------------------------------------------------- */

typedef struct result {
    wh_http_response r;
    struct json_object *json;
} result;

static void call(result *res,
                 const char *method,
                 const char *path,
                 const char *ct,
                 const char *body,
                 size_t len)
{
    wh_http_request req = {method, path, ct, body, len};
    wh_http_handle(&res->r, &handlers, &req);
    assert_non_null(res->r.body);
    res->json = json_tokener_parse(res->r.body);
    assert_non_null(res->json);
}

static void post(result *res, const char *path, const char *body)
{
    call(res, "POST", path, "application/json", body, strlen(body));
}

static void done(result *res)
{
    json_object_put(res->json);
    wh_http_response_dispose(&res->r);
}

static const char *str_at(struct json_object *o, const char *a, const char *b, const char *c)
{
    struct json_object *cur = o;
    const char *keys[] = {a, b, c};
    for (size_t i = 0; i < 3 && keys[i]; i++) {
        if (!json_object_object_get_ex(cur, keys[i], &cur)) {
            return NULL;
        }
    }
    return json_object_get_string(cur);
}

static struct json_object *at(struct json_object *o, const char *a, const char *b)
{
    struct json_object *cur = NULL;
    if (!json_object_object_get_ex(o, a, &cur)) {
        return NULL;
    }
    if (b && !json_object_object_get_ex(cur, b, &cur)) {
        return NULL;
    }
    return cur;
}

/* An HTTP error must carry a metav1.Status with the same code and the expected message. */
static void assert_status(result *res, int code, const char *reason, const char *message_part)
{
    assert_int_equal(res->r.status, code);
    assert_string_equal(res->r.content_type, "application/json");
    assert_string_equal(str_at(res->json, "kind", NULL, NULL), "Status");
    assert_string_equal(str_at(res->json, "apiVersion", NULL, NULL), "v1");
    assert_string_equal(str_at(res->json, "status", NULL, NULL), "Failure");
    assert_string_equal(str_at(res->json, "reason", NULL, NULL), reason);
    assert_int_equal(json_object_get_int(at(res->json, "code", NULL)), code);
    assert_contains(str_at(res->json, "message", NULL, NULL), message_part);
}

static char *review_with(const char *api_version, const char *kind, const char *request)
{
    return co_xasprintf("{\"apiVersion\":\"%s\",\"kind\":\"%s\"%s%s}", api_version, kind,
                        request ? ",\"request\":" : "", request ? request : "");
}

static const char *good_request =
    "{\"uid\":\"abc-123\",\"operation\":\"CREATE\",\"namespace\":\"ns\",\"name\":\"c\","
    "\"kind\":{\"group\":\"core.cs.sap.com\",\"version\":\"v1alpha1\",\"kind\":\"Component\"},"
    "\"object\":{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\","
    "\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"},\"spec\":{}},\"dryRun\":true}";

static int setup(void **state)
{
    (void)state;
    mode = FAKE_ALLOW;
    admit_calls = 0;
    seen_uid[0] = '\0';
    return 0;
}

/* --- transport ------------------------------------------------------------------------------ */

static void test_wh_http__unknown_path_is_404(void **state)
{
    (void)state;
    result res;
    post(&res, "/validate/v1/pods", "{}");
    assert_status(&res, 404, "NotFound", "no webhook is served at \"/validate/v1/pods\"");
    done(&res);
    post(&res, "/validate/v1alpha1/components/", "{}");
    assert_int_equal(res.r.status, 404);
    done(&res);
    assert_int_equal(admit_calls, 0);
}

static void test_wh_http__wrong_method_is_405_with_allow(void **state)
{
    (void)state;
    const char *methods[] = {"GET", "PUT", "DELETE", "PATCH", "HEAD"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(methods); i++) {
        result res;
        call(&res, methods[i], "/mutate/v1beta1/components", "application/json", "{}", 2);
        assert_status(&res, 405, "MethodNotAllowed", "use POST");
        assert_contains(str_at(res.json, "message", NULL, NULL), methods[i]);
        assert_string_equal(res.r.allow, "POST");
        done(&res);
    }
    assert_int_equal(admit_calls, 0);
}

static void test_wh_http__content_type_is_checked(void **state)
{
    (void)state;
    result res;
    call(&res, "POST", "/validate/v1alpha1/components", NULL, "{}", 2);
    assert_status(&res, 415, "UnsupportedMediaType", "Content-Type header is missing");
    done(&res);
    call(&res, "POST", "/validate/v1alpha1/components", "text/plain", "{}", 2);
    assert_status(&res, 415, "UnsupportedMediaType",
                  "Content-Type \"text/plain\" is not supported: expected application/json");
    done(&res);
    call(&res, "POST", "/convert", "application/jsonx", "{}", 2);
    assert_int_equal(res.r.status, 415);
    done(&res);
    call(&res, "POST", "/convert", "application/yaml", "{}", 2);
    assert_int_equal(res.r.status, 415);
    done(&res);
    /* Parameters and case do not matter. */
    char *body = review_with("admission.k8s.io/v1", "AdmissionReview", good_request);
    const char *fine[] = {"application/json; charset=utf-8", "Application/JSON",
                          " application/json ;charset=UTF-8"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(fine); i++) {
        call(&res, "POST", "/validate/v1alpha1/components", fine[i], body, strlen(body));
        assert_int_equal(res.r.status, 200);
        done(&res);
    }
    free(body);
}

static void test_wh_http__body_over_the_cap_is_413(void **state)
{
    (void)state;
    wh_http_request req = {"POST", "/validate/v1alpha1/components", "application/json", "",
                           CO_MAX_ADMISSION_BODY + 1};
    wh_http_response r;
    assert_int_equal(wh_http_precheck(&r, &req), 1);
    assert_int_equal(r.status, 413);
    assert_contains(r.body, "\"reason\":\"RequestEntityTooLarge\"");
    assert_contains(r.body, "3670016 bytes");
    wh_http_response_dispose(&r);
    /* Conversion has its own, larger cap. */
    req.path = "/convert";
    assert_int_equal(wh_http_precheck(&r, &req), 0);
    assert_null(r.body);
    req.body_len = CO_MAX_CONVERSION_BODY + 1;
    assert_int_equal(wh_http_precheck(&r, &req), 1);
    assert_int_equal(r.status, 413);
    wh_http_response_dispose(&r);
    wh_http_too_large(&r, CO_MAX_CONVERSION_BODY);
    assert_int_equal(r.status, 413);
    assert_contains(r.body, "16777216 bytes");
    wh_http_response_dispose(&r);
}

/* The flags' caps replace the defaults, each for its kind of route. */
static void test_wh_http__body_caps_follow_the_limits(void **state)
{
    (void)state;
    wh_http_limits limits = {1000, 0};
    wh_http_request req = {
        "POST", "/mutate/v1beta1/components", "application/json", "", 1001, &limits, NULL, NULL};
    wh_http_response r;
    assert_int_equal(wh_http_precheck(&r, &req), 1);
    assert_int_equal(r.status, 413);
    assert_contains(r.body, "limit of 1000 bytes");
    wh_http_response_dispose(&r);
    /* a zero keeps the default */
    req.path = "/convert";
    assert_int_equal(wh_http_precheck(&r, &req), 0);
    assert_int_equal(wh_http_body_cap(&limits, WH_ROUTE_CONVERT), CO_MAX_CONVERSION_BODY);
    limits.conversion_body = 10;
    assert_int_equal(wh_http_precheck(&r, &req), 1);
    assert_int_equal(r.status, 413);
    wh_http_response_dispose(&r);
}

/* A reservation hook that records what it is asked and answers @p rc from the n-th call on. */
typedef struct budget_fake {
    int fail_at; /* 1-based call that fails, 0 for none */
    int rc;
    int calls;
    size_t asked[4];
} budget_fake;

static int fake_reserve(void *ctx, size_t bytes)
{
    budget_fake *b = ctx;
    if (b->calls < 4) {
        b->asked[b->calls] = bytes;
    }
    b->calls++;
    if (b->fail_at && b->calls >= b->fail_at) {
        return co_error_set(b->rc, "needs an estimated %zu bytes", bytes);
    }
    return 0;
}

static const char conversion_body[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{"
    "\"uid\":\"c\",\"desiredAPIVersion\":\"core.cs.sap.com/v1beta1\",\"objects\":[{},{},{}]}}";

/*
 * Memory is reserved before it is spent: the document before parsing, then the trees the route
 * builds. A reservation refused for now is a 429 with Retry-After, for ever a 413, and either
 * way the handlers never run.
 */
static void test_wh_http__memory_is_reserved_before_parsing_and_building(void **state)
{
    (void)state;
    budget_fake b = {0, 0, 0, {0}};
    wh_http_request req = {"POST",
                           "/convert",
                           "application/json",
                           conversion_body,
                           strlen(conversion_body),
                           NULL,
                           fake_reserve,
                           &b};
    wh_http_response r;
    wh_http_handle(&r, &handlers, &req);
    assert_int_equal(r.status, 200);
    assert_int_equal(b.calls, 2);
    /* the document: its text three times and 48 bytes a node */
    assert_true(b.asked[0] >= 3 * strlen(conversion_body));
    /* three empty objects as json-c trees, twice: a kilobyte each */
    assert_true(b.asked[1] >= (size_t)2 * 3 * 1024);
    wh_http_response_dispose(&r);

    b = (budget_fake){1, CO_EUNAVAILABLE, 0, {0}};
    wh_http_handle(&r, &handlers, &req);
    assert_int_equal(r.status, 429);
    assert_int_equal(r.retry_after, 1);
    assert_contains(r.body, "\"reason\":\"TooManyRequests\"");
    assert_contains(r.body, "the webhook is busy: this request needs an estimated");
    wh_http_response_dispose(&r);

    b = (budget_fake){2, CO_ETOOBIG, 0, {0}};
    wh_http_handle(&r, &handlers, &req);
    assert_int_equal(r.status, 413);
    assert_int_equal(r.retry_after, 0);
    assert_contains(r.body, "request too large to process: it needs an estimated");
    wh_http_response_dispose(&r);
}

/* The budget refuses what does not fit now (CO_EUNAVAILABLE) apart from what never will. */
static void test_wh_http__budget_takes_and_gives_back(void **state)
{
    (void)state;
    wh_budget b;
    wh_budget_init(&b, 100);
    assert_co_pass(wh_budget_take(&b, 60));
    assert_co_fail_with(CO_EUNAVAILABLE, wh_budget_take(&b, 41));
    assert_co_pass(wh_budget_take(&b, 40));
    assert_int_equal(wh_budget_used(&b), 100);
    assert_co_fail_with(CO_ETOOBIG, wh_budget_take(&b, 101));
    wh_budget_give(&b, 60);
    assert_co_pass(wh_budget_take(&b, 60));
    wh_budget_give(&b, 100);
    assert_int_equal(wh_budget_used(&b), 0);
}

/* The estimates grow with what a body's shape makes the parser and json-c build. */
static void test_wh_http__estimates_follow_the_shape(void **state)
{
    (void)state;
    size_t n = (size_t)256 * 1024;
    char *objs = malloc(n + 2), *text = malloc(n + 2);
    memset(objs, ' ', n + 1);
    objs[0] = text[0] = '[';
    for (size_t i = 1; i + 3 < n; i += 3) {
        objs[i] = '{';
        objs[i + 1] = '}';
        objs[i + 2] = ',';
    }
    objs[n - 1] = '0';
    objs[n] = ']';
    text[1] = '"';
    memset(text + 2, 'a', n - 3);
    text[n - 1] = '"';
    text[n] = ']';
    /* scanned, past the size charged unread: one node per three bytes against one in all */
    size_t dense = wh_memory_parse_cost(objs, n + 1), flat = wh_memory_parse_cost(text, n + 1);
    assert_true(dense > 15 * n);
    assert_true(flat < 4 * n);
    co_jdoc *d = NULL;
    assert_co_pass(co_jdoc_parse(&d, objs, n + 1, n + 1, NULL));
    assert_true(wh_memory_tree_cost(co_jdoc_root(d)) > 300 * n);
    co_jdoc_free(d);
    assert_co_pass(co_jdoc_parse(&d, text, n + 1, n + 1, NULL));
    size_t tree = wh_memory_tree_cost(co_jdoc_root(d));
    assert_true(tree > n && tree < 2 * n);
    co_jdoc_free(d);
    free(objs);
    free(text);
}

static void test_wh_http__malformed_json_is_400(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        const char *message;
    } cases[] = {
        {"", "request body is empty"},
        {"{\"apiVersion\":", "request body is not valid JSON: line 1, column 15: unexpected end of "
                             "input, expected a value"},
        {"{\"a\":1,}", "request body is not valid JSON: line 1, column 8: expected a string key, "
                       "found '}'"},
        {"{'a':1}", "request body is not valid JSON: line 1, column 2: expected a string key"},
        {"{} {}", "request body is not valid JSON: line 1, column 4: unexpected '{' after the "
                  "JSON value"},
        {"[1,2]", "request body must be a JSON object"},
        {"\"text\"", "request body must be a JSON object"},
        {"{\"a\":\"\xff\xfe\"}", "line 1, column 7: invalid UTF-8 in string"},
        {"{\"a\":NaN}", "line 1, column 6: unexpected 'N', expected a value"},
        {"{\"a\":tru}", "line 1, column 6: invalid literal: expected true"},
        {"{\"a\":01}", "line 1, column 6: invalid number: leading zero"},
        {"{\n\"a\":\n[1 2]}", "line 3, column 4: expected ',' or ']' in array"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        result res;
        post(&res, "/validate/v1alpha1/components", cases[i].body);
        assert_status(&res, 400, "BadRequest", cases[i].message);
        done(&res);
    }
    /* Nesting beyond the cap is refused, not recursed into. */
    size_t depth = CO_MAX_NESTING + 10;
    char *deep = co_xmalloc(2 * depth + 1);
    for (size_t i = 0; i < depth; i++) {
        deep[i] = '[';
        deep[2 * depth - 1 - i] = ']';
    }
    deep[2 * depth] = '\0';
    deep[0] = '{';
    deep[2 * depth - 1] = '}';
    result res;
    post(&res, "/convert", deep);
    assert_int_equal(res.r.status, 400);
    done(&res);
    free(deep);
    assert_int_equal(admit_calls, 0);
}

static void test_wh_http__envelope_errors_are_400(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        const char *body;
        const char *message;
    } cases[] = {
        {"/validate/v1alpha1/components", "{\"kind\":\"AdmissionReview\"}",
         "apiVersion: Required value"},
        {"/validate/v1alpha1/components", "{\"apiVersion\":7,\"kind\":\"AdmissionReview\"}",
         "apiVersion: Invalid value: must be a string"},
        {"/validate/v1alpha1/components",
         "{\"apiVersion\":\"admission.k8s.io/v2\",\"kind\":\"AdmissionReview\","
         "\"request\":{\"uid\":\"x\"}}",
         "apiVersion: Unsupported value: \"admission.k8s.io/v2\": supported values: "
         "\"admission.k8s.io/v1\", \"admission.k8s.io/v1beta1\""},
        {"/validate/v1alpha1/components",
         "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"ConversionReview\","
         "\"request\":{\"uid\":\"x\"}}",
         "kind: Unsupported value: \"ConversionReview\": supported values: "
         "\"AdmissionReview\""},
        {"/validate/v1alpha1/components", "{\"apiVersion\":\"admission.k8s.io/v1\"}",
         "kind: Required value"},
        {"/mutate/v1alpha1/components",
         "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
         "request: Required value"},
        {"/mutate/v1alpha1/components",
         "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":null}",
         "request: Required value"},
        {"/mutate/v1alpha1/components",
         "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":[]}",
         "request: Invalid value: must be an object"},
        {"/validate/v1beta1/components",
         "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}",
         "request.uid: Required value"},
        {"/validate/v1beta1/components",
         "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
         "\"request\":{\"uid\":\"\"}}",
         "request.uid: Required value: must not be empty"},
        {"/validate/v1beta1/components",
         "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
         "\"request\":{\"uid\":42}}",
         "request.uid: Invalid value: must be a string"},
        {"/convert",
         "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
         "\"request\":{\"uid\":\"x\"}}",
         "apiVersion: Unsupported value: \"admission.k8s.io/v1\": supported values: "
         "\"apiextensions.k8s.io/v1\", \"apiextensions.k8s.io/v1beta1\""},
        {"/convert",
         "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"AdmissionReview\","
         "\"request\":{\"uid\":\"x\"}}",
         "kind: Unsupported value: \"AdmissionReview\": supported values: "
         "\"ConversionReview\""},
        {"/convert", "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\"}",
         "request: Required value"},
        {"/convert",
         "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
         "\"request\":{\"objects\":[]}}",
         "request.uid: Required value"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        result res;
        post(&res, cases[i].path, cases[i].body);
        assert_status(&res, 400, "BadRequest", cases[i].message);
        done(&res);
    }
    assert_int_equal(admit_calls, 0);
}

/* --- admission ------------------------------------------------------------------------------ */

static void assert_review_envelope(result *res, const char *api_version, const char *uid)
{
    assert_int_equal(res->r.status, 200);
    assert_string_equal(str_at(res->json, "apiVersion", NULL, NULL), api_version);
    assert_string_equal(str_at(res->json, "kind", NULL, NULL), "AdmissionReview");
    assert_string_equal(str_at(res->json, "response", "uid", NULL), uid);
    assert_null(at(res->json, "request", NULL));
}

static void test_wh_http__allowed_review_echoes_uid_and_version(void **state)
{
    (void)state;
    const char *versions[] = {"admission.k8s.io/v1", "admission.k8s.io/v1beta1"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(versions); i++) {
        char *body = review_with(versions[i], "AdmissionReview", good_request);
        result res;
        post(&res, "/validate/v1alpha1/components", body);
        assert_review_envelope(&res, versions[i], "abc-123");
        assert_true(json_object_get_boolean(at(res.json, "response", "allowed")));
        assert_null(at(res.json, "response", "status"));
        assert_null(at(res.json, "response", "patch"));
        assert_null(at(res.json, "response", "patchType"));
        assert_null(at(res.json, "response", "warnings"));
        done(&res);
        free(body);
    }
    assert_string_equal(seen_uid, "abc-123");
    assert_string_equal(seen_operation, "CREATE");
    assert_int_equal(seen_dry_run, 1);
}

static void test_wh_http__fixture_review_reaches_the_handler(void **state)
{
    (void)state;
    size_t len = 0;
    char *body = co_test_fixture("webhook/admission-create-v1alpha1.json", &len);
    result res;
    call(&res, "POST", "/mutate/v1alpha1/components", "application/json", body, len);
    assert_review_envelope(&res, "admission.k8s.io/v1", "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_int_equal(admit_calls, 1);
    assert_int_equal(seen_dry_run, 0);
    done(&res);
    free(body);
}

static void test_wh_http__denial_is_403_forbidden_with_causes(void **state)
{
    (void)state;
    mode = FAKE_DENY;
    char *body = review_with("admission.k8s.io/v1", "AdmissionReview", good_request);
    result res;
    post(&res, "/validate/v1alpha1/components", body);
    assert_review_envelope(&res, "admission.k8s.io/v1", "abc-123");
    assert_false(json_object_get_boolean(at(res.json, "response", "allowed")));
    struct json_object *st = at(res.json, "response", "status");
    assert_non_null(st);
    assert_int_equal(json_object_get_int(at(st, "code", NULL)), 403);
    assert_string_equal(str_at(st, "reason", NULL, NULL), "Forbidden");
    assert_string_equal(str_at(st, "status", NULL, NULL), "Failure");
    assert_string_equal(str_at(st, "message", NULL, NULL),
                        "spec.updatePolicy: Unsupported value: \"Foo\"");
    struct json_object *causes = at(st, "details", "causes");
    assert_int_equal(json_object_array_length(causes), 1);
    assert_string_equal(str_at(json_object_array_get_idx(causes, 0), "field", NULL, NULL),
                        "spec.updatePolicy");
    done(&res);
    free(body);
}

static void test_wh_http__warnings_and_audit_annotations(void **state)
{
    (void)state;
    mode = FAKE_WARN_AUDIT;
    char *body = review_with("admission.k8s.io/v1", "AdmissionReview", good_request);
    result res;
    post(&res, "/validate/v1alpha1/components", body);
    assert_true(json_object_get_boolean(at(res.json, "response", "allowed")));
    struct json_object *w = at(res.json, "response", "warnings");
    assert_int_equal(json_object_array_length(w), 1); /* the duplicate was dropped */
    assert_string_equal(json_object_get_string(json_object_array_get_idx(w, 0)),
                        "policy p1: requeueInterval below 1m");
    assert_string_equal(str_at(res.json, "response", "auditAnnotations", "policy-violation"),
                        "p2: httpRepository is not allowed");
    done(&res);
    free(body);
}

static char *b64decode(const char *in, int *len)
{
    co_buf out = CO_BUF_INIT(CO_MIB);
    assert_co_pass(co_base64_decode(&out, in, strlen(in), CO_BASE64_STD));
    size_t n = 0;
    char *text = co_buf_take(&out, &n);
    *len = (int)n;
    return text;
}

static void test_wh_http__mutating_patch_is_base64_json_patch(void **state)
{
    (void)state;
    mode = FAKE_PATCH;
    char *body = review_with("admission.k8s.io/v1", "AdmissionReview", good_request);
    result res;
    post(&res, "/mutate/v1alpha1/components", body);
    assert_true(json_object_get_boolean(at(res.json, "response", "allowed")));
    assert_string_equal(str_at(res.json, "response", "patchType", NULL), "JSONPatch");
    int len = 0;
    char *patch = b64decode(str_at(res.json, "response", "patch", NULL), &len);
    assert_string_equal(patch, "[{\"op\":\"add\",\"path\":\"/spec/deletePolicy\","
                               "\"value\":\"Delete\"}]");
    free(patch);
    done(&res);
    /* The same decision on a validating route never carries a patch. */
    post(&res, "/validate/v1alpha1/components", body);
    assert_true(json_object_get_boolean(at(res.json, "response", "allowed")));
    assert_null(at(res.json, "response", "patch"));
    assert_null(at(res.json, "response", "patchType"));
    done(&res);
    /* An empty patch is omitted together with its type. */
    mode = FAKE_EMPTY_PATCH;
    post(&res, "/mutate/v1alpha1/components", body);
    assert_null(at(res.json, "response", "patch"));
    assert_null(at(res.json, "response", "patchType"));
    done(&res);
    free(body);
}

static void test_wh_http__handler_failure_is_errored_500_in_a_200(void **state)
{
    (void)state;
    mode = FAKE_FAIL;
    char *body = review_with("admission.k8s.io/v1", "AdmissionReview", good_request);
    result res;
    post(&res, "/validate/v1alpha1/components", body);
    assert_review_envelope(&res, "admission.k8s.io/v1", "abc-123");
    assert_false(json_object_get_boolean(at(res.json, "response", "allowed")));
    struct json_object *st = at(res.json, "response", "status");
    assert_int_equal(json_object_get_int(at(st, "code", NULL)), 500);
    assert_string_equal(str_at(st, "reason", NULL, NULL), "InternalError");
    assert_string_equal(str_at(st, "message", NULL, NULL), "internal error: cache is gone");
    assert_int_equal(res.r.internal_error, 1);
    done(&res);
    free(body);
}

static void test_wh_http__review_for_another_kind_is_denied_400(void **state)
{
    (void)state;
    const char *req =
        "{\"uid\":\"u\",\"operation\":\"CREATE\","
        "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"object\":{}}";
    char *body = review_with("admission.k8s.io/v1", "AdmissionReview", req);
    result res;
    post(&res, "/validate/v1alpha1/components", body);
    assert_review_envelope(&res, "admission.k8s.io/v1", "u");
    assert_false(json_object_get_boolean(at(res.json, "response", "allowed")));
    assert_int_equal(json_object_get_int(at(at(res.json, "response", "status"), "code", NULL)),
                     400);
    assert_contains(str_at(res.json, "response", "status", "message"),
                    "this webhook admits core.cs.sap.com/v1alpha1 Component, not \"/v1 Pod\"");
    done(&res);
    /* The v1alpha1 Component does not belong on the v1beta1 route either. */
    free(body);
    body = review_with("admission.k8s.io/v1", "AdmissionReview", good_request);
    post(&res, "/validate/v1beta1/components", body);
    assert_false(json_object_get_boolean(at(res.json, "response", "allowed")));
    done(&res);
    post(&res, "/validate/v1alpha1/componentpolicies", body);
    assert_false(json_object_get_boolean(at(res.json, "response", "allowed")));
    done(&res);
    free(body);
    assert_int_equal(admit_calls, 0);
}

/* --- conversion ----------------------------------------------------------------------------- */

static void test_wh_http__conversion_keeps_order_and_count(void **state)
{
    (void)state;
    size_t len = 0;
    char *body = co_test_fixture("webhook/conversion-v1alpha1-to-v1beta1.json", &len);
    result res;
    call(&res, "POST", "/convert", "application/json", body, len);
    assert_int_equal(res.r.status, 200);
    assert_string_equal(str_at(res.json, "apiVersion", NULL, NULL), "apiextensions.k8s.io/v1");
    assert_string_equal(str_at(res.json, "kind", NULL, NULL), "ConversionReview");
    assert_string_equal(str_at(res.json, "response", "uid", NULL), "0000-conv-1111");
    assert_string_equal(str_at(res.json, "response", "result", "status"), "Success");
    struct json_object *objs = at(res.json, "response", "convertedObjects");
    assert_int_equal(json_object_array_length(objs), 3);
    const char *names[] = {"first", "second", "third"};
    for (size_t i = 0; i < 3; i++) {
        struct json_object *o = json_object_array_get_idx(objs, i);
        assert_string_equal(str_at(o, "apiVersion", NULL, NULL), "core.cs.sap.com/v1beta1");
        assert_string_equal(str_at(o, "metadata", "name", NULL), names[i]);
    }
    done(&res);
    free(body);
}

static void test_wh_http__conversion_failure_is_reported_in_result(void **state)
{
    (void)state;
    static const struct {
        const char *request;
        const char *message;
    } cases[] = {
        {"{\"uid\":\"c1\",\"desiredAPIVersion\":\"core.cs.sap.com/v1beta1\",\"objects\":["
         "{\"metadata\":{\"name\":\"ok\"}},{\"metadata\":{\"name\":\"bad\",\"namespace\":\"n\"}}]}",
         "objects[1] (n/bad): spec.sourceRef: Required value"},
        {"{\"uid\":\"c1\",\"objects\":[]}", "request.desiredAPIVersion: Required value"},
        {"{\"uid\":\"c1\",\"desiredAPIVersion\":\"x/v1\",\"objects\":{}}",
         "request.objects: Invalid value: must be an array"},
        {"{\"uid\":\"c1\",\"desiredAPIVersion\":\"x/v1\",\"objects\":[1]}",
         "objects[0]: Invalid value: must be an object"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        char *body =
            review_with("apiextensions.k8s.io/v1beta1", "ConversionReview", cases[i].request);
        result res;
        post(&res, "/convert", body);
        assert_int_equal(res.r.status, 200);
        assert_string_equal(str_at(res.json, "apiVersion", NULL, NULL),
                            "apiextensions.k8s.io/v1beta1");
        assert_string_equal(str_at(res.json, "response", "uid", NULL), "c1");
        assert_string_equal(str_at(res.json, "response", "result", "status"), "Failure");
        assert_string_equal(str_at(res.json, "response", "result", "message"), cases[i].message);
        done(&res);
        free(body);
    }
}

static void test_wh_http__conversion_without_objects_succeeds_empty(void **state)
{
    (void)state;
    char *body = review_with("apiextensions.k8s.io/v1", "ConversionReview",
                             "{\"uid\":\"c2\",\"desiredAPIVersion\":\"core.cs.sap.com/v1\"}");
    result res;
    post(&res, "/convert", body);
    assert_string_equal(str_at(res.json, "response", "result", "status"), "Success");
    assert_int_equal(json_object_array_length(at(res.json, "response", "convertedObjects")), 0);
    done(&res);
    free(body);
}

/* --- probes --------------------------------------------------------------------------------- */

static void test_wh_http__probes(void **state)
{
    (void)state;
    wh_probe_check checks[] = {{"tls", NULL}, {"caches", "components not synced"}};
    wh_http_response r;
    wh_http_probe(&r, "GET", "/healthz", checks, 2, 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "ok");
    wh_http_response_dispose(&r);
    wh_http_probe(&r, "GET", "/readyz", checks, 2, 0);
    assert_int_equal(r.status, 503);
    assert_string_equal(r.body, "[+]tls ok\n[-]caches failed: components not synced\n"
                                "readyz check failed\n");
    wh_http_response_dispose(&r);
    wh_http_probe(&r, "GET", "/readyz", checks, 1, 0);
    assert_int_equal(r.status, 200);
    wh_http_response_dispose(&r);
    wh_http_probe(&r, "GET", "/metrics", checks, 1, 0);
    assert_int_equal(r.status, 404);
    wh_http_response_dispose(&r);
    wh_http_probe(&r, "POST", "/healthz", checks, 1, 0);
    assert_int_equal(r.status, 405);
    assert_string_equal(r.allow, "GET, HEAD");
    wh_http_response_dispose(&r);
}

static void test_wh_http__metrics_text(void **state)
{
    (void)state;
    wh_metrics_reset();
    wh_metrics_request_started(WH_ROUTE_VALIDATE_V1ALPHA1);
    wh_metrics_request_answered(WH_ROUTE_VALIDATE_V1ALPHA1, 200, 0.0003);
    wh_metrics_request_answered(WH_ROUTE_VALIDATE_V1ALPHA1, 400, 0.2);
    wh_metrics_internal_error(WH_ROUTE_CONVERT);
    wh_http_response r;
    wh_http_probe(&r, "GET", "/metrics", NULL, 0, 1);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
    assert_contains(r.body,
                    "controller_runtime_webhook_requests_total{webhook=\"/validate/v1alpha1/"
                    "components\",code=\"200\"} 1\n");
    assert_contains(r.body,
                    "controller_runtime_webhook_requests_total{webhook=\"/validate/v1alpha1/"
                    "components\",code=\"400\"} 1\n");
    assert_contains(r.body, "controller_runtime_webhook_latency_seconds_bucket{webhook=\"/"
                            "validate/v1alpha1/components\",le=\"0.00025\"} 0\n");
    assert_contains(r.body, "controller_runtime_webhook_latency_seconds_bucket{webhook=\"/"
                            "validate/v1alpha1/components\",le=\"0.0005\"} 1\n");
    assert_contains(r.body, "controller_runtime_webhook_latency_seconds_bucket{webhook=\"/"
                            "validate/v1alpha1/components\",le=\"0.25\"} 2\n");
    assert_contains(r.body, "controller_runtime_webhook_latency_seconds_count{webhook=\"/"
                            "validate/v1alpha1/components\"} 2\n");
    assert_contains(r.body, "controller_runtime_webhook_requests_in_flight{webhook=\"/"
                            "validate/v1alpha1/components\"} 1\n");
    assert_contains(r.body, "controller_runtime_conversion_webhook_panics_total 1\n");
    assert_contains(r.body, "controller_runtime_webhook_panics_total 0\n");
    /* the process collector's metrics, with a counter where the name ends in _total */
    assert_contains(r.body, "process_resident_memory_bytes ");
    assert_contains(r.body, "# TYPE process_cpu_seconds_total counter\n");
    assert_contains(r.body, "process_max_fds ");
    wh_http_response_dispose(&r);
    wh_metrics_request_finished(WH_ROUTE_VALIDATE_V1ALPHA1);
}

/* --- the admission response, byte for byte ---------------------------------------------------- */

/* The response as json-c renders it from a tree: how it was built before it was written
 * directly, kept here as the oracle. */
static char *
json_c_response(const char *api_version, const char *uid, const wh_decision *d, int mutating)
{
    struct json_object *resp = json_object_new_object();
    json_object_object_add(resp, "uid", json_object_new_string(uid));
    json_object_object_add(resp, "allowed", json_object_new_boolean(d->allowed));
    if (!d->allowed) {
        struct json_object *st = json_object_new_object();
        json_object_object_add(st, "metadata", json_object_new_object());
        json_object_object_add(st, "status", json_object_new_string("Failure"));
        json_object_object_add(st, "message", json_object_new_string(d->message ? d->message : ""));
        const char *reason = d->reason ? d->reason : "Forbidden";
        if (*reason) {
            json_object_object_add(st, "reason", json_object_new_string(reason));
        }
        if (d->causes) {
            struct json_object *details = json_object_new_object();
            json_object_object_add(details, "causes", json_object_get(d->causes));
            json_object_object_add(st, "details", details);
        }
        json_object_object_add(st, "code", json_object_new_int(d->code >= 400 ? d->code : 403));
        json_object_object_add(resp, "status", st);
    }
    if (mutating && d->allowed && d->patch && json_object_array_length(d->patch) > 0) {
        size_t plen = 0;
        const char *ptext = json_object_to_json_string_length(
            d->patch, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &plen);
        char *b64 = co_base64_encode(ptext, plen, CO_BASE64_STD);
        json_object_object_add(resp, "patchType", json_object_new_string("JSONPatch"));
        json_object_object_add(resp, "patch", json_object_new_string(b64));
        free(b64);
    }
    if (d->audit && json_object_object_length(d->audit) > 0) {
        json_object_object_add(resp, "auditAnnotations", json_object_get(d->audit));
    }
    if (d->warnings && json_object_array_length(d->warnings) > 0) {
        json_object_object_add(resp, "warnings", json_object_get(d->warnings));
    }
    struct json_object *review = json_object_new_object();
    json_object_object_add(review, "apiVersion", json_object_new_string(api_version));
    json_object_object_add(review, "kind", json_object_new_string("AdmissionReview"));
    json_object_object_add(review, "response", resp);
    char *text = co_xstrdup(json_object_to_json_string_ext(
        review, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(review);
    return text;
}

static void assert_rendered_as_json_c(const char *uid, const wh_decision *d)
{
    static const char *const versions[] = {"admission.k8s.io/v1", "admission.k8s.io/v1beta1"};
    for (size_t v = 0; v < CO_ARRAY_SIZE(versions); v++) {
        for (int mutating = 0; mutating <= 1; mutating++) {
            char *want = json_c_response(versions[v], uid, d, mutating);
            char *got = NULL;
            size_t len = 0;
            wh_review_admission_response(&got, &len, versions[v], uid, d, mutating);
            assert_int_equal(len, strlen(got));
            assert_string_equal(got, want);
            free(got);
            free(want);
        }
    }
}

static void test_wh_http__admission_response_bytes_are_those_of_json_c(void **state)
{
    (void)state;
    /* Every byte that json-c escapes, and some it does not ('/', DEL, UTF-8, a stray 0xff). */
    char every[128 + 3];
    for (int c = 1; c < 128; c++) {
        every[c - 1] = (char)c;
    }
    memcpy(every + 127, "\xc3\xa9\xff", 3);
    every[130] = '\0';
    wh_decision d;
    wh_decision_init(&d);
    assert_rendered_as_json_c("u-1", &d);
    assert_rendered_as_json_c(every, &d);
    /* each escaped byte at every offset of a string longer than two blocks of sixteen, among
     * bytes >= 0x80, which are written as they are */
    static const char escaped[] = {'"', '\\', '\n', '\x01', '\x1f'};
    for (size_t e = 0; e < sizeof(escaped); e++) {
        for (size_t at = 0; at < 40; at++) {
            char text[41];
            for (size_t i = 0; i < 40; i++) {
                text[i] = i % 3 ? 'a' : (char)0xc3;
                text[i] = i % 3 == 1 ? (char)0xa9 : text[i];
            }
            text[at] = escaped[e];
            text[40] = '\0';
            assert_rendered_as_json_c(text, &d);
        }
    }

    wh_decision_warn_text(&d, every);
    wh_decision_warn(&d, "policy %s: %s", "p/1", "requeueInterval below \"1m\"");
    wh_decision_audit(&d, "policy.intervals", "a\tb");
    wh_decision_audit(&d, "policy.sourceKinds", every);
    wh_decision_audit(&d, "policy.intervals", "replaced in place");
    assert_rendered_as_json_c("u-2", &d);

    struct json_object *ops = NULL;
    const char *patch = "[{\"op\":\"add\",\"path\":\"/spec/retryInterval\",\"value\":\"1m\"},"
                        "{\"op\":\"add\",\"path\":\"/spec/n\",\"value\":-2.5e-7},"
                        "{\"op\":\"add\",\"path\":\"/spec/m\",\"value\":[1,true,null,{}]}]";
    assert_co_pass(co_json_parse(&ops, patch, strlen(patch)));
    wh_decision_set_patch(&d, ops);
    assert_rendered_as_json_c("u-3", &d);

    static const int codes[] = {0, 200, 400, 403, 500, 599, -1};
    for (size_t i = 0; i < CO_ARRAY_SIZE(codes); i++) {
        wh_decision_dispose(&d);
        wh_decision_deny_text(&d, codes[i], i % 2 ? "" : "Invalid", every);
        assert_rendered_as_json_c("u-4", &d);
        wh_decision_cause(&d, "FieldValueInvalid", "spec.a/b", every);
        wh_decision_cause(&d, "FieldValueRequired", "", "no field");
        wh_decision_deny(&d, 403, "Forbidden", "second %d", 2);
        wh_decision_warn_text(&d, "still warned");
        assert_rendered_as_json_c("u-5", &d);
    }
    wh_decision_dispose(&d);
    d.allowed = 0; /* denied without reason or message */
    assert_rendered_as_json_c("u-6", &d);
    wh_decision_dispose(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_wh_http__unknown_path_is_404, setup),
        cmocka_unit_test_setup(test_wh_http__wrong_method_is_405_with_allow, setup),
        cmocka_unit_test_setup(test_wh_http__content_type_is_checked, setup),
        cmocka_unit_test_setup(test_wh_http__body_over_the_cap_is_413, setup),
        cmocka_unit_test_setup(test_wh_http__malformed_json_is_400, setup),
        cmocka_unit_test_setup(test_wh_http__envelope_errors_are_400, setup),
        cmocka_unit_test_setup(test_wh_http__allowed_review_echoes_uid_and_version, setup),
        cmocka_unit_test_setup(test_wh_http__fixture_review_reaches_the_handler, setup),
        cmocka_unit_test_setup(test_wh_http__denial_is_403_forbidden_with_causes, setup),
        cmocka_unit_test_setup(test_wh_http__warnings_and_audit_annotations, setup),
        cmocka_unit_test_setup(test_wh_http__mutating_patch_is_base64_json_patch, setup),
        cmocka_unit_test_setup(test_wh_http__handler_failure_is_errored_500_in_a_200, setup),
        cmocka_unit_test_setup(test_wh_http__review_for_another_kind_is_denied_400, setup),
        cmocka_unit_test_setup(test_wh_http__conversion_keeps_order_and_count, setup),
        cmocka_unit_test_setup(test_wh_http__conversion_failure_is_reported_in_result, setup),
        cmocka_unit_test_setup(test_wh_http__conversion_without_objects_succeeds_empty, setup),
        cmocka_unit_test_setup(test_wh_http__probes, setup),
        cmocka_unit_test_setup(test_wh_http__metrics_text, setup),
        cmocka_unit_test(test_wh_http__admission_response_bytes_are_those_of_json_c),
        cmocka_unit_test(test_wh_http__body_caps_follow_the_limits),
        cmocka_unit_test(test_wh_http__memory_is_reserved_before_parsing_and_building),
        cmocka_unit_test(test_wh_http__budget_takes_and_gives_back),
        cmocka_unit_test(test_wh_http__estimates_follow_the_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
