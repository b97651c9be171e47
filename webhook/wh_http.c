/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Routing and transport rules of the webhook port. Problems with the transport or the envelope
 * (method, media type, size, JSON syntax, apiVersion/kind, missing request or uid) are answered
 * with an HTTP 4xx and a metav1.Status body: the API server then applies failurePolicy, which
 * is what a broken caller deserves. Everything inside a well-formed review is answered with
 * HTTP 200, the decision in the body and the uid echoed, in the envelope version received.
 */
#include "webhook/wh_http.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/jdoc.h"
#include "webhook/wh_memory.h"
#include "webhook/wh_metrics.h"

#define API_GROUP "core.cs.sap.com"

static const wh_route_info routes[WH_ROUTE_COUNT] = {
    [WH_ROUTE_VALIDATE_V1ALPHA1] = {"/validate/v1alpha1/components", WH_KIND_VALIDATE, "v1alpha1",
                                    "Component", CO_MAX_ADMISSION_BODY},
    [WH_ROUTE_VALIDATE_V1BETA1] = {"/validate/v1beta1/components", WH_KIND_VALIDATE, "v1beta1",
                                   "Component", CO_MAX_ADMISSION_BODY},
    [WH_ROUTE_MUTATE_V1ALPHA1] = {"/mutate/v1alpha1/components", WH_KIND_MUTATE, "v1alpha1",
                                  "Component", CO_MAX_ADMISSION_BODY},
    [WH_ROUTE_MUTATE_V1BETA1] = {"/mutate/v1beta1/components", WH_KIND_MUTATE, "v1beta1",
                                 "Component", CO_MAX_ADMISSION_BODY},
    [WH_ROUTE_CONVERT] = {"/convert", WH_KIND_CONVERT, "", "", CO_MAX_CONVERSION_BODY},
    [WH_ROUTE_VALIDATE_POLICY] = {"/validate/v1alpha1/componentpolicies", WH_KIND_VALIDATE,
                                  "v1alpha1", "ComponentPolicy", CO_MAX_ADMISSION_BODY},
    [WH_ROUTE_VALIDATE_BLUEPRINT] = {"/validate/v1alpha1/blueprints", WH_KIND_VALIDATE, "v1alpha1",
                                     "Blueprint", CO_MAX_ADMISSION_BODY},
    [WH_ROUTE_VALIDATE_BLUEPRINT_VERSION] = {"/validate/v1alpha1/blueprintversions",
                                             WH_KIND_VALIDATE, "v1alpha1", "BlueprintVersion",
                                             CO_MAX_ADMISSION_BODY},
};

wh_route wh_route_lookup(const char *path)
{
    if (!path) {
        return WH_ROUTE_NONE;
    }
    for (int r = WH_ROUTE_NONE + 1; r < WH_ROUTE_COUNT; r++) {
        if (!strcmp(path, routes[r].path)) {
            return (wh_route)r;
        }
    }
    return WH_ROUTE_NONE;
}

const wh_route_info *wh_route_get(wh_route route)
{
    CO_ASSERT(route > WH_ROUTE_NONE && route < WH_ROUTE_COUNT);
    return &routes[route];
}

void wh_http_response_dispose(wh_http_response *r)
{
    if (!r) {
        return;
    }
    free(r->body);
    r->body = NULL;
    r->body_len = 0;
}

static const char *reason_for(int status)
{
    switch (status) {
    case 400:
        return "BadRequest";
    case 404:
        return "NotFound";
    case 405:
        return "MethodNotAllowed";
    case 413:
        return "RequestEntityTooLarge";
    case 415:
        return "UnsupportedMediaType";
    case 429:
        return "TooManyRequests";
    default:
        return "InternalError";
    }
}

static void fail(wh_http_response *out, int status, const char *message)
{
    out->status = status;
    out->content_type = "application/json";
    wh_review_status_body(&out->body, &out->body_len, status, reason_for(status), message);
}

size_t wh_http_body_cap(const wh_http_limits *limits, wh_route route)
{
    size_t cap = routes[route].body_cap;
    if (limits) {
        size_t set = routes[route].kind == WH_KIND_CONVERT ? limits->conversion_body
                                                           : limits->admission_body;
        cap = set ? set : cap;
    }
    return cap;
}

void wh_http_too_large(wh_http_response *out, size_t cap)
{
    memset(out, 0, sizeof(*out));
    char *msg = co_xasprintf("request body exceeds the limit of %zu bytes", cap);
    fail(out, 413, msg);
    free(msg);
}

void wh_http_over_budget(wh_http_response *out, int rc)
{
    memset(out, 0, sizeof(*out));
    char *msg = NULL;
    if (rc == CO_ETOOBIG) {
        msg = co_xasprintf("request too large to process: it %s", co_error_last());
        fail(out, 413, msg);
    } else {
        msg = co_xasprintf("the webhook is busy: this request %s; retry later", co_error_last());
        fail(out, 429, msg);
        out->retry_after = 1;
    }
    free(msg);
}

/*
 * Copies of the json-c tree of the reviewed object that a route holds at once, and of the text
 * written for it. Validating a Component with policies: the object, its defaulted copy and the
 * API model parsed from that. Mutating: the object and its defaulted copy (the patch between
 * them holds only defaults). Conversion: every converted object kept until the answer is
 * written, beside the one being converted; then the answer's text, built in a doubling buffer
 * and copied once.
 */
static size_t tree_copies(wh_route route)
{
    switch (routes[route].kind) {
    case WH_KIND_VALIDATE:
        /* policies and blueprints: the object, and a blueprint version's old object */
        return route == WH_ROUTE_VALIDATE_POLICY || route == WH_ROUTE_VALIDATE_BLUEPRINT ? 1
               : route == WH_ROUTE_VALIDATE_BLUEPRINT_VERSION                            ? 2
                                                                                         : 3;
    case WH_KIND_MUTATE:
    case WH_KIND_CONVERT:
    default:
        return 2;
    }
}

static size_t text_copies(wh_route route)
{
    return routes[route].kind == WH_KIND_CONVERT ? 3 : 0;
}

/* Reserves what the route builds from @p root beyond the document. */
static int reserve_handling(const wh_http_request *req, wh_route route, const co_jv *root)
{
    const co_jv *r = co_jv_get(root, "request");
    const co_jv *v = co_jv_get(r, routes[route].kind == WH_KIND_CONVERT ? "objects" : "object");
    size_t need = tree_copies(route) * wh_memory_tree_cost(v) +
                  text_copies(route) * wh_memory_text_cost(v, req->body_len);
    return need ? req->reserve(req->reserve_ctx, need) : 0;
}

/* "application/json", any case, optionally followed by parameters ("; charset=utf-8"). */
static int is_json_media_type(const char *ct)
{
    static const char want[] = "application/json";
    while (*ct == ' ' || *ct == '\t') {
        ct++;
    }
    if (strncasecmp(ct, want, sizeof(want) - 1)) {
        return 0;
    }
    ct += sizeof(want) - 1;
    while (*ct == ' ' || *ct == '\t') {
        ct++;
    }
    return *ct == '\0' || *ct == ';';
}

/* Copies at most 64 printable bytes of @p s for quoting in a message. */
static char *quote_safe(const char *s)
{
    size_t n = strnlen(s, 64);
    char *q = co_xmemdup(s, n);
    for (size_t i = 0; i < n; i++) {
        if (!isprint((unsigned char)q[i]) || q[i] == '"') {
            q[i] = '?';
        }
    }
    return q;
}

/* The object's "kind" must match the route; otherwise the review is for somebody else. */
static int kind_matches(const wh_route_info *ri, const wh_admission_request *req, char **why)
{
    if (!strcmp(req->kind_group, API_GROUP) && !strcmp(req->kind, ri->kindname) &&
        !strcmp(req->kind_version, ri->version)) {
        return 1;
    }
    *why = co_xasprintf("this webhook admits %s/%s %s, not \"%s/%s %s\"", API_GROUP, ri->version,
                        ri->kindname, req->kind_group, req->kind_version, req->kind);
    return 0;
}

static void
admission(wh_http_response *out, const wh_handlers *h, wh_route route, const co_jv *review)
{
    const wh_route_info *ri = &routes[route];
    wh_admission_request req;
    const char *api_version = NULL;
    if (wh_review_admission_request(&req, &api_version, review) < 0) {
        fail(out, 400, co_error_last());
        return;
    }
    wh_decision d;
    wh_decision_init(&d);
    char *why = NULL;
    if (!kind_matches(ri, &req, &why)) {
        wh_decision_deny_text(&d, 400, "BadRequest", why);
        free(why);
    } else {
        co_error_clear();
        if (h->admit(&d, h->ctx, route, &req) < 0) {
            const char *msg = co_error_last();
            wh_decision_dispose(&d);
            wh_decision_deny(&d, 500, "InternalError", "internal error: %s",
                             *msg ? msg : "unknown failure");
            out->internal_error = 1;
        }
    }
    out->status = 200;
    out->content_type = "application/json";
    wh_review_admission_response(&out->body, &out->body_len, api_version, req.uid, &d,
                                 ri->kind == WH_KIND_MUTATE);
    wh_decision_dispose(&d);
}

/* Short identification of object @p i for error messages: "objects[2] (ns/name)". */
static char *object_label(size_t i, const co_jv *obj)
{
    const co_jv *meta = co_jv_get(obj, "metadata");
    const char *ns = co_jv_str(meta, "namespace");
    const char *name = co_jv_str(meta, "name");
    if (name && ns && *ns) {
        return co_xasprintf("objects[%zu] (%s/%s)", i, ns, name);
    }
    if (name) {
        return co_xasprintf("objects[%zu] (%s)", i, name);
    }
    return co_xasprintf("objects[%zu]", i);
}

/* Converts every object; on the first failure sets *failure and returns NULL. */
static struct json_object *convert_all(const wh_handlers *h,
                                       const co_jv *objects,
                                       const char *desired,
                                       char **failure,
                                       int *internal)
{
    size_t n = objects->len;
    struct json_object *converted = json_object_new_array_ext((int)(n ? n : 1));
    size_t i = 0;
    CO_JV_EACH (item, objects) {
        if (item->type != CO_JV_OBJECT) {
            *failure = co_xasprintf("objects[%zu]: Invalid value: must be an object", i);
            break;
        }
        /* the converters work on json-c trees */
        struct json_object *obj = co_jv_to_json(item);
        struct json_object *res = NULL;
        co_error_clear();
        int rc = h->convert(&res, h->ctx, obj, desired);
        json_object_put(obj);
        if (rc < 0) {
            char *label = object_label(i, item);
            const char *msg = co_error_last();
            *failure = co_xasprintf("%s: %s", label, *msg ? msg : "conversion failed");
            free(label);
            *internal = rc != CO_EINVALID;
            break;
        }
        json_object_array_add(converted, res);
        i++;
    }
    if (*failure) {
        json_object_put(converted);
        return NULL;
    }
    return converted;
}

static void conversion(wh_http_response *out, const wh_handlers *h, const co_jv *review)
{
    wh_conversion_request req;
    const char *api_version = NULL;
    if (wh_review_conversion_request(&req, &api_version, review) < 0) {
        fail(out, 400, co_error_last());
        return;
    }
    out->status = 200;
    out->content_type = "application/json";
    const char *failure = NULL;
    if (!req.desired_api_version || !*req.desired_api_version) {
        failure = "request.desiredAPIVersion: Required value";
    } else if (req.objects_invalid) {
        failure = "request.objects: Invalid value: must be an array";
    }
    if (failure) {
        wh_review_conversion_failure(&out->body, &out->body_len, api_version, req.uid, failure);
        return;
    }
    struct json_object *converted = NULL;
    char *why = NULL;
    if (!req.objects) {
        /* No objects: nothing to convert, which is a success with an empty list. */
        converted = json_object_new_array();
    } else {
        converted =
            convert_all(h, req.objects, req.desired_api_version, &why, &out->internal_error);
    }
    if (!converted) {
        wh_review_conversion_failure(&out->body, &out->body_len, api_version, req.uid, why);
        free(why);
        return;
    }
    wh_review_conversion_success(&out->body, &out->body_len, api_version, req.uid, converted);
    json_object_put(converted);
}

int wh_http_precheck(wh_http_response *out, const wh_http_request *req)
{
    memset(out, 0, sizeof(*out));
    wh_route route = wh_route_lookup(req->path);
    if (route == WH_ROUTE_NONE) {
        char *q = quote_safe(req->path ? req->path : "");
        char *msg = co_xasprintf("no webhook is served at \"%s\"", q);
        fail(out, 404, msg);
        free(msg);
        free(q);
        return 1;
    }
    const wh_route_info *ri = &routes[route];
    if (!req->method || strcmp(req->method, "POST")) {
        char *q = quote_safe(req->method ? req->method : "");
        char *msg = co_xasprintf("method %s is not allowed on %s: use POST", q, ri->path);
        fail(out, 405, msg);
        out->allow = "POST";
        free(msg);
        free(q);
        return 1;
    }
    if (!req->content_type || !*req->content_type) {
        fail(out, 415, "Content-Type header is missing: expected application/json");
        return 1;
    }
    if (!is_json_media_type(req->content_type)) {
        char *q = quote_safe(req->content_type);
        char *msg =
            co_xasprintf("Content-Type \"%s\" is not supported: expected application/json", q);
        fail(out, 415, msg);
        free(msg);
        free(q);
        return 1;
    }
    size_t cap = wh_http_body_cap(req->limits, route);
    if (req->body_len > cap) {
        wh_http_too_large(out, cap);
        return 1;
    }
    return 0;
}

void wh_http_handle(wh_http_response *out, const wh_handlers *h, const wh_http_request *req)
{
    if (wh_http_precheck(out, req)) {
        return;
    }
    wh_route route = wh_route_lookup(req->path);
    co_jdoc *review = NULL;
    const char *const *const *skip = h->unread ? h->unread(route) : NULL;
    int rc = 0;
    if (req->reserve) {
        rc = req->reserve(req->reserve_ctx, wh_memory_parse_cost(req->body, req->body_len));
    }
    if (rc < 0) {
        wh_http_over_budget(out, rc);
        return;
    }
    if (wh_review_parse(&review, req->body, req->body_len, skip) < 0) {
        fail(out, 400, co_error_last());
        return;
    }
    if (req->reserve) {
        rc = reserve_handling(req, route, co_jdoc_root(review));
    }
    if (rc < 0) {
        wh_http_over_budget(out, rc);
        co_jdoc_free(review);
        return;
    }
    if (routes[route].kind == WH_KIND_CONVERT) {
        conversion(out, h, co_jdoc_root(review));
    } else {
        admission(out, h, route, co_jdoc_root(review));
    }
    co_jdoc_free(review);
}

static void text(wh_http_response *out, int status, const char *body)
{
    out->status = status;
    out->content_type = "text/plain; charset=utf-8";
    out->body = co_xstrdup(body);
    out->body_len = strlen(body);
}

void wh_http_probe(wh_http_response *out,
                   const char *method,
                   const char *path,
                   const wh_probe_check *checks,
                   size_t nchecks,
                   int metrics)
{
    memset(out, 0, sizeof(*out));
    int known = !strcmp(path, "/healthz") || !strcmp(path, "/readyz") ||
                (metrics && !strcmp(path, "/metrics"));
    if (!known) {
        text(out, 404, "404 page not found\n");
        return;
    }
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        text(out, 405, "method not allowed: use GET\n");
        out->allow = "GET, HEAD";
        return;
    }
    if (!strcmp(path, "/healthz")) {
        text(out, 200, "ok");
        return;
    }
    if (!strcmp(path, "/metrics")) {
        out->status = 200;
        out->content_type = "text/plain; version=0.0.4; charset=utf-8";
        wh_metrics_render(&out->body, &out->body_len);
        return;
    }
    int ready = 1;
    for (size_t i = 0; i < nchecks; i++) {
        ready &= checks[i].failure == NULL;
    }
    if (ready) {
        text(out, 200, "ok");
        return;
    }
    /* The layout of the Kubernetes components' verbose readyz. */
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    int rc = 0;
    for (size_t i = 0; i < nchecks && rc == 0; i++) {
        rc = checks[i].failure
                 ? co_buf_printf(&b, "[-]%s failed: %s\n", checks[i].name, checks[i].failure)
                 : co_buf_printf(&b, "[+]%s ok\n", checks[i].name);
    }
    if (rc == 0) {
        rc = co_buf_puts(&b, "readyz check failed\n");
    }
    CO_ASSERT(rc == 0);
    out->status = 503;
    out->content_type = "text/plain; charset=utf-8";
    out->body = co_buf_take(&b, &out->body_len);
}
